package optimisers

// This file: Freeze and Thaw, which change which leaves an optimiser trains.

// Freeze stops training the leaf or group at path. A tied path names its
// leaf, and "" is the whole layout. The optimiser skips the leaves until
// Thaw, keeping their state and their counts. Freezing a frozen leaf does
// nothing. An unknown path is an error naming it.
func (o *Optimiser) Freeze(path string) error { return o.setTrained("Freeze", path, false) }

// Thaw starts or resumes training the leaf or group at path, including
// leaves the layout marks frozen. A leaf trained before resumes with the
// state and counts it had when frozen. A leaf never trained starts afresh:
// each rule initialises its state at the leaf's first update and counts
// that update as its first. So Adam's bias correction starts at t = 1 for
// it, as in PyTorch for a parameter that had no gradient until then.
//
// It is an error if path is unknown, or if a leaf under it has no rule
// because no ByPath pattern matched it; then nothing changes.
func (o *Optimiser) Thaw(path string) error { return o.setTrained("Thaw", path, true) }

// Freeze is Optimiser.Freeze on a copy of s.
func (s State) Freeze(path string) (State, error) {
	return s.replan("Freeze", func(p *plan) (*plan, error) { return p.setTrained("Freeze", path, false) })
}

// Thaw is Optimiser.Thaw on a copy of s.
func (s State) Thaw(path string) (State, error) {
	return s.replan("Thaw", func(p *plan) (*plan, error) { return p.setTrained("Thaw", path, true) })
}

// replan returns a copy of s with the plan f makes.
func (s State) replan(op string, f func(*plan) (*plan, error)) (State, error) {
	if err := s.check(op); err != nil {
		return State{}, err
	}
	p, err := f(s.plan)
	if err != nil {
		return State{}, err
	}
	c := s.clone()
	c.plan = p
	return c, nil
}

// setTrained returns a plan in which the leaves under path are trained (on)
// or not.
func (p *plan) setTrained(op, path string, on bool) (*plan, error) {
	lo, hi, err := p.lay.Range(path)
	if err != nil {
		return nil, errorf("%s: %w", op, err)
	}
	c := p.clone()
	assigned := make([]bool, p.lay.NumLeaves())
	for gi := range c.groups {
		ms := c.groups[gi].members
		for mi := range ms {
			assigned[ms[mi].leaf] = true
			if ms[mi].lo >= lo && ms[mi].hi <= hi {
				ms[mi].on = on
			}
		}
	}
	if on {
		for li, ok := range assigned {
			if lf := p.lay.Leaf(li); !ok && lf.Offset >= lo && lf.End() <= hi {
				return nil, errorf("Thaw %q: leaf %q has no rule (frozen in the layout and matched by no ByPath pattern)", path, lf.Path)
			}
		}
	}
	c.size()
	return c, nil
}

// setTrained is Freeze (trained false) and Thaw (true), op naming which.
func (o *Optimiser) setTrained(op, path string, trained bool) error {
	p, err := o.st.plan.setTrained(op, path, trained)
	if err != nil {
		return err
	}
	o.st.plan = p
	o.build()
	return nil
}
