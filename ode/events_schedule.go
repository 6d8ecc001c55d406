package ode

import (
	"cmp"
	"math"
	"slices"
)

// Schedules: the changes at known times. Their times join the TStops, so
// that the integrator lands on them, and fire when a step reaches them.

// schedEntry is one time of Problem.Schedules[k].
type schedEntry struct {
	t float64
	k int // the schedule
	i int // the time's index in the schedule's Times
}

// buildSchedule lists the schedule times in order, computing those of a
// TimesFrom, and merges them with the TStops into it.stops. It allocates
// only when the lists outgrow their buffers.
func (it *Integrator[T]) buildSchedule() error {
	it.sched = it.sched[:0]
	for k, s := range it.prob.Schedules {
		ts := s.Times
		if s.TimesFrom != nil {
			it.schedTs = append(it.schedTs[:0], s.Times...)
			ts = it.schedTs
			s.TimesFrom(ts, it.prob.P)
			if err := it.callbackErr(); err != nil {
				return errorf("Problem.Schedules[%d].TimesFrom: %w", k, err)
			}
			for j, t := range ts {
				if math.IsNaN(t) || math.IsInf(t, 0) {
					return errorf("Problem.Schedules[%d].TimesFrom(P)[%d] = %g, want a finite time", k, j, t)
				}
			}
		}
		for i, t := range ts {
			it.sched = append(it.sched, schedEntry{t, k, i})
		}
	}
	it.stops = it.o.tstops
	if len(it.sched) == 0 {
		return nil
	}
	slices.SortStableFunc(it.sched, func(a, b schedEntry) int { return cmp.Compare(a.t, b.t) })
	st := append(it.stopsBuf[:0], it.o.tstops...)
	for _, e := range it.sched {
		st = append(st, e.t)
	}
	slices.Sort(st)
	it.stops = slices.Compact(st)
	it.stopsBuf = st
	return nil
}

// schedAt is the k-th schedule entry in the order of integration.
func (it *Integrator[T]) schedAt(k int) schedEntry { return it.sched[it.schedIndex(k)] }

// schedIndex is the index in it.sched of the k-th schedule entry in the
// order of integration.
func (it *Integrator[T]) schedIndex(k int) int {
	if it.dir > 0 {
		return k
	}
	return len(it.sched) - 1 - k
}

// dueSchedule appends to it.fire the schedule entries that the solve has
// reached at it.t and not fired yet.
func (it *Integrator[T]) dueSchedule() {
	for it.schedIdx < len(it.sched) {
		e := it.schedAt(it.schedIdx)
		if it.dir*(e.t-it.t) > 0 {
			return
		}
		it.fire = append(it.fire, ^it.schedIndex(it.schedIdx))
		it.schedIdx++
	}
}

// startSchedule skips the schedule entries before T0 and applies those at
// T0. It reports whether that ended the solve.
func (it *Integrator[T]) startSchedule() bool {
	it.schedIdx = 0
	for it.schedIdx < len(it.sched) && it.dir*(it.schedAt(it.schedIdx).t-it.t0) < 0 {
		it.schedIdx++
	}
	it.fire = it.fire[:0]
	it.dueSchedule()
	if len(it.fire) == 0 {
		return false
	}
	if it.applyEffects() {
		if it.err == nil {
			it.finish(Terminated)
		}
		return true
	}
	return false
}
