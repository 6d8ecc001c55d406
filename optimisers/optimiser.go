package optimisers

import (
	"reflect"
	"slices"
	"strings"

	"github.com/flatkit/flatkit/layout"
)

// State is everything an optimiser remembers between updates: the flat state
// vectors and the counters. It is a value: State() hands out a copy, Step
// returns a new one, and nothing changes a State a caller holds.
//
// Slots[k] is laid out like θ, so lay.View(s.Slots[k], path) is the k-th
// state vector of a leaf. Where several rules share the buffer, one per
// path, slot k of a range belongs to the rule that range is assigned to.
// Ranges that no rule has trained stay zero. Besides Step and Skipped a
// State keeps, unexported, each leaf's count of updates per rule, which
// leaves are frozen, and the hyperparameters Adjust has set.
type State struct {
	Step    int         // updates that changed θ: not skipped, not held back by a gate
	Skipped int         // updates that SkipNonFinite rejected
	Slots   [][]float32 // state vectors, each of the layout's Len

	counts []int // per leaf per rule of its chain: the updates it has taken part in
	plan   *plan
}

// Layout returns the layout the state was set up for.
func (s State) Layout() *layout.Layout {
	if s.plan == nil {
		return nil
	}
	return s.plan.lay
}

// Rule returns the rule the state was set up with (as given to Setup; Adjust
// does not change it).
func (s State) Rule() Rule {
	if s.plan == nil {
		return nil
	}
	return s.plan.rule
}

// Average writes the parameters averaged by an EMA rule into dst over the
// leaves that rule has updated. dst should hold a copy of θ: ranges the
// average does not cover (leaves never trained, rules without EMA) keep their
// values, and so does everything before the first update, when the average
// is θ itself. It is an error if no rule is an EMA or dst has the wrong
// length.
func (s State) Average(dst []float32) error {
	if s.plan == nil {
		return errorf("Average: the zero State (use Setup)")
	}
	if len(dst) != s.plan.lay.Len() {
		return errorf("Average: dst has %d floats, want %d (the layout's Len)", len(dst), s.plan.lay.Len())
	}
	found := false
	for gi := range s.plan.groups {
		gr := &s.plan.groups[gi]
		for i, pr := range gr.prims {
			if !pr.ema {
				continue
			}
			found = true
			for _, m := range gr.members {
				if s.counts[m.c0+i] > 0 {
					copy(dst[m.lo:m.hi], s.Slots[pr.slot0][m.lo:m.hi])
				}
			}
			break
		}
	}
	if !found {
		return errorf("Average: no rule is an EMA")
	}
	return nil
}

// clone returns a deep copy of s.
func (s State) clone() State {
	c := s
	c.counts = slices.Clone(s.counts)
	c.Slots = make([][]float32, len(s.Slots))
	for k, v := range s.Slots {
		c.Slots[k] = slices.Clone(v)
	}
	return c
}

// Optimiser updates parameters in place with a rule whose state it owns.
// In steady state Update allocates nothing. An Optimiser is not safe for
// concurrent use; its States are plain values and are.
type Optimiser struct {
	st      State
	rt      []groupRT
	workers int
	whole   []float32          // the update of every range, for groups with a global rule after the first
	free    chan *chunkScratch // one per concurrent chunk
	vinit   [][]float32        // state views for Init, on the calling goroutine
	stage   stageArgs          // the stage being run, read by the chunk calls
	chunkFn func(lo, hi int)   // o.chunks, made once
	leafFn  func(lo, hi int)   // o.leafChunks, made once
}

// Setup validates rule and returns an optimiser for parameters laid out by
// lay. Every leaf that is not frozen is trained with rule; under a ByPath
// rule, with the rule its path matches. Each leaf is a range of its own, so
// ClipNorm is per leaf. Frozen leaves are skipped until Thaw, and their
// state stays zero until then. State vectors start at zero, and each rule
// initialises a leaf's state just before its first update of that leaf.
//
// An invalid hyperparameter is an error naming the rule, the field and its
// value: a negative or NaN value, or a β outside [0, 1).
func Setup(rule Rule, lay *layout.Layout) (*Optimiser, error) {
	p, err := setupPlan("Setup", rule, lay)
	if err != nil {
		return nil, err
	}
	return newOptimiser(freshState(p), 1), nil
}

// setupPlan validates rule and lays out its plan over lay.
func setupPlan(op string, rule Rule, lay *layout.Layout) (*plan, error) {
	if lay == nil {
		return nil, errorf("%s: nil layout", op)
	}
	if err := validate(rule); err != nil {
		return nil, err
	}
	var as []assignment
	if bp, ok := rule.(ByPathRule); ok {
		var err error
		if as, err = bp.assign(lay); err != nil {
			return nil, err
		}
	} else {
		all := make([]int, lay.NumLeaves())
		for i := range all {
			all[i] = i
		}
		as = []assignment{{rule: rule, leaves: all}}
	}
	return newPlan(lay, rule, as)
}

func freshState(p *plan) State {
	st := State{Slots: make([][]float32, p.slots), counts: make([]int, p.counts), plan: p}
	for k := range st.Slots {
		st.Slots[k] = make([]float32, p.lay.Len())
	}
	return st
}

func newOptimiser(st State, workers int) *Optimiser {
	o := &Optimiser{st: st, workers: max(workers, 1)}
	o.chunkFn = o.chunks
	o.leafFn = o.leafChunks
	o.build()
	return o
}

// build makes the optimiser's working data for its plan.
func (o *Optimiser) build() {
	p := o.st.plan
	o.rt = make([]groupRT, len(p.groups))
	for gi := range p.groups {
		gr := &p.groups[gi]
		rt := &o.rt[gi]
		rt.eff = gr.variants
		if gr.scheduled() {
			rt.eff = make([][]impl, len(gr.variants))
			for v, row := range gr.variants {
				rt.eff[v] = slices.Clone(row)
				for i, pr := range gr.prims {
					if len(pr.sched) == 0 {
						continue
					}
					// A live copy behind a pointer: setting its fields before
					// each update allocates nothing, and the pointer's method
					// set is the rule's.
					ptr := reflect.New(reflect.TypeOf(row[i].rule))
					ptr.Elem().Set(reflect.ValueOf(row[i].rule))
					rt.eff[v][i] = implOf(ptr.Interface().(Rule))
					var names []string
					for _, e := range pr.sched {
						for _, f := range hyperFields(ptr.Elem().Type(), e.name) {
							rt.live = append(rt.live, liveField{ptr.Elem().Field(f), e.s})
						}
						names = append(names, e.name)
					}
					rt.checks = append(rt.checks, liveRule{v, i, strings.Join(names, ", ")})
				}
			}
		}
		rt.cum = []int{0}
		for _, m := range gr.members {
			if m.on {
				rt.rr = append(rt.rr, rangeRun{lo: m.lo, hi: m.hi, c0: m.c0, variant: m.variant})
				rt.cum = append(rt.cum, rt.cum[len(rt.cum)-1]+m.hi-m.lo)
			}
		}
	}
	o.whole = nil
	if p.whole {
		o.whole = make([]float32, p.lay.Len())
	}
	o.free = make(chan *chunkScratch, o.workers)
	for range o.workers {
		o.free <- &chunkScratch{dx: make([]float32, p.dx), views: make([][]float32, p.views)}
	}
	o.vinit = make([][]float32, p.views)
}

// Resume returns an optimiser that continues from s, as the optimiser s was
// taken from would have. It copies s.
func Resume(s State) (*Optimiser, error) {
	if err := s.check("Resume"); err != nil {
		return nil, err
	}
	return newOptimiser(s.clone(), 1), nil
}

// check reports a State that was not made by this package or was tampered
// with.
func (s State) check(op string) error {
	if s.plan == nil {
		return errorf("%s: the zero State (make one with Setup)", op)
	}
	if len(s.Slots) != s.plan.slots {
		return errorf("%s: the state has %d slots, want %d", op, len(s.Slots), s.plan.slots)
	}
	for k, v := range s.Slots {
		if len(v) != s.plan.lay.Len() {
			return errorf("%s: slot %d has %d floats, want %d (the layout's Len)", op, k, len(v), s.plan.lay.Len())
		}
	}
	if len(s.counts) != s.plan.counts {
		return errorf("%s: the state has %d counts, want %d", op, len(s.counts), s.plan.counts)
	}
	return nil
}

// State returns a copy of the optimiser's state: a value the caller can keep,
// pass to Step or Resume, or save.
func (o *Optimiser) State() State { return o.st.clone() }

// Steps returns the number of updates that changed θ. It is State().Step
// without the copy.
func (o *Optimiser) Steps() int { return o.st.Step }

// Skipped returns the number of updates SkipNonFinite rejected.
func (o *Optimiser) Skipped() int { return o.st.Skipped }

// Layout returns the layout the optimiser was set up for.
func (o *Optimiser) Layout() *layout.Layout { return o.st.plan.lay }

// Rule returns the rule the optimiser was set up with, as given to Setup.
// Adjust does not change it.
func (o *Optimiser) Rule() Rule { return o.st.plan.rule }

// Average is State.Average on the optimiser's own state, without the copy.
func (o *Optimiser) Average(dst []float32) error { return o.st.Average(dst) }

// SetWorkers sets how many goroutines one Update may use and returns the
// previous setting. n is at least 1, and the default is 1. Each rule's pass
// over a group of leaves is split into chunks of at least 32 768 floats,
// run through flat.ParallelFor. A chain with a Leafwise rule such as
// ClipNorm is split into whole leaves instead. flat.ParallelFor's thread
// limit also applies; see flat.SetMaxThreads. Every rule treats elements
// independently, and global reductions such as ClipGlobalNorm's norm run on
// one goroutine in buffer order. So θ and the state are bit for bit the
// same for any setting.
func (o *Optimiser) SetWorkers(n int) int {
	old := o.workers
	n = max(n, 1)
	if n != old {
		o.workers = n
		o.build()
	}
	return old
}

// Workers returns the SetWorkers setting.
func (o *Optimiser) Workers() int { return o.workers }

// Update takes one step: it updates θ in place from the gradient g, which it
// does not modify. Both must have the layout's length. It allocates nothing.
// The only errors are mismatched lengths and a schedule that gives an invalid
// value (negative or NaN, say) for the step; either leaves θ and the state as
// they were.
func (o *Optimiser) Update(θ, g []float32) error {
	if err := o.st.plan.lengths("Update", θ, g); err != nil {
		return err
	}
	return o.update(θ, g)
}

// Step is the functional form of Update: it returns the parameters and the
// state after one step from s, and leaves s, θ and g untouched. It runs the
// same code as Update, so Step and Update agree bit for bit.
func Step(s State, θ, g []float32) ([]float32, State, error) {
	if err := s.check("Step"); err != nil {
		return nil, State{}, err
	}
	if err := s.plan.lengths("Step", θ, g); err != nil {
		return nil, State{}, err
	}
	o := newOptimiser(s.clone(), 1)
	θ2 := slices.Clone(θ)
	if err := o.update(θ2, g); err != nil {
		return nil, State{}, err
	}
	return θ2, o.st, nil
}
