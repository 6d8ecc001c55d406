package optimisers

import (
	"reflect"
	"slices"

	"github.com/flatkit/flatkit/layout"
)

// This file: the plan, what Setup works out once and Freeze, Thaw and Adjust
// replace: which rule trains which leaf, where each rule's state lives, and
// the hyperparameter variants that Adjust made. A plan never changes once
// built; a State points to one.

// impl is a rule with its optional interfaces looked up once.
type impl struct {
	rule   Rule
	fused  Fused
	global Global
	gate   Gate
	obs    Observer
	val    Validator
}

func implOf(r Rule) impl {
	m := impl{rule: r}
	m.fused, _ = r.(Fused)
	m.global, _ = r.(Global)
	m.gate, _ = r.(Gate)
	m.obs, _ = r.(Observer)
	m.val, _ = r.(Validator)
	return m
}

// schedEntry is one Scheduled wrapper around a rule: the hyperparameter it
// drives and its schedule.
type schedEntry struct {
	name string
	s    Schedule
}

// prim is one rule of a flattened chain: what the optimiser needs to know
// about its kind, which the hyperparameter variants of the rule share.
type prim struct {
	slot0, slots int // its state vectors
	fused        bool
	global       bool
	gate         bool
	obs          bool
	ema          bool
	sched        []schedEntry // schedules driving its hyperparameters, outer first
}

// member is one leaf assigned to a group. It holds a range of θ, its
// hyperparameter variant and whether it is trained now, that is not frozen.
// Its update counts, one per prim, are State.counts[c0:c0+len(prims)].
type member struct {
	lo, hi  int
	leaf    int // index into the layout's leaves
	c0      int
	variant int
	on      bool
}

// group is one rule (a plain rule or chain, or one PathRule's) and the leaves
// assigned to it.
type group struct {
	rule    Rule   // as given: Setup's rule, or the PathRule's
	pattern string // the PathRule's pattern; "" under Setup
	prims   []prim
	pipe    []int // prims that change the update, in order, without term
	obs     []int // observers
	gates   []int // gates
	term    int   // the fused rule that ends the chain and moves θ, or -1
	skip    bool  // holds SkipNonFinite: check g before anything
	lwise   bool  // holds a Leafwise rule: whole leaves per call
	needDX  bool  // the update needs a scratch vector
	whole   bool  // ... that persists across a global rule's reduction
	members []member
	// variants[v][i] is prim i's rule in hyperparameter variant v. Setup
	// makes variant 0 from the chain as given; Adjust adds variants.
	variants [][]impl
}

// plan is the fixed part of an optimiser's state.
type plan struct {
	lay    *layout.Layout
	rule   Rule
	groups []group
	slots  int  // state vectors: the most any group needs
	counts int  // len(State.counts)
	views  int  // the most slots of any one rule
	dx     int  // floats of the per-chunk update scratch
	whole  bool // some group keeps its update in a scratch as long as θ
}

// assignment is one rule and the leaves it trains. Setup makes one for the
// whole layout, ByPath one per PathRule; newPlan lays out their state side
// by side in the same slots.
type assignment struct {
	rule    Rule
	pattern string
	leaves  []int // leaf indices, in buffer order
}

// flatRule is a rule of a flattened chain and the schedules on it.
type flatRule struct {
	rule  Rule
	sched []schedEntry
}

// flattenRule expands chains (and chains in chains) and Scheduled wrappers
// into the rules they run, in order, each with the schedules that drive one
// of its hyperparameters.
func flattenRule(dst []flatRule, r Rule, sched []schedEntry) ([]flatRule, error) {
	switch r := r.(type) {
	case ChainRule:
		var err error
		for _, sub := range r.Rules {
			if dst, err = flattenRule(dst, sub, sched); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case ScheduledRule:
		inner := append(slices.Clip(sched), schedEntry{r.Name, r.Schedule})
		return flattenRule(dst, r.Rule, inner)
	case ByPathRule:
		return nil, errorf("ByPath must be the rule given to Setup, not inside a Chain or Scheduled")
	}
	var own []schedEntry
	for _, e := range sched {
		if _, ok := hyper(r, e.name); ok {
			own = append(own, e)
		}
	}
	return append(dst, flatRule{r, own}), nil
}

// newPlan builds the plan of valid rules assigned to disjoint sets of leaves.
// Leaves the layout marks frozen are assigned but not trained.
func newPlan(lay *layout.Layout, root Rule, as []assignment) (*plan, error) {
	p := &plan{lay: lay, rule: root}
	for _, a := range as {
		rules, err := flattenRule(nil, a.rule, nil)
		if err != nil {
			return nil, err
		}
		gr := group{rule: a.rule, pattern: a.pattern, term: -1}
		row := make([]impl, len(rules))
		slot := 0
		var pipe []int
		for i, fr := range rules {
			m := implOf(fr.rule)
			row[i] = m
			pr := prim{slot0: slot, slots: fr.rule.Slots(), fused: m.fused != nil, global: m.global != nil,
				gate: m.gate != nil, obs: m.obs != nil, sched: fr.sched}
			_, pr.ema = fr.rule.(EMARule)
			slot += pr.slots
			p.views = max(p.views, pr.slots)
			if pr.obs {
				gr.obs = append(gr.obs, i)
			} else {
				pipe = append(pipe, i)
			}
			if pr.gate {
				gr.gates = append(gr.gates, i)
			}
			if _, ok := fr.rule.(SkipNonFiniteRule); ok {
				gr.skip = true
			}
			if _, ok := fr.rule.(Leafwise); ok {
				gr.lwise = true
			}
			gr.prims = append(gr.prims, pr)
		}
		if n := len(pipe); n > 0 && gr.prims[pipe[n-1]].fused {
			gr.term = pipe[n-1]
			pipe = pipe[:n-1]
		}
		gr.pipe = pipe
		gr.needDX = len(pipe) > 0
		for j, i := range pipe {
			if j > 0 && gr.prims[i].global {
				gr.whole = true
			}
		}
		gr.variants = [][]impl{row}
		p.slots = max(p.slots, slot)
		for _, li := range a.leaves {
			lf := lay.Leaf(li)
			gr.members = append(gr.members, member{lo: lf.Offset, hi: lf.End(), leaf: li, c0: p.counts, on: !lf.Frozen})
			p.counts += len(gr.prims)
		}
		p.groups = append(p.groups, gr)
	}
	p.size()
	return p, nil
}

// size works out the scratch the trained members need.
func (p *plan) size() {
	p.dx, p.whole = 0, false
	for gi := range p.groups {
		gr := &p.groups[gi]
		for _, m := range gr.members {
			switch {
			case !m.on:
			case gr.whole:
				p.whole = true
			case gr.needDX:
				p.dx = max(p.dx, m.hi-m.lo)
			}
		}
	}
}

// clone returns a copy of p whose members and variants can be changed.
func (p *plan) clone() *plan {
	c := *p
	c.groups = slices.Clone(p.groups)
	for gi := range c.groups {
		c.groups[gi].members = slices.Clone(p.groups[gi].members)
		c.groups[gi].variants = slices.Clone(p.groups[gi].variants)
	}
	return &c
}

// scheduled reports whether any rule of the group follows a schedule.
func (gr *group) scheduled() bool {
	for _, pr := range gr.prims {
		if len(pr.sched) > 0 {
			return true
		}
	}
	return false
}

// hyperFields returns the indices of r's exported float64 fields tagged
// hyper:"name" (r a struct).
func hyperFields(t reflect.Type, name string) []int {
	var idx []int
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if hn, ok := hyperName(f); ok && hn == name {
			idx = append(idx, i)
		}
	}
	return idx
}

// variantHyperNames appends the hyperparameter names of the rules that
// train member m (its variant's rules) to dst.
func (gr *group) variantHyperNames(dst []string, m member) []string {
	for _, r := range gr.variants[m.variant] {
		dst = hyperNames(dst, r.rule)
	}
	return dst
}

// sortedUnique sorts names and drops repeats, for a message listing them.
func sortedUnique(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// hyperNames appends the hyperparameter names of r (chains and wrappers
// included) to dst.
func hyperNames(dst []string, r Rule) []string {
	switch c := r.(type) {
	case ChainRule:
		for _, sub := range c.Rules {
			dst = hyperNames(dst, sub)
		}
		return dst
	case ScheduledRule:
		return hyperNames(dst, c.Rule)
	case ByPathRule:
		for _, pr := range c.rules {
			dst = hyperNames(dst, pr.Rule)
		}
		return dst
	}
	for n := range namedHypers(r) {
		dst = append(dst, n)
	}
	return dst
}
