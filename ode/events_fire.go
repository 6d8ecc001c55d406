package ode

import (
	"math"
	"strconv"
	"strings"
)

// The firing of events: the effects due at one time, the check that their
// order does not matter when there are several, and the restart after them.

// fireAll applies the effects due at it.t, listed in it.fire: an event's
// index, or ^k for the schedule entry it.sched[k]. It reports whether the solve ends
// there, with Terminated or with a failure (it.err set). Otherwise it
// restarts the method from the new state.
func (it *Integrator[T]) fireAll() (terminate bool) {
	if it.applyEffects() {
		return true
	}
	if it.t == it.t1 {
		return false // the solve ends here anyway
	}
	it.ensurePoly() // keep the cut step interpolable (AtInto) after the restart
	f0 := it.st.start(it)
	if ch, ok := it.st.(stepChooser[T]); ok && it.adaptive {
		it.dt = ch.firstStep(it, f0) // a method that restarts (BDF) starts its steps anew
	}
	for k := range it.prob.Events {
		g := it.prob.Events[k].cond(it.u, it.prob.P, it.t)
		it.g[k] = g
		it.gPend[k] = g == 0
	}
	for _, e := range it.fire {
		if e >= 0 {
			it.gPend[e] = true
		}
	}
	return false
}

// applyEffects applies the effects in it.fire to it.u and checks the
// result. It reports whether the solve ends there.
func (it *Integrator[T]) applyEffects() (terminate bool) {
	it.pSnap = append(it.pSnap[:0], it.prob.P...)
	if it.onFire != nil {
		it.fireU = append(it.fireU[:0], it.u...)
	}
	if len(it.fire) == 1 {
		terminate = it.applyEffect(it.fire[0], it.u)
	} else {
		copy(it.evA, it.u)
		copy(it.evB, it.u)
		for _, e := range it.fire {
			terminate = it.applyEffect(e, it.evA) || terminate
		}
		for i := len(it.fire) - 1; i >= 0; i-- {
			it.applyEffect(it.fire[i], it.evB)
		}
		if c := it.differ(it.evA, it.evB); c >= 0 {
			it.fail(Failed, c, errorf("%s happen at t=%g and their order matters: u[%d] = %g after their effects in order, %g in reverse order; want effects that commute, or distinct times",
				it.fireNames(), it.t, c, float64(it.evA[c]), float64(it.evB[c])))
			return true
		}
		copy(it.u, it.evA)
	}
	if err := it.callbackErr(); err != nil {
		it.fail(Failed, -1, err)
		return true
	}
	if i := it.pChanged(); i >= 0 {
		it.fail(Failed, -1, errorf("the effect of %s changed p[%d] from %g to %g; want p unchanged (keep a switch in the state instead)",
			it.fireNames(), i, it.pSnap[i], it.prob.P[i]))
		return true
	}
	if c := firstNonFinite(it.u); c >= 0 {
		it.fail(NonFinite, c, errorf("the effect of %s made u[%d] = %g", it.fireNames(), c, float64(it.u[c])))
		return true
	}
	if it.onFire != nil {
		if err := it.onFire(it.fire, it.t, it.fireU, it.u, terminate); err != nil {
			it.fail(Failed, -1, err)
			return true
		}
	}
	if it.o.everyStep && it.effectful() {
		it.save(it.t, it.u)
	}
	return terminate
}

// firingOf names effect e of it.fire for the gradient methods: the event's
// index, or ^k for Problem.Schedules[k], and for a schedule the index of
// its time in Times (−1 for an event).
func (it *Integrator[T]) firingOf(e int) (effect, timeIndex int) {
	if e >= 0 {
		return e, -1
	}
	s := it.sched[^e]
	return ^s.k, s.i
}

// applyEffect applies effect e of it.fire to u.
func (it *Integrator[T]) applyEffect(e int, u []T) (terminate bool) {
	if e >= 0 {
		return it.prob.Events[e].apply(u, it.prob.P, it.t)
	}
	return it.prob.Schedules[it.sched[^e].k].Effect(u, it.prob.P, it.t)
}

// effectful reports whether any effect in it.fire may have changed the state.
func (it *Integrator[T]) effectful() bool {
	for _, e := range it.fire {
		if e < 0 || it.prob.Events[e].Effect != nil || it.prob.Events[e].Affect != nil {
			return true
		}
	}
	return false
}

// differ returns the first component where a and b differ by more than
// the solve's tolerances, or −1.
func (it *Integrator[T]) differ(a, b []T) int {
	for i := range a {
		atol, rtol := it.o.tolAt(i)
		x, y := float64(a[i]), float64(b[i])
		if !(math.Abs(x-y) <= atol+rtol*max(math.Abs(x), math.Abs(y))) {
			return i
		}
	}
	return -1
}

// pChanged returns the first parameter that differs from the snapshot, or −1.
func (it *Integrator[T]) pChanged() int {
	if len(it.pSnap) != len(it.prob.P) {
		return -1
	}
	for i, v := range it.prob.P {
		if v != it.pSnap[i] && !(v != v && it.pSnap[i] != it.pSnap[i]) {
			return i
		}
	}
	return -1
}

// fireNames names the effects in it.fire, for errors.
func (it *Integrator[T]) fireNames() string {
	var b strings.Builder
	for i, e := range it.fire {
		switch {
		case i == 0:
		case i == len(it.fire)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		if e >= 0 {
			b.WriteString("Problem.Events[" + strconv.Itoa(e) + "]")
		} else {
			b.WriteString("Problem.Schedules[" + strconv.Itoa(it.sched[^e].k) + "]")
		}
	}
	return b.String()
}
