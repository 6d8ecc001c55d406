package ode

import (
	"context"
	"math"
)

// The stepping of an Integrator: one attempted step and its acceptance, the
// replay of recorded steps, and the dense output read between steps.

const eps = 0x1p-52

// probeF evaluates F at the current state at t and at t+h and returns the
// first component where it is NaN or ±Inf, or −1: when trial steps fail on
// non-finite values, this tells a right-hand side that is non-finite ahead
// (NonFinite) from a solution that blows up (DtUnderflow).
func (it *Integrator[T]) probeF(h float64) int {
	for _, t := range [2]float64{it.t + h, it.t} {
		it.prob.F(it.scratch, it.u, it.prob.P, t)
		it.stats.FEvals++
		if c := firstNonFinite(it.scratch); c >= 0 {
			return c
		}
	}
	return -1
}

// linearFailures is the cause to name when the solve ran out of steps
// after iterative linear solves failed: each failure rejects its step, so
// GMRES that converges only for tiny steps looks like stiffness. It is nil
// when every linear solve converged.
func (it *Integrator[T]) linearFailures() error {
	if n := it.stats.LinearFails; n > 0 {
		return errorf("%d of its GMRES solves did not converge, each rejecting its step (give GMRES a preconditioner, or more Restart vectors)", n)
	}
	return nil
}

// step takes one accepted step, with as many rejected attempts as needed.
func (it *Integrator[T]) step() error {
	for {
		if it.attempts >= it.o.maxSteps {
			return it.fail(MaxStepsReached, -1, it.linearFailures())
		}
		if it.ctx != nil && it.attempts&15 == 0 {
			if err := it.ctx.Err(); err != nil {
				return it.fail(Cancelled, -1, err)
			}
		}
		it.attempts++
		target := it.nextStop()
		want := it.dt
		h := want
		rem := target - it.t
		lim := 1.01
		if !it.adaptive {
			lim = 1 + 1e-6
		}
		land := false
		if math.Abs(rem) <= math.Abs(h)*lim {
			h, land = rem, true
		}
		it.lastDt = h
		if h == 0 || math.Abs(h) < 16*eps*math.Abs(it.t) {
			// Steps that keep failing on NaN/Inf ahead of t also end here:
			// if F is non-finite just ahead, that is the diagnosis.
			if it.attempts-it.lastNF <= maxNonFinit {
				if c := it.probeF(it.hNF); c >= 0 {
					return it.fail(NonFinite, c, nil)
				}
			}
			return it.fail(DtUnderflow, -1, nil)
		}
		// The error norm squared; NaN or +Inf: a non-finite trial state.
		e2 := it.st.attempt(it, h)
		if err := it.callbackErr(); err != nil {
			return it.fail(Failed, -1, err)
		}
		if !(e2 <= math.MaxFloat64) {
			it.stats.Rejected++
			it.nonFinite++
			it.lastNF, it.hNF = it.attempts, h
			if !it.adaptive || it.nonFinite >= maxNonFinit {
				if sf, ok := it.st.(stepFailer); ok {
					if code, comp, cause := sf.failure(); cause != nil {
						return it.fail(code, comp, cause)
					}
				}
				c := it.probeF(h)
				if c < 0 {
					c = firstNonFinite(it.uNew)
				}
				return it.fail(NonFinite, c, nil)
			}
			it.dt = it.controlReject(h, e2)
			it.rejectedLast = true
			continue
		}
		it.nonFinite = 0
		if it.adaptive && e2 > 1 {
			it.stats.Rejected++
			it.dt = it.controlReject(h, e2)
			if ch, ok := it.st.(stepChooser[T]); ok {
				if code, comp, cause := ch.gaveUp(); cause != nil {
					return it.fail(code, comp, cause)
				}
			}
			it.rejectedLast = true
			continue
		}
		next := it.controlAccept(h, e2)
		if land && it.adaptive && math.Abs(next) >= math.Abs(h) && math.Abs(want) > math.Abs(next) {
			next = want // a step cut short to land on a stop does not shrink the next one
		}
		it.acceptStep(h, land, target, next)
		return it.err // non-nil if the step ended the solve and a callback had failed
	}
}

func (it *Integrator[T]) acceptStep(h float64, land bool, target, next float64) {
	it.st.accept(it, h)
	it.stats.Accepted++
	tNew := it.t + h
	if land {
		tNew = target
	}
	it.uPrev, it.u, it.uNew = it.u, it.uNew, it.uPrev
	it.tPrev, it.t, it.h = it.t, tNew, h
	it.polyOK = false
	it.dt = next
	it.rejectedLast = false

	it.fire = it.fire[:0]
	fired := len(it.prob.Events) > 0 && it.locateEvents(land)
	it.output()
	if len(it.sched) > 0 {
		it.dueSchedule()
	}
	if len(it.fire) > 0 && it.fireAll() {
		if it.err == nil {
			it.finish(Terminated)
		}
		return
	}
	if it.t == it.t1 {
		it.finish(Success)
	} else if land && !fired && len(it.fire) == 0 {
		it.restartAtStop()
	}
	if it.onAccept != nil {
		it.onAccept()
	}
}

// restartAtStop restarts a method that chooses its own steps (BDF) at a
// TStop, where F may jump: its history from before the stop would
// mispredict the steps after it. The step's polynomial is computed first,
// so that it stays readable.
func (it *Integrator[T]) restartAtStop() {
	ch, ok := it.st.(stepChooser[T])
	if !ok || !it.adaptive {
		return
	}
	it.ensurePoly()
	f0 := it.st.start(it)
	it.dt = ch.firstStep(it, f0)
}

// replay solves again from u0 at t0 to t1 on the given steps, as a solve
// took them. Each step is a start, a size and an end; the end of the last
// is t1. Each is one attempt without error control, accepted and landing
// exactly on its end.
// The gradient methods re-solve checkpointed segments with it, so that
// they see the forward solve's own steps and dense output.
func (it *Integrator[T]) replay(ctx context.Context, u0 []T, t0, t1 float64, p []float32, steps []float64) error {
	if err := it.Reinit(u0, t0, t1, p); err != nil {
		return err
	}
	for k := 0; k+2 < len(steps) && !it.done; k += 3 {
		if ctx != nil && k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return it.fail(Cancelled, -1, err)
			}
		}
		h, end := steps[k+1], steps[k+2]
		it.t = steps[k] // the same bits as the step's start in the solve
		it.attempts++
		it.lastDt = h
		e := it.st.attempt(it, h)
		if err := it.callbackErr(); err != nil {
			return it.fail(Failed, -1, err)
		}
		if !(e <= math.MaxFloat64) {
			return it.fail(NonFinite, firstNonFinite(it.uNew), nil)
		}
		it.acceptStep(h, true, end, h)
	}
	if !it.done {
		return it.fail(Unfinished, -1, errorf("replay: the steps end at %g, before %g", it.t, t1))
	}
	return it.err
}

// quadratures tells the stepper that F does not read the last nq
// components, the gradient systems' quadratures. An explicit method then
// need not form their stage inputs; other steppers ignore it.
func (it *Integrator[T]) quadratures(nq int) {
	if e, ok := it.st.(*erk[T]); ok && nq >= 0 && nq < it.n {
		e.quadratures(nq)
	}
}

// ensurePoly computes the dense polynomial of the last accepted step.
func (it *Integrator[T]) ensurePoly() {
	if !it.polyOK {
		it.st.dense(it, it.poly)
		it.polyOK = true
	}
}

// interpInto evaluates the last step's polynomial at θ by Horner's rule.
func (it *Integrator[T]) interpInto(dst []T, θ float64) {
	hornerInto(dst, it.poly, it.deg, it.n, T(θ))
}

func hornerInto[T Float](dst, poly []T, deg, n int, θ T) {
	dst = dst[:n]
	poly = poly[:(deg+1)*n]
	// The usual degrees unrolled (the interpolants of Tsit5, DP5, BS3):
	// the same operations in the same order as the loop below.
	switch deg {
	case 3:
		c0, c1, c2, c3 := poly[:n], poly[n:][:n], poly[2*n:][:n], poly[3*n:][:n]
		for i := range dst {
			dst[i] = ((c3[i]*θ+c2[i])*θ+c1[i])*θ + c0[i]
		}
		return
	case 4:
		if n == 2 { // two states (Lotka-Volterra, the spiral): no slices
			p := poly[:10]
			dst[0] = (((p[8]*θ+p[6])*θ+p[4])*θ+p[2])*θ + p[0]
			dst[1] = (((p[9]*θ+p[7])*θ+p[5])*θ+p[3])*θ + p[1]
			return
		}
		c0, c1, c2, c3, c4 := poly[:n], poly[n:][:n], poly[2*n:][:n], poly[3*n:][:n], poly[4*n:][:n]
		for i := range dst {
			dst[i] = (((c4[i]*θ+c3[i])*θ+c2[i])*θ+c1[i])*θ + c0[i]
		}
		return
	}
	for i := range dst {
		a := poly[deg*n+i]
		for j := deg - 1; j >= 0; j-- {
			a = a*θ + poly[j*n+i]
		}
		dst[i] = a
	}
}

// output saves what the accepted step owes: SaveAt points in (tPrev, t],
// the step end with SaveEveryStep, and its polynomial with Dense.
func (it *Integrator[T]) output() {
	if ts := it.o.saveAt; it.saveIdx < len(ts) {
		for it.saveIdx < len(ts) {
			s := it.sortedAt(ts, it.saveIdx)
			if it.dir*(s-it.t) > 0 {
				break
			}
			if s == it.t {
				it.save(s, it.u)
			} else {
				it.ensurePoly()
				k := len(it.outU)
				it.outU = append(it.outU, it.u...) // grow by n; overwritten below
				it.outT = append(it.outT, s)
				it.interpInto(it.outU[k:], (s-it.tPrev)/it.h)
			}
			it.saveIdx++
		}
	}
	if it.o.everyStep {
		it.save(it.t, it.u)
	}
	if it.o.dense {
		it.denseT = append(it.denseT, it.tPrev)
		it.denseH = append(it.denseH, it.h)
		if it.nord != nil {
			var s nordStep
			it.denseC, s = it.nord.appendDense(it, it.denseC)
			it.denseN = append(it.denseN, s)
			return
		}
		it.ensurePoly()
		it.denseC = append(it.denseC, it.poly...)
	}
}
