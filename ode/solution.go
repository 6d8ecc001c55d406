package ode

// Solution is the result of Solve: the saved times T and states U, the
// counters and the return code. By default it saves the start and the end;
// SaveAt and SaveEveryStep save more. With Dense it keeps the piecewise
// interpolant for At.
//
// A solve that a terminating event ended (Retcode Terminated) ends its T
// and U with the event's time and its state after the effect, whatever
// SaveAt asks: after the SaveAt times it reached, which are all before or
// at the event. The SaveAt times after the event are not saved, so
// len(T) differs from the number of SaveAt times; compare T with them.
// The point is not repeated when it is already the last one saved: a
// SaveAt time at the event with an effect that left the state as it was,
// or SaveEveryStep, which saves every event's point before and after its
// effect.
type Solution[T Float] struct {
	T     []float64
	U     [][]T
	Stats Stats
	dense *denseOut[T]
}

// denseOut is the continuous solution. Step k covers [ts[k], ts[k+1]),
// the last one up to tEnd, with u(ts[k] + θ·hs[k]) = Σ_j θ^j c[k][j]. The
// coefficients are stored flat, (deg+1)·n values per step; or, when nord
// is not empty, in the form of a nordDenser (BDF's Nordsieck arrays).
type denseOut[T Float] struct {
	n, deg        int
	dir, t0, tEnd float64
	ts, hs        []float64
	c             []T
	nord          []nordStep
	u0            []T
}

// At returns the solution at t through the dense interpolant. It needs the
// Dense option, and t within the solved span: from T0 to T1, or to the
// time the solve stopped. At an event time it returns the state after the
// event's Affect.
func (s *Solution[T]) At(t float64) ([]T, error) {
	if s.dense == nil {
		return nil, errorf("Solution.At needs the Dense() option")
	}
	dst := make([]T, s.dense.n)
	if err := s.AtInto(dst, t); err != nil {
		return nil, err
	}
	return dst, nil
}

// AtInto is At writing into dst (len n); it does not allocate.
func (s *Solution[T]) AtInto(dst []T, t float64) error {
	d := s.dense
	if d == nil {
		return errorf("Solution.At needs the Dense() option")
	}
	if len(dst) != d.n {
		return errorf("Solution.AtInto: len(dst) = %d, want %d", len(dst), d.n)
	}
	if !(d.dir*(t-d.t0) >= 0 && d.dir*(t-d.tEnd) <= 0) {
		return errorf("Solution.At: t=%g is outside the solved span [%g, %g]", t, d.t0, d.tEnd)
	}
	if len(d.ts) == 0 {
		copy(dst, d.u0)
		return nil
	}
	// The last step that starts at or before t (in the direction of time).
	lo, hi := 0, len(d.ts)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if d.dir*(d.ts[mid]-t) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	θ := (t - d.ts[lo]) / d.hs[lo]
	if len(d.nord) > 0 {
		nordInto(dst, d.c, d.nord[lo], d.n, θ)
		return nil
	}
	k := (d.deg + 1) * d.n
	hornerInto(dst, d.c[lo*k:(lo+1)*k], d.deg, d.n, T(θ))
	return nil
}

// Solution returns a copy of the current solve's outputs as a Solution.
// It allocates; the integrator stays usable.
func (it *Integrator[T]) Solution() *Solution[T] {
	sol := &Solution[T]{Stats: it.stats}
	sol.T = append([]float64(nil), it.outT...)
	flat := append([]T(nil), it.outU...)
	sol.U = make([][]T, len(sol.T))
	for i := range sol.U {
		sol.U[i] = flat[i*it.n : (i+1)*it.n : (i+1)*it.n]
	}
	if it.o.dense {
		sol.dense = &denseOut[T]{
			n: it.n, deg: it.deg, dir: it.dir, t0: it.t0, tEnd: it.t,
			ts: append([]float64(nil), it.denseT...), hs: append([]float64(nil), it.denseH...),
			c: append([]T(nil), it.denseC...), nord: append([]nordStep(nil), it.denseN...),
		}
		if len(sol.dense.ts) == 0 {
			sol.dense.u0 = append([]T(nil), it.u...)
		}
	}
	return sol
}
