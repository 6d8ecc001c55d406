package ode

import "math"

// pendingTheta is where, as a fraction of the step, the "before" sign is
// read of a condition that is zero at the start of a step. That happens
// right after its event, or when it is exactly zero at T0.
const pendingTheta = 1e-10

func crosses(g0, g1 float64, dir int) bool {
	rising := g0 < 0 && g1 >= 0
	falling := g0 > 0 && g1 <= 0
	return (rising && dir >= 0) || (falling && dir <= 0)
}

// eventSamples is the number of evenly spaced interior points of each step
// at which the conditions are evaluated on the interpolant, besides the
// step's ends. A condition that crosses zero twice between two samples is
// missed. OrdinaryDiffEq samples 10 points by default. Events are located
// to ulps either way, and a step rarely spans more than a few oscillations
// of a condition.
const eventSamples = 4

// locateEvents checks every condition over the accepted step and finds the
// earliest crossing, and every other crossing within the root finder's
// tolerance of it: those happen at the same time. If there is one, it cuts
// the step at the last of them, lists them in it.fire and returns true:
// it.t and it.u become the event time and the interpolated state. A step
// that lands on a stop (land) is not cut for a crossing within the
// tolerance of its end, so that the event fires with the stop's schedule
// entries. Otherwise it returns false.
func (it *Integrator[T]) locateEvents(land bool) bool {
	evs := it.prob.Events
	n := it.n
	samplesOK := false
	tol := 2 * it.rootTol()
	bestθ := 2.0
	for j := range evs {
		ev := &evs[j]
		it.root[j] = 2
		g1 := ev.cond(it.u, it.prob.P, it.t)
		it.gNew[j] = g1
		g0, lo := it.g[j], 0.0
		if it.gPend[j] {
			lo = pendingTheta
			it.ensurePoly()
			it.interpInto(it.evU, lo)
			g0 = ev.cond(it.evU, it.prob.P, it.tPrev+lo*it.h)
		}
		if !samplesOK {
			it.ensurePoly()
			for k := 1; k <= eventSamples; k++ {
				it.interpInto(it.evS[(k-1)*n:k*n], float64(k)/(eventSamples+1))
			}
			samplesOK = true
		}
		// Scan the samples after lo, then the step end, for the first crossing.
		a, ga := lo, g0
		for k := 1; k <= eventSamples+1; k++ {
			θ, g := 1.0, g1
			if k <= eventSamples {
				θ = float64(k) / (eventSamples + 1)
				if θ <= lo {
					continue
				}
				g = ev.cond(it.evS[(k-1)*n:k*n], it.prob.P, it.tPrev+θ*it.h)
			}
			if a > bestθ+tol {
				break // a crossing here would come after the best one found
			}
			if crosses(ga, g, ev.Direction) {
				r := it.findRoot(ev, a, θ, ga, g)
				it.root[j] = r
				bestθ = min(bestθ, r)
				break
			}
			if g != 0 {
				a, ga = θ, g
			}
		}
	}
	if land || bestθ >= 1-tol && bestθ <= 1 {
		bestθ = min(bestθ, it.crossingPastEnd(tol))
	}
	if bestθ > 1 {
		for j, v := range it.gNew {
			it.g[j] = v
			it.gPend[j] = v == 0
		}
		return false
	}
	cut := bestθ
	for j, r := range it.root {
		if r <= bestθ+tol {
			it.fire = append(it.fire, j)
			cut = max(cut, r)
		}
	}
	if land && cut >= 1-tol {
		cut = 1
	}
	if cut < 1 {
		it.ensurePoly()
		it.interpInto(it.u, cut)
		it.t = it.tPrev + cut*it.h
	}
	return true
}

// crossingPastEnd looks for the conditions that cross zero just after the
// step's end, within tol of it: such a root is at the same time as one at
// the end, a crossing found there or a stop's schedule entries. The
// interpolant is not extrapolated, which is not accurate to ulps at the
// end; the condition is, linearly, from its values at the end and at the
// last sample point. It sets their roots to 1 and returns 1 if it finds
// one, and 2 otherwise. The samples are in it.evS.
func (it *Integrator[T]) crossingPastEnd(tol float64) float64 {
	const θs = float64(eventSamples) / (eventSamples + 1)
	found := 2.0
	last := it.evS[(eventSamples-1)*it.n : eventSamples*it.n]
	for j := range it.prob.Events {
		ev := &it.prob.Events[j]
		g1 := it.gNew[j]
		if it.root[j] <= 1 || g1 == 0 {
			continue
		}
		slope := (g1 - ev.cond(last, it.prob.P, it.tPrev+θs*it.h)) / (1 - θs)
		if crosses(g1, g1+slope*tol, ev.Direction) {
			it.root[j], found = 1, 1
		}
	}
	return found
}

// rootTol is the width, as a fraction of the last step, to which findRoot
// brackets a root: a few ulps of t.
func (it *Integrator[T]) rootTol() float64 {
	return 4 * eps * max(math.Abs(it.tPrev), math.Abs(it.t), math.Abs(it.h)) / math.Abs(it.h)
}

// findRoot locates the sign change of ev.G on the step's interpolant
// between θ = a and θ = b, by the Illinois variant of regula falsi, down to
// a few ulps of t. G is ga ≠ 0 at a, and gb at b, of the other sign or 0.
// It returns the right end of the final bracket, where G has its "after"
// sign, so that the event state is past the crossing.
func (it *Integrator[T]) findRoot(ev *Event[T], a, b, ga, gb float64) float64 {
	it.ensurePoly()
	tol := it.rootTol()
	side := 0
	for iter := 0; iter < 200 && gb != 0 && b-a > tol; iter++ {
		θ := (a*gb - b*ga) / (gb - ga)
		if !(θ > a && θ < b) || iter >= 100 {
			θ = a + (b-a)/2
		}
		if θ <= a || θ >= b {
			break
		}
		it.interpInto(it.evU, θ)
		g := ev.cond(it.evU, it.prob.P, it.tPrev+θ*it.h)
		if g == 0 || (g < 0) == (gb < 0) && gb != 0 {
			b, gb = θ, g
			if side == 1 {
				ga /= 2
			}
			side = 1
		} else {
			a, ga = θ, g
			if side == -1 {
				gb /= 2
			}
			side = -1
		}
	}
	return b
}
