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
// earliest crossing. If there is one, it cuts the step there and returns
// the event's index: it.t and it.u become the event time and the
// interpolated state. Otherwise it returns −1.
func (it *Integrator[T]) locateEvents() int {
	evs := it.prob.Events
	n := it.n
	samplesOK := false
	best, bestθ := -1, 2.0
	for j := range evs {
		ev := &evs[j]
		g1 := ev.G(it.u, it.t)
		it.gNew[j] = g1
		g0, lo := it.g[j], 0.0
		if it.gPend[j] {
			lo = pendingTheta
			it.ensurePoly()
			it.interpInto(it.evU, lo)
			g0 = ev.G(it.evU, it.tPrev+lo*it.h)
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
				g = ev.G(it.evS[(k-1)*n:k*n], it.tPrev+θ*it.h)
			}
			if θ >= bestθ {
				break // a crossing here would come after the best one found
			}
			if crosses(ga, g, ev.Direction) {
				if r := it.findRoot(ev, a, θ, ga, g); r < bestθ {
					best, bestθ = j, r
				}
				break
			}
			if g != 0 {
				a, ga = θ, g
			}
		}
	}
	if best < 0 {
		for j, v := range it.gNew {
			it.g[j] = v
			it.gPend[j] = v == 0
		}
		return -1
	}
	if bestθ < 1 {
		it.ensurePoly()
		it.interpInto(it.u, bestθ)
		it.t = it.tPrev + bestθ*it.h
	}
	return best
}

// findRoot locates the sign change of ev.G on the step's interpolant
// between θ = a and θ = b, by the Illinois variant of regula falsi, down to
// a few ulps of t. G is ga ≠ 0 at a, and gb at b, of the other sign or 0.
// It returns the right end of the final bracket, where G has its "after"
// sign, so that the event state is past the crossing.
func (it *Integrator[T]) findRoot(ev *Event[T], a, b, ga, gb float64) float64 {
	it.ensurePoly()
	tol := 4 * eps * max(math.Abs(it.tPrev), math.Abs(it.t), math.Abs(it.h)) / math.Abs(it.h)
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
		g := ev.G(it.evU, it.tPrev+θ*it.h)
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

// fireEvent applies event j at (it.t, it.u) and reports whether the solve
// terminates. A continuing solve restarts the method from the new state and
// re-reads every condition there.
func (it *Integrator[T]) fireEvent(j int) bool {
	ev := &it.prob.Events[j]
	terminate := true
	if ev.Affect != nil {
		terminate = ev.Affect(it.u, it.t)
		if it.o.everyStep {
			it.save(it.t, it.u)
		}
	}
	if terminate {
		return true
	}
	it.ensurePoly() // keep the cut step interpolable (AtInto) after the restart
	f0 := it.st.start(it)
	if ch, ok := it.st.(stepChooser[T]); ok && it.adaptive {
		it.dt = ch.firstStep(it, f0) // a method that restarts (BDF) starts its steps anew
	}
	for k := range it.prob.Events {
		g := it.prob.Events[k].G(it.u, it.t)
		it.g[k] = g
		it.gPend[k] = k == j || g == 0
	}
	return false
}
