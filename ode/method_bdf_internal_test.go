package ode

import (
	"math"
	"testing"

	"pgregory.net/rapid"
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

// TestBDFNordsieckOps: predict is the rescaling by η^j followed by
// Pascal's matrix, z_j ← Σ_{k≥j} C(k, j)·η^k·z_k, and restore undoes the
// prediction, for every order.
func TestBDFNordsieckOps(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(rt, "n")
		q := rapid.IntRange(1, bdfMaxQ).Draw(rt, "q")
		eta := rapid.Float64Range(0.1, 10).Draw(rt, "eta")
		if rapid.Bool().Draw(rt, "same h") {
			eta = 1
		}
		b := &bdf[float64]{n: n, qmax: bdfMaxQ, q: q}
		orig := make([][]float64, q+1)
		for j := 0; j <= q; j++ {
			b.z[j] = make([]float64, n)
			orig[j] = make([]float64, n)
			for i := range n {
				v := rapid.Float64Range(-1, 1).Draw(rt, "z")
				b.z[j][i], orig[j][i] = v, v
			}
		}
		b.predict(eta)
		for j := 0; j <= q; j++ {
			for i := range n {
				want, mag, bin := 0.0, 0.0, 1.0 // bin = C(k, j)
				for k := j; k <= q; k++ {
					v := bin * math.Pow(eta, float64(k)) * orig[k][i]
					want += v
					mag += math.Abs(v)
					bin = bin * float64(k+1) / float64(k+1-j)
				}
				// The floor: rapid draws subnormal z, whose rounding is
				// absolute (seed of CI's stop 39 run: z ~ 1e-310).
				if d := math.Abs(b.z[j][i] - want); d > 1e-14*mag+1e-300 {
					rt.Fatalf("q=%d η=%g: predicted z[%d][%d] = %g, want %g", q, eta, j, i, b.z[j][i], want)
				}
			}
		}
		scale := 0.0 // the largest predicted value: restore's rounding is relative to it
		for j := 0; j <= q; j++ {
			for _, v := range b.z[j] {
				scale = max(scale, math.Abs(v))
			}
		}
		b.restore()
		for j := 0; j <= q; j++ {
			for i := range n {
				want := math.Pow(eta, float64(j)) * orig[j][i]
				if d := math.Abs(b.z[j][i] - want); d > 1e-13*scale+1e-300 {
					rt.Fatalf("q=%d η=%g: restored z[%d][%d] = %g, want %g", q, eta, j, i, b.z[j][i], want)
				}
			}
		}
	})
}

// TestBDFDenseAfterRejection: the last step's polynomial is the same
// whether it is read right after the step or after rejected attempts that
// rescaled the array or changed its order.
func TestBDFDenseAfterRejection(t *testing.T) {
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -u[0] + u[1]
		du[1] = -1000 * u[1]
	}
	it, err := NewIntegrator(Problem[float64]{F: f, U0: []float64{1, 1}, T1: 4}, BDF(), Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	b := it.st.(*bdf[float64])
	want, got := make([]float64, 2), make([]float64, 2)
	for k := 0; k < 200 && !it.Done(); k++ {
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
		it.ensurePoly()
		saved := append([]float64(nil), it.poly...)
		θ := 0.3
		hornerInto(want, saved, it.deg, it.n, θ)
		// Attempts of other sizes, rejected by hand: each predicts and
		// restores, as a failed attempt does.
		it.polyOK = false
		for _, eta := range []float64{0.5, 0.25} {
			if b.qprime != b.q {
				it.ensurePoly()
				b.adjustOrder(b.qprime - b.q)
				b.q = b.qprime
				b.qwait = b.q + 1
			}
			b.predict(eta * it.dt / b.hscale)
			b.hscale = eta * it.dt
			b.restore()
		}
		it.ensurePoly()
		hornerInto(got, it.poly, it.deg, it.n, θ)
		if d := maxAbsDiff(got, want); d > 1e-12*(1+math.Abs(want[0])) {
			t.Fatalf("step %d: after rejections the polynomial at θ = %g is %v, right after the step %v", k, θ, got, want)
		}
		copy(it.poly, saved)
		it.polyOK = true
	}
}

// TestBDFStepsLikeCVODE: on Robertson with the user's Jacobian at rtol
// 1e-6, atol 1e-8, BDF takes CVODE's steps. The reference is CVODE 6.4
// (BDF, dense LU, CV_ONE_STEP) after steps 1, 2, 12, 30, 100 and 150: the
// order and size of that step, and the counts of F evaluations,
// Jacobians, setups (factorisations), Newton iterations and error test
// failures so far. The
// two agree to rounding for the first 150 steps.
func TestBDFStepsLikeCVODE(t *testing.T) {
	cvode := []struct {
		step, q                       int
		h                             float64
		nfe, nje, nsetups, nni, nnetf int
	}{
		{1, 1, 6.925841e-08, 4, 1, 1, 1, 0},
		{2, 1, 2.292396e-05, 13, 3, 5, 10, 1},
		{12, 2, 4.359108e-05, 28, 3, 8, 25, 2},
		{30, 4, 2.243549e-04, 53, 3, 12, 50, 3},
		{100, 5, 3.345841e-01, 137, 4, 24, 134, 3},
		{150, 4, 2.287881e-01, 230, 5, 30, 227, 7},
	}
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
		du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
		du[2] = 3e7 * u[1] * u[1]
	}
	jac := func(J, u []float64, _ []float32, _ float64) {
		J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
		J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
		J[6], J[7], J[8] = 0, 6e7*u[1], 0
	}
	it, err := NewIntegrator(Problem[float64]{F: f, Jac: jac, U0: []float64{1, 0, 0}, T1: 1e5}, BDF(), Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	b := it.st.(*bdf[float64])
	k := 0
	for _, c := range cvode {
		for k < c.step {
			if err := it.Step(); err != nil {
				t.Fatal(err)
			}
			k++
		}
		st := it.Stats()
		if b.q != c.q || math.Abs(it.h-c.h) > 1e-6*c.h || st.FEvals != c.nfe || st.JacEvals != c.nje || st.LUs != c.nsetups || st.NewtonIters != c.nni || st.ErrTestFails != c.nnetf {
			t.Errorf("step %d: order %d, h %.6e, %d f, %d J, %d LUs, %d Newton, %d error test failures; CVODE %d, %.6e, %d, %d, %d, %d, %d",
				k, b.q, it.h, st.FEvals, st.JacEvals, st.LUs, st.NewtonIters, st.ErrTestFails, c.q, c.h, c.nfe, c.nje, c.nsetups, c.nni, c.nnetf)
		}
	}
}
