package ode_test

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// BDF's tests: the stiff reference problems against published or
// tight-tolerance references, the integrator's features (SaveAt, TStops,
// events, ensembles, float32), failures and allocations. The counts of
// CVODE 6.4 on the same problems, where quoted, come from
// shared/peers/cvode_stiff_bench.c and a Robertson driver written the same
// way (rtol 1e-6, atol 1e-8, dense LU).

// bdfBound is the bound on BDF's global error in the weighted norm of
// weightedErr. BDF's global error is larger than the one-step methods'
// for the same tolerance, as CVODE's is; the largest observed is 19 on
// HIRES at rtol 1e-6.
const bdfBound = 30

func TestBDFRobertson(t *testing.T) {
	cases := []struct {
		rtol, atol float64
		t1         float64
		ref        []float64
		maxSteps   int
	}{
		// CVODE at 1e-6/1e-8 with the user Jacobian: 503 steps, 11 J, 93
		// setups to 1e5; 832 steps, 18 J, 165 setups to 1e11.
		{1e-6, 1e-8, 1e5, robertsonRef1e5, 700},
		{1e-6, 1e-8, 1e11, robertsonRef1e11, 1000},
		{1e-10, 1e-14, 1e5, robertsonRef1e5, 5000},
		{1e-10, 1e-14, 1e11, robertsonRef1e11, 6000},
	}
	for _, c := range cases {
		for _, jac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: robertson[float64], U0: []float64{1, 0, 0}, T1: c.t1}
			if jac {
				prob.Jac = robertsonJac
			}
			sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(c.rtol, c.atol))
			if err != nil {
				t.Fatalf("to %g (Jac %v): %v", c.t1, jac, err)
			}
			u := sol.U[len(sol.U)-1]
			w := weightedErr(u, c.ref, c.rtol, c.atol)
			st := sol.Stats
			t.Logf("t=%-6g rtol %-6g Jac %-5v: weighted error %.3g; %d steps (%d error test, %d Newton failures), %d f, %d J, %d LU, %d Newton",
				c.t1, c.rtol, jac, w, st.Accepted, st.ErrTestFails, st.NewtonFails, st.FEvals, st.JacEvals, st.LUs, st.NewtonIters)
			if w > bdfBound {
				t.Errorf("to %g at rtol %g (Jac %v): weighted error %.3g > %d", c.t1, c.rtol, jac, w, bdfBound)
			}
			if st.Accepted > c.maxSteps {
				t.Errorf("to %g at rtol %g: %d steps, want ≤ %d", c.t1, c.rtol, st.Accepted, c.maxSteps)
			}
			checkBDFStats(t, "Robertson", st)
		}
	}
}

// checkBDFStats checks the counters' relations: the Jacobian and the
// factorisation are reused across steps, every attempt costs at least one
// Newton iteration, and the rejections are the two kinds of failure.
func checkBDFStats(t *testing.T, name string, st ode.Stats) {
	t.Helper()
	if st.Retcode != ode.Success {
		t.Errorf("%s: Retcode %v", name, st.Retcode)
	}
	if st.JacEvals == 0 || st.JacEvals > st.LUs || st.LUs*2 > st.Accepted+st.Rejected {
		t.Errorf("%s: %d Jacobians and %d factorisations for %d attempts: not reused", name, st.JacEvals, st.LUs, st.Accepted+st.Rejected)
	}
	if st.NewtonIters < st.Accepted+st.Rejected {
		t.Errorf("%s: %d Newton iterations for %d attempts", name, st.NewtonIters, st.Accepted+st.Rejected)
	}
	if st.Rejected != st.ErrTestFails+st.NewtonFails {
		t.Errorf("%s: %d rejected, but %d error test and %d Newton failures", name, st.Rejected, st.ErrTestFails, st.NewtonFails)
	}
}

// Robertson to 4e10, Hairer and Wanner's end point, against Rodas5P at
// 1e-10.
func TestBDFRobertson4e10(t *testing.T) {
	prob := ode.Problem[float64]{F: robertson[float64], Jac: robertsonJac[float64], U0: []float64{1, 0, 0}, T1: 4e10}
	sol := bdfAgainstRodas5P(t, "Robertson to 4e10", prob, 1e-10, 1e-14)
	checkBDFStats(t, "Robertson to 4e10", sol.Stats)
}

// bdfAgainstRodas5P solves prob by BDF at rtol 1e-6, atol 1e-8 and checks
// the result against Rodas5P's at rtol, atol.
func bdfAgainstRodas5P(t *testing.T, name string, prob ode.Problem[float64], rtol, atol float64) *ode.Solution[float64] {
	t.Helper()
	ref, err := ode.Solve(bg, prob, ode.Rodas5P(), ode.Tol(rtol, atol))
	if err != nil {
		t.Fatalf("%s: Rodas5P: %v", name, err)
	}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	w := weightedErr(sol.U[1], ref.U[1], 1e-6, 1e-8)
	t.Logf("%s: weighted error %.3g, max error %.3g, %+v", name, w, maxAbsDiff(sol.U[1], ref.U[1]), sol.Stats)
	if w > bdfBound {
		t.Errorf("%s: weighted error %.3g > %d", name, w, bdfBound)
	}
	return sol
}

func TestBDFVanDerPol(t *testing.T) {
	// VDPOL, ε = 1e-6, to t = 2 against the Test Set.
	for _, jac := range []bool{true, false} {
		prob := ode.Problem[float64]{F: vdpolStiff, U0: []float64{2, -0.66}, T1: 2}
		if jac {
			prob.Jac = vdpolStiffJac
		}
		sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-6))
		if err != nil {
			t.Fatalf("VDPOL: %v", err)
		}
		t.Logf("VDPOL Jac %v: u(2) = %.10g, %+v", jac, sol.U[1], sol.Stats)
		if d := math.Abs(sol.U[1][0] - vdpolRef[0]); d > 1e-4 {
			t.Errorf("VDPOL: y1(2) = %.10g, reference %.10g", sol.U[1][0], vdpolRef[0])
		}
		checkBDFStats(t, "VDPOL", sol.Stats)
	}
	// μ = 1000 over nearly two periods, against Rodas5P at 1e-10.
	prob := ode.Problem[float64]{F: vdpMu1e3, U0: []float64{2, 0}, T1: 3000}
	ref, err := ode.Solve(bg, prob, ode.Rodas5P(), ode.Tol(1e-10, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VdP μ=1000: u(3000) = %.8g (Rodas5P %.8g), %+v", sol.U[1], ref.U[1], sol.Stats)
	if d := math.Abs(sol.U[1][0] - ref.U[1][0]); d > 1e-3 {
		t.Errorf("VdP μ=1000: y1(3000) = %.10g, Rodas5P %.10g", sol.U[1][0], ref.U[1][0])
	}
	if sol.Stats.Accepted > 2000 {
		t.Errorf("VdP μ=1000: %d steps, want ≤ 2000", sol.Stats.Accepted)
	}
	checkBDFStats(t, "VdP μ=1000", sol.Stats)
}

// TestBDFHires: HIRES against the Test Set at four tolerances. BDF's
// global error in the weighted norm grows as the tolerance shrinks, as
// CVODE's does: CVODE 6.4 reaches 25, 54, 72 and 204 at rtol 1e-4, 1e-6,
// 1e-8 and 1e-10 (atol rtol/100); BDF 31, 19, 66 and 99.
func TestBDFHires(t *testing.T) {
	const hiresBound = 150
	prob := ode.Problem[float64]{F: hires, U0: hiresU0, T1: 321.8122}
	prev := math.Inf(1)
	for _, rtol := range []float64{1e-4, 1e-6, 1e-8, 1e-10} {
		atol := rtol * 1e-2
		sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(rtol, atol))
		if err != nil {
			t.Fatal(err)
		}
		w := weightedErr(sol.U[1], hiresRef, rtol, atol)
		e := maxAbsDiff(sol.U[1], hiresRef)
		t.Logf("HIRES rtol %g: weighted error %.3g, max error %.3g, %d steps, %d J, %d LU", rtol, w, e, sol.Stats.Accepted, sol.Stats.JacEvals, sol.Stats.LUs)
		if w > hiresBound {
			t.Errorf("HIRES rtol %g: weighted error %.3g > %d", rtol, w, hiresBound)
		}
		if e >= prev/10 {
			t.Errorf("HIRES rtol %g: error %.3g, not 10× below %.3g at 100× looser", rtol, e, prev)
		}
		prev = e
		checkBDFStats(t, "HIRES", sol.Stats)
	}
}

// The 1-D Brusselator at N = 50 with the user's dense Jacobian against
// Rodas5P at rtol 1e-10, and the counts of CVODE at N = 100.
func TestBDFBrusselator1D(t *testing.T) {
	sol := bdfAgainstRodas5P(t, "bruss1d N=50", bruss1d(50, true), 1e-10, 1e-12)
	checkBDFStats(t, "bruss1d N=50", sol.Stats)

	// CVODE 6.4, bruss1d N=100 dense: 222 steps, 263 f, 4 J, 28 setups,
	// 260 Newton iterations, and the solution's RMS 2.522002593.
	sol, err := ode.Solve(bg, bruss1d(100, true), ode.BDF(), ode.Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	st := sol.Stats
	t.Logf("N=100: %+v", st)
	if st.Accepted > 250 || st.JacEvals > 8 || st.LUs > 40 || st.NewtonIters > 300 {
		t.Errorf("N=100: %d steps, %d J, %d LUs, %d Newton iterations; CVODE takes 222, 4, 28, 260", st.Accepted, st.JacEvals, st.LUs, st.NewtonIters)
	}
	var s float64
	for _, v := range sol.U[1] {
		s += v * v
	}
	if rms := math.Sqrt(s / 200); math.Abs(rms-2.522002593) > 1e-6 {
		t.Errorf("N=100: RMS %.10g, CVODE's 2.522002593", rms)
	}
}

// POLLU with a difference-quotient Jacobian, against Rodas5P at 1e-12.
func TestBDFPollu(t *testing.T) {
	// CVODE 6.4: 176 steps, 5 J, 35 setups, 299 Newton iterations.
	sol := bdfAgainstRodas5P(t, "POLLU", pollu(), 1e-12, 1e-14)
	if sol.Stats.Accepted > 220 {
		t.Errorf("POLLU: %d steps; CVODE takes 176", sol.Stats.Accepted)
	}
	checkBDFStats(t, "POLLU", sol.Stats)
}
