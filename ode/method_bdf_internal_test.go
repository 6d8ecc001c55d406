package ode

import (
	"math"
	"testing"
)

// TestBDFOrders: on a linear problem with a known solution the error
// shrinks with the tolerance, and the higher orders carry more of the
// steps as the tolerance tightens.
func TestBDFOrders(t *testing.T) {
	// y' = A·y with A = [[−1, 1], [0, −1000]] from y(0) = (1, 1):
	// y2 = e^−1000t and y1 = (1 + 1/999)·e^−t − e^−1000t/999.
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -u[0] + u[1]
		du[1] = -1000 * u[1]
	}
	exact := func(t float64) []float64 {
		// y2 = e^−1000t; y1 = c·e^−t − e^−1000t/999 with c = 1 + 1/999.
		return []float64{(1+1.0/999)*math.Exp(-t) - math.Exp(-1000*t)/999, math.Exp(-1000 * t)}
	}
	prob := Problem[float64]{F: f, U0: []float64{1, 1}, T1: 4}
	prevErr, prevHigh := math.Inf(1), -1.0
	for _, rtol := range []float64{1e-3, 1e-5, 1e-7, 1e-9} {
		it, err := NewIntegrator(prob, BDF(), Tol(rtol, rtol*1e-3))
		if err != nil {
			t.Fatal(err)
		}
		b := it.st.(*bdf[float64])
		var at [bdfMaxQ + 1]int
		for !it.Done() {
			if err := it.Step(); err != nil {
				t.Fatal(err)
			}
			at[b.q]++
		}
		e := maxAbsDiff(it.U(), exact(4))
		steps := it.Stats().Accepted
		high := float64(at[3]+at[4]+at[5]) / float64(steps)
		t.Logf("rtol %g: error %.3g, %d steps at orders 1–5: %v", rtol, e, steps, at[1:])
		if e >= prevErr/10 {
			t.Errorf("rtol %g: error %.3g, not 10× below %.3g at 100× looser", rtol, e, prevErr)
		}
		if at[4]+at[5] == 0 && rtol <= 1e-7 {
			t.Errorf("rtol %g: no steps at orders 4 and 5: %v", rtol, at[1:])
		}
		if high < prevHigh-0.05 {
			t.Errorf("rtol %g: %.2f of the steps at orders 3–5, fewer than %.2f at the looser tolerance", rtol, high, prevHigh)
		}
		prevErr, prevHigh = e, high
	}
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}
