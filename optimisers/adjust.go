package optimisers

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// This file: Adjust, which changes a hyperparameter of a running optimiser.

// Hyper is a hyperparameter setting for Adjust: a name and its new value.
// The name is the one a rule's field is tagged with, such as `hyper:"lr"`;
// the tags use PyTorch's names.
type Hyper struct {
	Name  string
	Value float64
}

// Set returns the setting of the hyperparameter name to v, for any name a
// rule carries: "lr", "beta1", "beta2", "eps", "weight_decay", "momentum",
// "dampening", "alpha", "rho", "max_norm", "clip_value", "ema_decay", ….
// It is the one way to name a hyperparameter for Adjust.
func Set(name string, v float64) Hyper { return Hyper{name, v} }

// Adjust sets a hyperparameter of the running optimiser without touching
// its state. With no paths it changes every rule that has the name: every
// rule of a chain, and of every PathRule. Given paths, it changes only the
// rules training the leaves under them, which then get their own copy of
// the rule. Each path names a leaf, a tied path or a group. The moments,
// counts and step counter carry on, and the next update uses the new
// value:
//
//	opt.Adjust(optimisers.Set("lr", 1e-4))            // everywhere
//	opt.Adjust(optimisers.Set("lr", 1e-5), "encoder") // only the encoder's leaves
//	opt.Adjust(optimisers.Set("weight_decay", 0), "0.bias", "1.bias")
//
// An error leaves the optimiser as it was. These are errors:
//   - a name no rule has; the error lists the names there are;
//   - a negative or NaN value;
//   - a value the rule rejects; the error names the rule and the field;
//   - an unknown path, or no rule under the paths having the name;
//   - a hyperparameter that a Scheduled wrapper drives;
//   - a change that would add or remove state, such as RMSProp's Momentum
//     between zero and non-zero, which adds a buffer. Set the rule up that
//     way instead.
func (o *Optimiser) Adjust(h Hyper, under ...string) error {
	p, err := o.st.plan.adjusted(h, under)
	if err != nil {
		return err
	}
	o.st.plan = p
	o.build()
	return nil
}

// Adjust is Optimiser.Adjust on a copy of s.
func (s State) Adjust(h Hyper, under ...string) (State, error) {
	return s.replan("Adjust", func(p *plan) (*plan, error) { return p.adjusted(h, under) })
}

// Hyper returns the value of the hyperparameter name as the next update
// will use it. It looks in the rules training the leaf at path, a leaf or
// tied path, and takes the first rule in chain order that has the name.
// The value reflects Adjust; for a scheduled hyperparameter it is the
// schedule's value at that update.
func (o *Optimiser) Hyper(path, name string) (float64, error) { return o.st.Hyper(path, name) }

// Hyper is Optimiser.Hyper on s.
func (s State) Hyper(path, name string) (float64, error) {
	if err := s.check("Hyper"); err != nil {
		return 0, err
	}
	lf, ok := s.plan.lay.Find(path)
	if !ok {
		if _, _, err := s.plan.lay.Range(path); err != nil {
			return 0, errorf("Hyper: %w", err)
		}
		return 0, errorf("Hyper: %q is a group; name a leaf", path)
	}
	for gi := range s.plan.groups {
		gr := &s.plan.groups[gi]
		for _, m := range gr.members {
			if m.lo != lf.Offset || m.hi != lf.End() {
				continue
			}
			for i, r := range gr.variants[m.variant] {
				// Schedules apply outer first, so the last entry wins.
				for k := len(gr.prims[i].sched) - 1; k >= 0; k-- {
					if e := gr.prims[i].sched[k]; e.name == name {
						return e.s.At(s.Step + 1), nil
					}
				}
				if v, ok := hyper(r.rule, name); ok {
					return v, nil
				}
			}
			return 0, errorf("Hyper: no rule training %q has a hyperparameter %q%s", path, name, wantOneOf(gr.variantHyperNames(nil, m)))
		}
	}
	return 0, errorf("Hyper: leaf %q has no rule, want a leaf that a rule trains", path)
}

// adjusted returns the plan with h set in the rules of the members under the
// paths (all members if there are none).
func (p *plan) adjusted(h Hyper, under []string) (*plan, error) {
	var known []string
	for gi := range p.groups {
		for _, row := range p.groups[gi].variants {
			for _, m := range row {
				known = hyperNames(known, m.rule)
			}
		}
	}
	known = sortedUnique(known)
	if !slices.Contains(known, h.Name) {
		return nil, errorf("Adjust: no rule has a hyperparameter %q (the rules have: %s)", h.Name, strings.Join(known, ", "))
	}
	if math.IsNaN(h.Value) || h.Value < 0 {
		return nil, errorf("Adjust: %s = %v, want a value ≥ 0", h.Name, h.Value)
	}
	type span struct{ lo, hi int }
	var spans []span
	for _, path := range under {
		lo, hi, err := p.lay.Range(path)
		if err != nil {
			return nil, errorf("Adjust: %w", err)
		}
		spans = append(spans, span{lo, hi})
	}
	selected := func(m member) bool {
		if len(spans) == 0 {
			return true
		}
		for _, s := range spans {
			if m.lo >= s.lo && m.hi <= s.hi {
				return true
			}
		}
		return false
	}

	c := p.clone()
	changed := 0
	for gi := range c.groups {
		gr := &c.groups[gi]
		remap := map[int]int{}
		for mi := range gr.members {
			m := &gr.members[mi]
			if !selected(*m) {
				continue
			}
			nv, ok := remap[m.variant]
			if !ok {
				row, n, err := adjustRow(gr, gr.variants[m.variant], h)
				if err != nil {
					return nil, err
				}
				nv = m.variant
				if n > 0 {
					gr.variants = append(gr.variants, row)
					nv = len(gr.variants) - 1
				}
				remap[m.variant] = nv
				changed += n
			}
			m.variant = nv
		}
		gr.compact()
	}
	if changed == 0 {
		var names []string
		for gi := range p.groups {
			for _, m := range p.groups[gi].members {
				if selected(m) {
					names = p.groups[gi].variantHyperNames(names, m)
				}
			}
		}
		return nil, errorf("Adjust: no rule training the leaves under %s has a hyperparameter %q%s", quoteList(under), h.Name, wantOneOf(names))
	}
	return c, nil
}

// adjustRow returns the rules of a variant with h set, and how many fields
// it set.
func adjustRow(gr *group, row []impl, h Hyper) ([]impl, int, error) {
	out := slices.Clone(row)
	total := 0
	for i, m := range row {
		r, n := withHyper(m.rule, h.Name, h.Value)
		if n == 0 {
			continue
		}
		for _, e := range gr.prims[i].sched {
			if e.name == h.Name {
				return nil, 0, errorf("Adjust: %s of %T follows a schedule (Scheduled); change the schedule instead", h.Name, m.rule)
			}
		}
		if err := validate(r); err != nil {
			return nil, 0, errorf("Adjust: %w", err)
		}
		if r.Slots() != gr.prims[i].slots {
			return nil, 0, errorf("Adjust: %s = %v would change %T's state from %d slots to %d; Adjust cannot add or remove state (set the rule up with a value of that kind)",
				h.Name, h.Value, m.rule, gr.prims[i].slots, r.Slots())
		}
		out[i] = implOf(r)
		total += n
	}
	return out, total, nil
}

// compact drops the variants no member uses and renumbers the rest.
func (gr *group) compact() {
	used := make([]int, len(gr.variants))
	for i := range used {
		used[i] = -1
	}
	for _, m := range gr.members {
		used[m.variant] = 0
	}
	if len(gr.members) == 0 {
		used[0] = 0 // keep the rule as set up
	}
	var vs [][]impl
	for v := range gr.variants {
		if used[v] == 0 {
			used[v] = len(vs)
			vs = append(vs, gr.variants[v])
		}
	}
	for mi := range gr.members {
		gr.members[mi].variant = used[gr.members[mi].variant]
	}
	gr.variants = vs
}

// wantOneOf is ", want one of: " and the sorted distinct names, or a note
// that there are none: what a hyperparameter's name should have been.
func wantOneOf(names []string) string {
	names = sortedUnique(names)
	if len(names) == 0 {
		return " (they have none)"
	}
	return ", want one of: " + strings.Join(names, ", ")
}

func quoteList(paths []string) string {
	if len(paths) == 0 {
		return "the whole layout"
	}
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, ", ")
}
