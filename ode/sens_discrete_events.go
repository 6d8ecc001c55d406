package ode

import "math"

// The discrete adjoints through events and schedules. The forward pass
// records every firing with the integrator's onFire hook: the state before
// and after it, the step it ends and where in that step the state before
// it lies. The reverse pass goes through a firing with the jump's
// transpose (hybridDerivs.cotangent) before it reverses the step that
// ended at it.
//
// A schedule time is a stop: the step lands on it, and the state before
// the firing is that step's result, so the reverse pass is that of the
// step as recorded. An event cuts its step at the root τ, on the step's
// dense interpolant: the state before the firing is the interpolant of the
// step from t with its full size h at θ = (τ − t)/h. The reverse pass
// differentiates that interpolant, as for a save time inside a step, so
// the forward pass of the gradient is Solve's own and needs no step again.
// The step sizes are constants of the discrete solution, as elsewhere; τ
// is not: the jump's transpose takes its derivative from the continuous
// formula, with u̇⁻ = F(u⁻) in place of the interpolant's derivative and
// ġ = ∂g/∂u·F(u⁻) + ∂g/∂t in place of the condition's along it. The
// gradient is therefore exact to the method's local error rather than to
// rounding where an event time or a parameter-dependent schedule time
// moves. A schedule with fixed times changes no step size, and the
// gradient is that of the discrete solution to rounding.

// discreteFiring is one firing as the discrete adjoints keep it.
type discreteFiring[T Float] struct {
	x     firing[T]
	step  int     // the step it ends, −1 at T0
	theta float64 // where in that step u⁻ lies: 1 at its end, < 1 on the interpolant
	whole []T     // the whole state after it (N), for the replays
}

// discreteFirings are the firings of one forward pass.
type discreteFirings[T Float] struct {
	list   []discreteFiring[T] // grows, and keeps the buffers of its entries
	nf     int
	timesJ [][]float64 // per schedule: TimesFromJac at this solve's p; nil for fixed times
	lamB   []T         // the cotangent before a firing (n)
	term   bool        // a terminating firing ended the forward solve
	kept   bool        // onFire recorded the step being accepted; onAccept is to skip it
}

func (fs *discreteFirings[T]) resetFirings() { fs.nf, fs.term, fs.kept = 0, false, false }

// setTimesJac evaluates the schedules' TimesFromJac at p.
func (fs *discreteFirings[T]) setTimesJac(gs *GradientSolver[T]) {
	h := gs.hyb
	if h == nil {
		return
	}
	if len(fs.timesJ) != len(h.timesJ) {
		fs.timesJ = make([][]float64, len(h.timesJ))
	}
	np := len(gs.prob.P)
	for k, f := range h.timesJ {
		if f == nil {
			continue
		}
		fs.timesJ[k] = grow(fs.timesJ[k], len(gs.prob.Schedules[k].Times)*np)
		f(fs.timesJ[k], gs.prob.P)
	}
}

// after returns the firing that ends step i, or nil. Firings are in the
// order of their steps.
func (fs *discreteFirings[T]) after(i int) *discreteFiring[T] {
	lo, hi := 0, fs.nf
	for lo < hi {
		m := (lo + hi) / 2
		if fs.list[m].step < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < fs.nf && fs.list[lo].step == i {
		return &fs.list[lo]
	}
	return nil
}

// endTheta is where in step i the state that ends it lies: 1 at the
// step's end, or the event's cut.
func (fs *discreteFirings[T]) endTheta(i int) float64 {
	if f := fs.after(i); f != nil {
		return f.theta
	}
	return 1
}

// fireHook returns the forward integrator's onFire hook: it records the
// firing, and first the step that ends at it through keep when there is
// one not yet recorded (the hook runs before onAccept, and a terminating
// firing ends the solve without it). It refuses simultaneous firings and
// loss times past a terminating one.
func (tp *discreteTape[T]) fireHook(gs *GradientSolver[T], fwd *Integrator[T], n int, keep func()) func(fire []int, t float64, before, after []T, terminate bool) error {
	return func(fire []int, t float64, before, after []T, terminate bool) error {
		fs := &tp.fs
		if len(fire) > 1 {
			return errorf("Gradient: %s fire together at t=%g; gradients through simultaneous firings are not supported", fwd.fireNames(), t)
		}
		if terminate {
			for k, s := range gs.at {
				if fwd.dir*(s-t) > 0 && !gs.isEnd(k) {
					return errorf("Gradient: %s ended the solve at t=%g, before Loss.At time %g; want At times up to the terminating firing", fwd.fireNames(), t, s)
				}
			}
		}
		fs.term = terminate // before keep: no checkpoint after a terminating firing
		step := -1
		if fwd.stats.Accepted > 0 {
			if len(tp.ts) < fwd.stats.Accepted {
				keep()
				fs.kept = true
			}
			step = len(tp.ts) - 1
		}
		if fs.nf == len(fs.list) {
			fs.list = append(fs.list, discreteFiring[T]{})
		}
		d := &fs.list[fs.nf]
		fs.nf++
		d.step, d.theta = step, 1
		if step >= 0 {
			if θ := (t - fwd.tPrev) / fwd.h; math.Abs(θ-1) > 4*eps {
				d.theta = θ
			}
		}
		d.whole = append(d.whole[:0], after...)
		x := &d.x
		x.e, x.i = fwd.firingOf(fire[0])
		x.t, x.terminal, x.dtdp = t, terminate, nil
		x.before = append(x.before[:0], before[:n]...)
		x.after = append(x.after[:0], after[:n]...)
		if x.e < 0 && fs.timesJ != nil && fs.timesJ[^x.e] != nil {
			np := len(gs.prob.P)
			x.dtdp = fs.timesJ[^x.e][x.i*np : (x.i+1)*np]
		}
		return gs.hyb.prepare(x, gs.prob.P)
	}
}

// jump turns ub, the cotangent of the whole state after firing d, into
// that of the state before it, and adds the parameters' part into pb.
// With a running cost (quad), the quadrature's cotangent ub[n] meets the
// jump of the integrand at τ.
func (tp *discreteTape[T]) jump(gs *GradientSolver[T], d *discreteFiring[T], ub, pb []T, n int, quad bool) {
	fs := &tp.fs
	fs.lamB = grow(fs.lamB, n)
	x := &d.x
	tauBar := 0.0
	if quad {
		r := gs.loss.Running(x.before, gs.prob.P, x.t)
		if !x.terminal {
			r -= gs.loss.Running(x.after, gs.prob.P, x.t)
		}
		tauBar = float64(ub[n]) * r
	}
	if x.terminal && gs.endK >= 0 && gs.endT {
		tauBar += gs.endDt // Loss.End's dL/dτ
	}
	gs.hyb.cotangent(x, fs.lamB, pb, ub[:n], gs.prob.P, tauBar)
	copy(ub[:n], fs.lamB)
}

// endAt starts the reverse pass of a solve that a terminating firing ended
// with Loss.End's dL/du in ub, the cotangent of the state after the firing
// (jump adds its dL/dτ), and skips End's save at T1, the last save time,
// which is not reached.
func (tp *discreteTape[T]) endAt(gs *GradientSolver[T], ub []T, ap *adjointPass[T]) {
	if gs.endK < 0 || !gs.endT {
		return
	}
	ap.j--
	addTo(ub[:len(gs.endDu)], gs.endDu)
}

// hybridProblem gives the forward problem fp of dimension N the problem's
// events and schedules. Beyond the state (a running cost's quadrature)
// they see and change only u[:n].
func hybridProblem[T Float](gs *GradientSolver[T], fp *Problem[T], n, N int) {
	if N == n {
		fp.Events, fp.Schedules = gs.prob.Events, gs.prob.Schedules
		return
	}
	fp.Events = make([]Event[T], len(gs.prob.Events))
	for j := range fp.Events {
		fp.Events[j] = Event[T]{Direction: gs.prob.Events[j].Direction,
			Cond: func(u []T, p []float32, t float64) float64 { return gs.prob.Events[j].cond(u[:n], p, t) },
			Effect: func(u []T, p []float32, t float64) bool {
				return gs.prob.Events[j].apply(u[:n], p, t)
			}}
	}
	fp.Schedules = make([]Schedule[T], len(gs.prob.Schedules))
	for k := range fp.Schedules {
		s := gs.prob.Schedules[k]
		fp.Schedules[k] = Schedule[T]{Times: s.Times,
			Effect: func(u []T, p []float32, t float64) bool { return gs.prob.Schedules[k].Effect(u[:n], p, t) }}
		if s.TimesFrom != nil {
			fp.Schedules[k].TimesFrom = func(ts []float64, p []float32) { gs.prob.Schedules[k].TimesFrom(ts, p) }
		}
	}
}

// syncHybrid points the forward integrator at the current problem's events
// and schedules (GradientFor may change them), for a forward problem
// without a quadrature; the wrappers of hybridProblem read gs.prob
// themselves.
func syncHybrid[T Float](gs *GradientSolver[T], fwd *Integrator[T], n, N int) {
	if N == n {
		fwd.prob.Events, fwd.prob.Schedules = gs.prob.Events, gs.prob.Schedules
		return
	}
	for k := range fwd.prob.Schedules {
		fwd.prob.Schedules[k].Times = gs.prob.Schedules[k].Times
	}
}
