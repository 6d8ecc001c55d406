package ode

import (
	"math"
	"testing"
)

// TestBDFNordsieckDenseMatchesPoly: BDF's stored dense output (its
// Nordsieck arrays, evaluated where read) gives the values of the
// polynomial in θ that dense computes, to rounding, at 9 points of every
// step: through the readers of the gradients (denseReader) and of
// Solution.At, on a stiff problem with TStops (restarts) and order
// changes, in float64 and float32.
func TestBDFNordsieckDenseMatchesPoly(t *testing.T) {
	t.Run("float64", func(t *testing.T) { nordMatchesPoly[float64](t, 1e-6, 1e-12) })
	t.Run("float32", func(t *testing.T) { nordMatchesPoly[float32](t, 1e-3, 2e-6) })
}

func nordMatchesPoly[T Float](t *testing.T, rtol, tol float64) {
	br := newLinsysBruss(40)
	pf := br.problem()
	u0 := br.u0()
	prob := Problem[T]{U0: make([]T, len(u0)), T1: 10, JacStructure: BandJacobian{Lower: 2, Upper: 2}}
	for i, v := range u0 {
		prob.U0[i] = T(v)
	}
	n := len(u0)
	x, dx := make([]float64, n), make([]float64, n)
	prob.F = func(du, u []T, _ []float32, tt float64) {
		for i, v := range u {
			x[i] = float64(v)
		}
		pf.F(dx, x, nil, tt)
		for i, v := range dx {
			du[i] = T(v)
		}
	}
	it, err := NewIntegrator(prob, BDF(), Tol(rtol, rtol*1e-2), Dense(), TStops(2.5, 7))
	if err != nil {
		t.Fatal(err)
	}
	// The old dense output, the polynomial in θ, of every step.
	var polys, starts [][]T
	it.onAccept = func() {
		it.ensurePoly() // computed before a restart at a stop
		polys = append(polys, append([]T(nil), it.poly...))
		starts = append(starts, append([]T(nil), it.uPrev...))
	}
	orders := map[int]bool{}
	for !it.Done() {
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
		orders[it.denseN[len(it.denseN)-1].q] = true
	}
	if len(it.denseN) != len(polys) || len(it.denseT) != len(polys) {
		t.Fatalf("%d Nordsieck steps, %d steps, %d polynomials", len(it.denseN), len(it.denseT), len(polys))
	}
	if len(orders) < 3 {
		t.Errorf("orders %v: want at least 3 for the test to mean something", orders)
	}
	sol := it.Solution()
	rd := denseReader[T]{it: it}
	old, got, at := make([]T, n), make([]T, n), make([]T, n)
	worst, jump := 0.0, 0.0
	for k, p := range polys {
		t0, h := it.denseT[k], it.denseH[k]
		for j := 0; j <= 8; j++ {
			θ := float64(j) / 8
			hornerInto(old, p, it.deg, n, T(θ))
			tt := t0 + θ*h
			if j == 8 {
				tt = min(tt, it.t) // Solution.At stops at the end
			}
			rd.eval(got, tt)
			if err := sol.AtInto(at, tt); err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, v := range old {
				scale = max(scale, math.Abs(float64(v)))
			}
			if j == 0 { // continuous: the step starts where the last one ended
				for i, v := range starts[k] {
					jump = max(jump, math.Abs(float64(got[i]-v))/scale)
				}
			}
			// At θ = 1 the readers move on to the next step, whose θ = 0 is
			// the same state; compare where the step is its own.
			if j == 8 && k+1 < len(polys) {
				hornerInto(old, polys[k+1], it.deg, n, 0)
			}
			for i := range old {
				d := math.Max(math.Abs(float64(got[i]-old[i])), math.Abs(float64(at[i]-old[i]))) / scale
				worst = max(worst, d)
				if d > tol || math.IsNaN(d) {
					t.Fatalf("step %d of %d (order %d), θ = %g, component %d: stored %g, Solution.At %g, polynomial in θ %g",
						k, len(polys), it.denseN[k].q, θ, i, got[i], at[i], old[i])
				}
			}
		}
	}
	t.Logf("%d steps, orders %v: largest difference %.2g, jump %.2g relative to max|u|", len(polys), orders, worst, jump)
	ulp := 0x1p-52
	if _, ok := any(T(0)).(float32); ok {
		ulp = 0x1p-23
	}
	if jump > 4*ulp {
		t.Errorf("the stored output jumps by %.2g relative to max|u| between steps, want rounding", jump)
	}
}
