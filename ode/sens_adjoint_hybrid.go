package ode

import "math"

// The continuous adjoints through events and schedules. The forward pass
// records every firing (fireLog.hook, the integrator's onFire); the
// backward pass stops at each firing time τ as at a save time. Coming
// from above with λ⁺, it applies the transpose of the firing's jump
// (hybridDerivs.cotangent) to λ and μ, and then the jumps of the save
// times at τ: a save time at τ sees the state before the firing, so its
// dL/du⁻ is added to λ⁻. The backward segment below τ reads the state
// before the firing at τ itself (adjointPass.edge), the one above reads
// the state after it from the dense output, which starts a new step there.

// fireLog keeps the firings of one forward pass, in the order of
// integration, in records reused from pass to pass.
type fireLog[T Float] struct {
	gs     *GradientSolver[T]
	it     *Integrator[T] // the forward integrator, for firingOf and fireNames
	n      int
	recs   []firing[T] // the first m are this pass's
	tauBar []float64   // each firing's dL/dτ through the running cost
	m      int
	tj     [][]float64 // per schedule: TimesFromJac at this pass's p, when the times are parameters
	tjOK   []bool
	end    float64 // the forward solve's end: T1, or a terminating firing's time
	// onStep, if set, is called after each recorded firing (checkpoints).
	onStep func(x *firing[T])
}

func newFireLog[T Float](gs *GradientSolver[T], it *Integrator[T]) *fireLog[T] {
	ns := len(gs.prob.Schedules)
	return &fireLog[T]{gs: gs, it: it, n: len(gs.prob.U0), tj: make([][]float64, ns), tjOK: make([]bool, ns)}
}

// reset empties the log for a new forward pass.
func (fl *fireLog[T]) reset() {
	fl.m = 0
	fl.end = fl.gs.prob.T1
	clear(fl.tjOK)
}

// hook is the forward integrator's onFire: it records the firing and
// prepares its derivatives. Firings of several effects at once are
// refused, as is a tangential crossing (prepare's error).
func (fl *fireLog[T]) hook(fire []int, t float64, before, after []T, terminate bool) error {
	gs := fl.gs
	if len(fire) > 1 {
		return errorf("Gradient: %s fire together at t=%g; gradients through simultaneous firings are not supported", fl.it.fireNames(), t)
	}
	n := fl.n
	if len(after) > n {
		// The effect acts on u; the running cost's integral does not jump.
		copy(after[n:], before[n:])
	}
	if fl.m == len(fl.recs) {
		fl.recs = append(fl.recs, firing[T]{})
		fl.tauBar = append(fl.tauBar, 0)
	}
	x := &fl.recs[fl.m]
	x.e, x.i = fl.it.firingOf(fire[0])
	x.t, x.terminal = t, terminate
	x.before = append(x.before[:0], before[:n]...)
	x.after = append(x.after[:0], after[:n]...)
	x.dtdp = nil
	p := gs.prob.P
	if x.e < 0 {
		if k := ^x.e; gs.hyb.timesJ[k] != nil {
			np := len(p)
			if !fl.tjOK[k] {
				fl.tj[k] = grow(fl.tj[k], len(gs.prob.Schedules[k].Times)*np)
				gs.hyb.timesJ[k](fl.tj[k], p)
				fl.tjOK[k] = true
			}
			x.dtdp = fl.tj[k][x.i*np : (x.i+1)*np]
		}
	}
	if err := gs.hyb.prepare(x, p); err != nil {
		return err
	}
	tb := 0.0
	if l := gs.loss; l.Running != nil {
		// The integrand jumps at τ: dL/dτ = g(u⁻) − g(u⁺), or g(u⁻) where
		// the solve ends.
		tb = l.Running(x.before, p, t)
		if !terminate {
			tb -= l.Running(x.after, p, t)
		}
	}
	fl.tauBar[fl.m] = tb
	fl.m++
	if terminate {
		fl.end = t
	}
	if fl.onStep != nil {
		fl.onStep(x)
	}
	return nil
}

// checkReached returns an error if the forward solve in it ended before
// T1, at a terminating firing, and the loss asks for a state after it.
func (gs *GradientSolver[T]) checkReached(it *Integrator[T]) error {
	if it.t == gs.prob.T1 {
		return nil
	}
	for k, s := range gs.at {
		if it.dir*(s-it.t) > 0 && !gs.isEnd(k) {
			return errorf("Gradient: Loss.At time %g is after t=%g, where a terminating event ended the solve; want At times up to it", s, it.t)
		}
	}
	return nil
}

// endAt starts the pass of a solve that a terminating firing ended with
// Loss.End's part: λ⁺ += dL/du and the firing's dL/dτ += dL/dt. End's
// save at T1, the last save time, is not reached.
func (ap *adjointPass[T]) endAt() {
	gs := ap.gs
	if gs.endK < 0 || !gs.endT {
		return
	}
	ap.j-- // End's save at T1
	n := len(gs.prob.U0)
	lam := ap.a[ap.lam : ap.lam+n]
	for i, v := range gs.endDu {
		lam[i] += v
	}
	if fl := ap.fl; fl != nil && fl.m > 0 && fl.recs[fl.m-1].terminal {
		fl.tauBar[fl.m-1] += gs.endDt
	}
}

// fireAt applies the cotangents of the firings at tCur, last first.
func (ap *adjointPass[T]) fireAt() {
	fl := ap.fl
	if fl == nil {
		return
	}
	n := len(ap.gs.prob.U0)
	lam := ap.a[ap.lam : ap.lam+n]
	mu := ap.mu
	ap.edge = nil
	for ap.r >= 0 && fl.recs[ap.r].t == ap.tCur {
		x := &fl.recs[ap.r]
		if !x.terminal && x.t == ap.gs.prob.T1 {
			// A firing at T1 changes nothing the loss sees.
			ap.r--
			continue
		}
		if ap.onFire != nil {
			ap.onFire(x)
		} else {
			ap.lamAfter = grow(ap.lamAfter, n)
			copy(ap.lamAfter, lam)
			ap.gs.hyb.cotangent(x, lam, mu, ap.lamAfter, ap.gs.prob.P, fl.tauBar[ap.r])
		}
		ap.edge = x.before
		ap.r--
	}
}

// nextFire returns the time of the next firing to reach going back, or
// NaN when there is none.
func (ap *adjointPass[T]) nextFire() float64 {
	if ap.fl == nil || ap.r < 0 {
		return math.NaN()
	}
	return ap.fl.recs[ap.r].t
}
