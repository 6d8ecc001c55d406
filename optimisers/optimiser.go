package optimisers

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flatkit/flatkit/layout"
)

// State is everything an optimiser remembers between updates: the flat state
// vectors and the counters. It is a value: State() hands out a copy, Step
// returns a new one, and nothing changes a State a caller holds.
//
// Slots[k] is laid out like θ (so lay.View(s.Slots[k], path) is the k-th
// state vector of a leaf). Where several rules share the buffer (one per
// path), slot k of a range belongs to the rule that range is assigned to;
// ranges that no rule trains (frozen leaves) stay zero.
type State struct {
	Step    int         // updates that changed θ: not skipped, not held back by a gate
	Skipped int         // updates that SkipNonFinite rejected
	Slots   [][]float32 // state vectors, each of the layout's Len

	counts []int // per rule of the plan: the updates it has taken part in
	plan   *plan
}

// Layout returns the layout the state was set up for.
func (s State) Layout() *layout.Layout {
	if s.plan == nil {
		return nil
	}
	return s.plan.lay
}

// Rule returns the rule the state was set up with.
func (s State) Rule() Rule {
	if s.plan == nil {
		return nil
	}
	return s.plan.rule
}

// Average writes the parameters averaged by an EMA rule into dst over the
// ranges that rule covers. dst should hold a copy of θ: ranges the average
// does not cover (frozen leaves, rules without EMA) keep their values, and so
// does everything before the first update, when the average is θ itself. It
// is an error if no rule is an EMA or dst has the wrong length.
func (s State) Average(dst []float32) error {
	if s.plan == nil {
		return errors.New("optimisers: Average: the zero State (use Setup)")
	}
	if len(dst) != s.plan.lay.Len() {
		return fmt.Errorf("optimisers: Average: dst has %d floats, want %d (the layout's Len)", len(dst), s.plan.lay.Len())
	}
	found := false
	for gi := range s.plan.groups {
		gr := &s.plan.groups[gi]
		for i, pr := range gr.prims {
			if _, ok := pr.rule.(EMARule); !ok {
				continue
			}
			found = true
			if s.counts[gr.count0+i] > 0 {
				for _, r := range gr.ranges {
					copy(dst[r.lo:r.hi], s.Slots[pr.slot0][r.lo:r.hi])
				}
			}
			break
		}
	}
	if !found {
		return errors.New("optimisers: Average: no rule is an EMA")
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
	scratch []float32   // the update dx, where a chain needs one
	vbuf    [][]float32 // a rule's state views for one range
}

// span is a trained range θ[lo:hi]: one leaf.
type span struct{ lo, hi int }

// prim is one rule of a flattened chain, with what the optimiser needs to
// know about it.
type prim struct {
	rule   Rule
	slot0  int // its first state vector
	slots  int
	fused  Fused
	global Global
	gate   Gate
	obs    Observer
}

// group is one rule (often a chain) and the ranges it trains.
type group struct {
	prims  []prim
	pipe   []int // prims that change the update, in order (not observers)
	obs    []int // observers
	gates  []int // gates
	ranges []span
	count0 int  // where its prims' counts start in State.counts
	skip   bool // holds SkipNonFinite: check g before anything
}

// plan is what Setup works out once: which rule trains which range, and
// where each rule's state lives. It never changes; a State points to one.
type plan struct {
	lay    *layout.Layout
	rule   Rule
	groups []group
	slots  int // state vectors: the most any group needs
	counts int // rules over all groups
	dx     int // scratch floats: 0, the longest range, or all of θ
	views  int // the most slots of any one rule
}

// Setup validates rule and returns an optimiser for parameters laid out by
// lay. Every leaf that is not frozen is trained with rule, and each leaf is a
// range of its own (so ClipNorm is per leaf); frozen leaves are skipped and
// their state stays zero. State vectors start at zero and each rule
// initialises its ranges just before its first update.
//
// Invalid hyperparameters (negative, NaN, a β outside [0, 1), …) are an error
// naming the rule, the field and its value.
func Setup(rule Rule, lay *layout.Layout) (*Optimiser, error) {
	if lay == nil {
		return nil, errors.New("optimisers: Setup: nil layout")
	}
	if err := validate(rule); err != nil {
		return nil, err
	}
	var ranges []span
	for _, lf := range lay.Leaves() {
		if !lf.Frozen {
			ranges = append(ranges, span{lf.Offset, lf.End()})
		}
	}
	p := newPlan(lay, rule, []assignment{{rule, ranges}})
	st := State{
		Slots:  make([][]float32, p.slots),
		counts: make([]int, p.counts),
		plan:   p,
	}
	for k := range st.Slots {
		st.Slots[k] = make([]float32, lay.Len())
	}
	return newOptimiser(st), nil
}

// assignment is one rule and the ranges it trains. Setup makes one for the
// whole layout; a per-path rule makes one per rule, over disjoint ranges,
// and newPlan lays out their state side by side in the same slots.
type assignment struct {
	rule   Rule
	ranges []span
}

// newPlan lays out the state of rules assigned to disjoint sets of ranges.
// The rules must be valid.
func newPlan(lay *layout.Layout, root Rule, as []assignment) *plan {
	p := &plan{lay: lay, rule: root}
	for _, a := range as {
		gr := group{ranges: a.ranges, count0: p.counts}
		slot := 0
		for i, r := range flatten(nil, a.rule) {
			pr := prim{rule: r, slot0: slot, slots: r.Slots()}
			slot += pr.slots
			p.views = max(p.views, pr.slots)
			pr.fused, _ = r.(Fused)
			pr.global, _ = r.(Global)
			pr.gate, _ = r.(Gate)
			pr.obs, _ = r.(Observer)
			if pr.obs != nil {
				gr.obs = append(gr.obs, i)
			} else {
				gr.pipe = append(gr.pipe, i)
			}
			if pr.gate != nil {
				gr.gates = append(gr.gates, i)
			}
			if _, ok := r.(SkipNonFiniteRule); ok {
				gr.skip = true
			}
			gr.prims = append(gr.prims, pr)
		}
		p.slots = max(p.slots, slot)
		p.counts += len(gr.prims)
		// Does the chain need the update in a scratch vector, and must it
		// persist across a global rule's reduction?
		needDX, whole := false, false
		for j, i := range gr.pipe {
			if j > 0 && gr.prims[i].global != nil {
				whole = true
			}
			if j < len(gr.pipe)-1 || gr.prims[i].fused == nil {
				needDX = true
			}
		}
		longest := 0
		for _, r := range gr.ranges {
			longest = max(longest, r.hi-r.lo)
		}
		switch {
		case whole:
			p.dx = max(p.dx, lay.Len())
		case needDX:
			p.dx = max(p.dx, longest)
		}
		p.groups = append(p.groups, gr)
	}
	return p
}

func newOptimiser(st State) *Optimiser {
	return &Optimiser{
		st:      st,
		scratch: make([]float32, st.plan.dx),
		vbuf:    make([][]float32, st.plan.views),
	}
}

// Resume returns an optimiser that continues from s, as the optimiser s was
// taken from would have. It copies s.
func Resume(s State) (*Optimiser, error) {
	if err := s.check("Resume"); err != nil {
		return nil, err
	}
	return newOptimiser(s.clone()), nil
}

// check reports a State that was not made by this package or was tampered
// with.
func (s State) check(op string) error {
	if s.plan == nil {
		return fmt.Errorf("optimisers: %s: the zero State (make one with Setup)", op)
	}
	if len(s.Slots) != s.plan.slots {
		return fmt.Errorf("optimisers: %s: the state has %d slots, want %d", op, len(s.Slots), s.plan.slots)
	}
	for k, v := range s.Slots {
		if len(v) != s.plan.lay.Len() {
			return fmt.Errorf("optimisers: %s: slot %d has %d floats, want %d (the layout's Len)", op, k, len(v), s.plan.lay.Len())
		}
	}
	return nil
}

// State returns a copy of the optimiser's state: a value the caller can keep,
// pass to Step or Resume, or save.
func (o *Optimiser) State() State { return o.st.clone() }

// Steps returns the number of updates that changed θ (State().Step, without
// the copy).
func (o *Optimiser) Steps() int { return o.st.Step }

// Skipped returns the number of updates SkipNonFinite rejected.
func (o *Optimiser) Skipped() int { return o.st.Skipped }

// Layout returns the layout the optimiser was set up for.
func (o *Optimiser) Layout() *layout.Layout { return o.st.plan.lay }

// Rule returns the rule the optimiser was set up with.
func (o *Optimiser) Rule() Rule { return o.st.plan.rule }

// Average is State.Average on the optimiser's own state, without the copy.
func (o *Optimiser) Average(dst []float32) error { return o.st.Average(dst) }

// Update takes one step: it updates θ in place from the gradient g, which it
// does not modify. Both must have the layout's length. It allocates nothing.
func (o *Optimiser) Update(θ, g []float32) error {
	if err := o.st.plan.lengths("Update", θ, g); err != nil {
		return err
	}
	o.update(θ, g)
	return nil
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
	o := newOptimiser(s.clone())
	θ2 := slices.Clone(θ)
	o.update(θ2, g)
	return θ2, o.st, nil
}

func (p *plan) lengths(op string, θ, g []float32) error {
	n := p.lay.Len()
	if len(θ) != n {
		return fmt.Errorf("optimisers: %s: θ has %d floats, want %d (the layout's Len)", op, len(θ), n)
	}
	if len(g) != n {
		return fmt.Errorf("optimisers: %s: the gradient has %d floats, want %d (the layout's Len)", op, len(g), n)
	}
	return nil
}

func (o *Optimiser) update(θ, g []float32) {
	p := o.st.plan
	for gi := range p.groups {
		gr := &p.groups[gi]
		if gr.skip && !finite(g, gr.ranges) {
			o.st.Skipped++
			return
		}
	}
	held := false
	for gi := range p.groups {
		if !o.run(&p.groups[gi], θ, g) {
			held = true
		}
	}
	if !held {
		o.st.Step++
	}
}

// finite reports whether g holds no NaN or Inf in the ranges.
func finite(g []float32, ranges []span) bool {
	for _, r := range ranges {
		for _, x := range g[r.lo:r.hi] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return false
			}
		}
	}
	return true
}

// views returns the state vectors of pr over r, in a buffer the next call
// reuses.
func (o *Optimiser) views(pr *prim, r span) [][]float32 {
	v := o.vbuf[:pr.slots]
	for k := range v {
		v[k] = o.st.Slots[pr.slot0+k][r.lo:r.hi]
	}
	return v
}

// run applies one group's chain to its ranges and reports whether it reached
// the end of the chain (θ changed) rather than being held back by a gate.
//
// The chain runs in stages split at global rules. A stage is one loop over
// the ranges that applies each of its rules to the range's dx in turn, so a
// leaf stays in cache while the whole chain works on it; a global rule at the
// start of a stage first reduces over every range. The last stage also moves
// θ: through the last rule's Fuse if it has one, else by θ -= dx; observers
// then see the new θ of the range.
func (o *Optimiser) run(gr *group, θ, g []float32) bool {
	prims := gr.prims
	counts := o.st.counts[gr.count0 : gr.count0+len(prims)]
	end := len(prims)
	for _, i := range gr.gates {
		if !prims[i].gate.Pass(counts[i] + 1) {
			end = i + 1
			break
		}
	}
	full := end == len(prims)

	// Rules meeting their first update initialise their state from θ.
	for i := range end {
		if counts[i] == 0 && (prims[i].obs == nil || full) {
			pr := &prims[i]
			for _, r := range gr.ranges {
				pr.rule.Init(o.views(pr, r), θ[r.lo:r.hi])
			}
		}
	}

	pipe := gr.pipe
	for len(pipe) > 0 && pipe[len(pipe)-1] >= end {
		pipe = pipe[:len(pipe)-1]
	}
	term := -1
	if full && len(pipe) > 0 && prims[pipe[len(pipe)-1]].fused != nil {
		term = pipe[len(pipe)-1]
		pipe = pipe[:len(pipe)-1]
	}

	whole := len(o.scratch) == len(θ) && len(θ) > 0
	src, mat := g, false // where the update lives; whether in scratch
	for s := 0; ; {
		e := s
		var total float64
		if e < len(pipe) && prims[pipe[e]].global != nil {
			gl := prims[pipe[e]].global
			for _, r := range gr.ranges {
				total = gl.Reduce(total, θ[r.lo:r.hi], src[r.lo:r.hi])
			}
			e++
		}
		for e < len(pipe) && prims[pipe[e]].global == nil {
			e++
		}
		last := e == len(pipe)
		for _, r := range gr.ranges {
			θr := θ[r.lo:r.hi]
			var dx []float32
			if s == e {
				dx = src[r.lo:r.hi] // nothing to apply: the update is g
			} else {
				if whole {
					dx = o.scratch[r.lo:r.hi]
				} else {
					dx = o.scratch[:r.hi-r.lo]
				}
				if !mat {
					copy(dx, g[r.lo:r.hi])
				}
				for j := s; j < e; j++ {
					i := pipe[j]
					pr := &prims[i]
					if j == s && pr.global != nil {
						pr.global.ApplyGlobal(o.views(pr, r), θr, dx, counts[i]+1, total)
					} else {
						pr.rule.Apply(o.views(pr, r), θr, dx, counts[i]+1)
					}
				}
			}
			if !last || !full {
				continue
			}
			if term >= 0 {
				pr := &prims[term]
				pr.fused.Fuse(o.views(pr, r), θr, dx, counts[term]+1)
			} else {
				subtract(θr, dx)
			}
			for _, i := range gr.obs {
				pr := &prims[i]
				pr.obs.Observe(o.views(pr, r), θr, counts[i]+1)
			}
		}
		if s < e {
			src, mat = o.scratch, true
		}
		if last {
			break
		}
		s = e
	}

	for i := range end {
		if prims[i].obs == nil || full {
			counts[i]++
		}
	}
	return full
}

// subtract sets θ -= dx.
func subtract(θ, dx []float32) {
	dx = dx[:len(θ)]
	for i := range θ {
		θ[i] -= dx[i]
	}
}
