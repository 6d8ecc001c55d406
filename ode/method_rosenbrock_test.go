package ode_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Robertson's chemical kinetics from the Bari test set, in float64 and, for
// the tests of the Jacobian sources, float32. The constants are untyped,
// rounded once to F.
func robertson[F float32 | float64](du, u []F, _ []float32, _ float64) {
	du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
	du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
	du[2] = 3e7 * u[1] * u[1]
}

func robertsonJac[F float32 | float64](J, u []F, _ []float32, _ float64) {
	J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
	J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
	J[6], J[7], J[8] = 0, 6e7*u[1], 0
}

// Reference values: Test Set for IVP Solvers (Bari).
var (
	robertsonRef1e5  = []float64{1.786592114216759e-02, 7.274751468464565e-08, 9.821340061103143e-01}
	robertsonRef1e11 = []float64{0.2083340149701255e-07, 0.8333360770334713e-13, 0.9999999791665050}
)

// The stiff Van der Pol oscillator in Hairer's scaling (VDPOL of the Bari
// test set): y1' = y2, y2' = ((1 − y1²)y2 − y1)/ε, ε = 1e-6, on [0, 2].
func vdpolStiff(du, u []float64, _ []float32, _ float64) {
	du[0] = u[1]
	du[1] = ((1-u[0]*u[0])*u[1] - u[0]) * 1e6
}

func vdpolStiffJac(J, u []float64, _ []float32, _ float64) {
	J[0], J[1] = 0, 1
	J[2], J[3] = (-2*u[0]*u[1]-1)*1e6, (1-u[0]*u[0])*1e6
}

// Van der Pol with μ = 1000: y1' = y2, y2' = μ(1 − y1²)y2 − y1 (period
// about (3 − 2 ln 2)μ ≈ 1614).
func vdpMu1e3(du, u []float64, _ []float32, _ float64) {
	du[0] = u[1]
	du[1] = 1000*(1-u[0]*u[0])*u[1] - u[0]
}

var stiffMethods = []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()}

// TestStiffConvergenceOrder: fixed steps on the manufactured non-autonomous
// problem; the error at the step ends falls with the method's order and the
// dense output's error with the interpolant's (2 and 4).
func TestStiffConvergenceOrder(t *testing.T) {
	checkConvergence(t, []convergenceCase{
		{ode.Rosenbrock23(), 2, 2, []int{40, 57, 80, 113, 160}},
		{ode.Rodas5P(), 5, 4, []int{10, 14, 20, 28, 40}},
	}, func(t *testing.T, n int, sol *ode.Solution[float64]) {
		if sol.Stats.JacEvals != n || sol.Stats.LUs != n {
			t.Errorf("N=%d: %d Jacobians and %d LUs, want one each per step", n, sol.Stats.JacEvals, sol.Stats.LUs)
		}
	})
}

// robertsonBound is the bound on the weighted error of the Robertson
// solves, RMS((u − ref)/(atol + rtol·|ref|)), as accuracyBound in
// accuracy_test.go. The largest observed is 14, Rosenbrock23 at 1e-6/1e-8
// to t = 1e5 (a second-order method: its global error goes like rtol^(2/3),
// 7e-4, 4e-5, 2e-6 relative in y1 at rtol 1e-4, 1e-6, 1e-8); Rodas5P stays
// below 0.2 at 1e-6 and 1e-10; float32 with a finite-difference Jacobian
// reaches 12.
const robertsonBound = accuracyBound

func TestRobertson(t *testing.T) {
	cases := []struct {
		m          ode.Method
		rtol, atol float64
		t1         float64
		ref        []float64
		maxSteps   int // a sanity bound on accepted steps
	}{
		{ode.Rosenbrock23(), 1e-6, 1e-8, 1e5, robertsonRef1e5, 3000},
		{ode.Rosenbrock23(), 1e-6, 1e-8, 1e11, robertsonRef1e11, 4000},
		{ode.Rodas5P(), 1e-6, 1e-8, 1e5, robertsonRef1e5, 300},
		{ode.Rodas5P(), 1e-6, 1e-8, 1e11, robertsonRef1e11, 400},
		{ode.Rodas5P(), 1e-10, 1e-14, 1e5, robertsonRef1e5, 2000},
		{ode.Rodas5P(), 1e-10, 1e-14, 1e11, robertsonRef1e11, 2500},
	}
	for _, c := range cases {
		for _, jac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: robertson[float64], U0: []float64{1, 0, 0}, T1: c.t1}
			if jac {
				prob.Jac = robertsonJac
			}
			sol, err := ode.Solve(context.Background(), prob, c.m, ode.Tol(c.rtol, c.atol))
			if err != nil {
				t.Fatalf("%s to %g (Jac %v): %v", c.m.Name(), c.t1, jac, err)
			}
			u := sol.U[len(sol.U)-1]
			w := weightedErr(u, c.ref, c.rtol, c.atol)
			st := sol.Stats
			t.Logf("%-12s t=%-6g rtol %-6g Jac %-5v: weighted error %.3g, rel. errors %.2g %.2g %.2g; %d steps (%d rejected), %d f, %d J, %d LU",
				c.m.Name(), c.t1, c.rtol, jac, w, relErr(u[0], c.ref[0]), relErr(u[1], c.ref[1]), relErr(u[2], c.ref[2]),
				st.Accepted, st.Rejected, st.FEvals, st.JacEvals, st.LUs)
			if w > robertsonBound {
				t.Errorf("%s to %g at rtol %g (Jac %v): weighted error %.3g > %d", c.m.Name(), c.t1, c.rtol, jac, w, robertsonBound)
			}
			if st.Accepted > c.maxSteps {
				t.Errorf("%s to %g at rtol %g: %d steps, want ≤ %d", c.m.Name(), c.t1, c.rtol, st.Accepted, c.maxSteps)
			}
			// One Jacobian per step attempt that starts a new step; one LU
			// per attempt.
			if st.JacEvals != st.Accepted || st.LUs != st.Accepted+st.Rejected {
				t.Errorf("%s: %d Jacobians, %d LUs for %d accepted and %d rejected steps", c.m.Name(), st.JacEvals, st.LUs, st.Accepted, st.Rejected)
			}
		}
	}
}

func relErr(x, ref float64) float64 { return math.Abs(x-ref) / math.Abs(ref) }

// TestRodas5PRobertsonTight: at rtol 1e-10, atol 1e-14 the components
// above atol are right to about rtol (observed: y1 2.4e-11 and y3 4e-13
// relative at t = 1e5; y3 7e-15 at 1e11, where y1 = 2e-8 is 2e-16 off).
func TestRodas5PRobertsonTight(t *testing.T) {
	for _, c := range []struct {
		t1  float64
		ref []float64
	}{{1e5, robertsonRef1e5}, {1e11, robertsonRef1e11}} {
		prob := ode.Problem[float64]{F: robertson[float64], Jac: robertsonJac[float64], U0: []float64{1, 0, 0}, T1: c.t1}
		sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-10, 1e-14))
		if err != nil {
			t.Fatal(err)
		}
		u := sol.U[1]
		for _, i := range []int{0, 2} {
			if d := math.Abs(u[i] - c.ref[i]); d > 1e-9*math.Abs(c.ref[i])+1e-14 {
				t.Errorf("t=%g: y%d = %.16g, reference %.16g (relative error %.3g)", c.t1, i+1, u[i], c.ref[i], d/c.ref[i])
			}
		}
	}
}

func TestStiffVanDerPol(t *testing.T) {
	cases := []struct {
		m          ode.Method
		rtol       float64
		maxSteps   int     // VDPOL
		maxSteps3  int     // μ = 1000
		vdpolError float64 // bound on |y1(2) − ref|
	}{
		// Rosenbrock23 at its tolerances; Rodas5P tighter.
		{ode.Rosenbrock23(), 1e-4, 1500, 1000, 1e-3},
		{ode.Rodas5P(), 1e-6, 1000, 1000, 1e-5},
	}
	for _, c := range cases {
		m := c.m
		// ε = 1e-6 to t = 2 (one relaxation jump).
		for _, jac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: vdpolStiff, U0: []float64{2, -0.66}, T1: 2}
			if jac {
				prob.Jac = vdpolStiffJac
			}
			sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(c.rtol, c.rtol))
			if err != nil {
				t.Fatalf("%s VDPOL: %v", m.Name(), err)
			}
			st := sol.Stats
			t.Logf("%-12s VDPOL ε=1e-6 rtol %g Jac %-5v: u(2) = %.10g, %d steps (%d rejected), %d f, %d J, %d LU",
				m.Name(), c.rtol, jac, sol.U[1], st.Accepted, st.Rejected, st.FEvals, st.JacEvals, st.LUs)
			if st.Accepted > c.maxSteps {
				t.Errorf("%s VDPOL: %d steps, want ≤ %d", m.Name(), st.Accepted, c.maxSteps)
			}
			if d := math.Abs(sol.U[1][0] - vdpolRef[0]); d > c.vdpolError {
				t.Errorf("%s VDPOL: y1(2) = %.10g, reference %.10g", m.Name(), sol.U[1][0], vdpolRef[0])
			}
		}
		// μ = 1000 over nearly two periods.
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: vdpMu1e3, U0: []float64{2, 0}, T1: 3000}, m, ode.Tol(c.rtol, c.rtol))
		if err != nil {
			t.Fatalf("%s VdP μ=1000: %v", m.Name(), err)
		}
		t.Logf("%-12s VdP μ=1000 rtol %g: u(3000) = %.6g, %d steps (%d rejected), %d f", m.Name(), c.rtol, sol.U[1], sol.Stats.Accepted, sol.Stats.Rejected, sol.Stats.FEvals)
		if sol.Stats.Accepted > c.maxSteps3 {
			t.Errorf("%s VdP μ=1000: %d steps, want ≤ %d", m.Name(), sol.Stats.Accepted, c.maxSteps3)
		}
	}
}

// VDPOL ε = 1e-6 at t = 2, Test Set for IVP Solvers (Bari).
var vdpolRef = []float64{1.706167732170483, -0.8928097010247975}

// TestStiffStats: Jacobians, LUs and evaluations are counted.
func TestStiffStats(t *testing.T) {
	for _, m := range stiffMethods {
		for _, jac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: robertson[float64], U0: []float64{1, 0, 0}, T1: 1e3}
			if jac {
				prob.Jac = robertsonJac
			}
			sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			st := sol.Stats
			// Per attempt: stages (Rosenbrock23: 2 incl. FSAL; Rodas5P: 7 new
			// + 1 to start the next step); per Jacobian: ∂F/∂t (1) and, by
			// finite differences, n = 3.
			perJ := 1
			if !jac {
				perJ += 3
			}
			if st.JacEvals == 0 || st.LUs < st.JacEvals || st.Retcode != ode.Success {
				t.Errorf("%s Jac %v: stats %+v", m.Name(), jac, st)
			}
			if st.FEvals < st.JacEvals*perJ+2*st.Accepted {
				t.Errorf("%s Jac %v: %d f evaluations for %d Jacobians and %d steps", m.Name(), jac, st.FEvals, st.JacEvals, st.Accepted)
			}
			t.Logf("%-12s Jac %-5v: %+v", m.Name(), jac, st)
		}
	}
}

// A singular W (here J = I/(γh) exactly cannot be hit; instead the user's
// Jacobian is NaN-free but W is singular at the fixed step) ends the solve
// with Retcode Singular; a non-finite user Jacobian with NonFinite naming
// the Jacobian.
func TestStiffSingularAndBadJacobian(t *testing.T) {
	f := func(du, u []float64, _ []float32, _ float64) { du[0] = u[0] }
	// W = 1 − hγ·J = 0 for J = 1/(hγ): with FixedStep(h) there is no
	// smaller step to try.
	const h = 0.1
	gammas := map[string]float64{"Rosenbrock23": 1 / (2 + math.Sqrt2), "Rodas5P": 0.21193756319429014}
	for _, m := range stiffMethods {
		g := gammas[m.Name()]
		jac := func(J, _ []float64, _ []float32, _ float64) { J[0] = 1 / (h * g) }
		_, err := ode.Solve(context.Background(), ode.Problem[float64]{F: f, Jac: jac, U0: []float64{1}, T1: 1}, m, ode.FixedStep(h))
		var oe *ode.Error
		if !errors.As(err, &oe) || oe.Code != ode.Singular {
			t.Errorf("%s: singular W gave %v, want Retcode Singular", m.Name(), err)
		} else {
			t.Log(err)
		}
		// Adaptive: the same Jacobian is harmless (a smaller step is taken).
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: f, Jac: jac, U0: []float64{1}, T1: 1}, m, ode.InitialStep(h))
		if err != nil {
			t.Errorf("%s adaptive with an unlucky first step: %v", m.Name(), err)
		} else if sol.Stats.Rejected == 0 {
			t.Errorf("%s: W singular at the first step but nothing rejected: %+v", m.Name(), sol.Stats)
		}
		// A Jacobian that is NaN everywhere: W is singular at any step.
		nan := func(J, _ []float64, _ []float32, _ float64) { J[0] = math.NaN() }
		_, err = ode.Solve(context.Background(), ode.Problem[float64]{F: f, Jac: nan, U0: []float64{1}, T1: 1}, m)
		if !errors.As(err, &oe) || oe.Code != ode.NonFinite || oe.Component != 0 {
			t.Errorf("%s: NaN Jacobian gave %v, want NonFinite in component 0", m.Name(), err)
		} else {
			t.Log(err)
		}
	}
}

// rerun returns a function that solves again in it from u0 over [0, t1],
// failing t on an error.
func rerun[T ode.Float](t *testing.T, it *ode.Integrator[T], u0 []T, t1 float64) func() {
	return func() {
		if err := it.Reinit(u0, 0, t1, nil); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStiffZeroAllocs: a warm Integrator (Reinit + Run) allocates nothing,
// with the user's Jacobian and with finite differences.
func TestStiffZeroAllocs(t *testing.T) {
	u0 := []float64{1, 0, 0}
	for _, m := range stiffMethods {
		for _, jac := range []func(J, u []float64, p []float32, t float64){robertsonJac[float64], nil} {
			it, err := ode.NewIntegrator(ode.Problem[float64]{F: robertson[float64], Jac: jac, U0: u0, T1: 1e5}, m, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			run := rerun(t, it, u0, 1e5)
			run()
			if a := testing.AllocsPerRun(20, run); a != 0 {
				t.Errorf("%s (Jac %v): %.1f allocations per warm solve", m.Name(), jac != nil, a)
			}
		}
	}
}

// Backwards in time and with TStops/SaveAt through the dense output.
func TestStiffOutputs(t *testing.T) {
	bound := map[string]float64{"Rosenbrock23": 2e-4, "Rodas5P": 1e-6}
	for _, m := range stiffMethods {
		ts := []float64{0.5, 1, 2.5}
		y1, y2 := manufExact(0)
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: manuf, U0: []float64{y1, y2}, T1: 3}, m,
			ode.Tol(1e-8, 1e-10), ode.SaveAt(ts...), ode.TStops(1.7))
		if err != nil {
			t.Fatal(err)
		}
		for i, ti := range sol.T {
			e1, e2 := manufExact(ti)
			if d := math.Hypot(sol.U[i][0]-e1, sol.U[i][1]-e2); d > bound[m.Name()] {
				t.Errorf("%s SaveAt %g: error %.3g", m.Name(), ti, d)
			}
		}
		e1, e2 := manufExact(3)
		back, err := ode.Solve(context.Background(), ode.Problem[float64]{F: manuf, U0: []float64{e1, e2}, T0: 3, T1: 0}, m, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		d := math.Hypot(back.U[1][0]-y1, back.U[1][1]-y2)
		t.Logf("%s: backwards from 3 to 0 at rtol 1e-8: error %.3g", m.Name(), d)
		if d > bound[m.Name()] {
			t.Errorf("%s backwards: error %.3g", m.Name(), d)
		}
	}
}

// Events through the Rosenbrock interpolants: Robertson's y3 reaches 0.5
// (terminate), and a continuing event that resets the state restarts the
// method (new Jacobian at the new state).
func TestStiffEvents(t *testing.T) {
	var tHalf [2]float64
	for k, m := range stiffMethods {
		ev := ode.Event[float64]{G: func(u []float64, _ float64) float64 { return u[2] - 0.5 }, Direction: 1}
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: robertson[float64], Jac: robertsonJac[float64], U0: []float64{1, 0, 0}, T1: 1e5, Events: []ode.Event[float64]{ev}}, m, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		n := len(sol.T) - 1
		if sol.Stats.Retcode != ode.Terminated || math.Abs(sol.U[n][2]-0.5) > 1e-6 {
			t.Fatalf("%s: ended %v at t=%g with y3=%g", m.Name(), sol.Stats.Retcode, sol.T[n], sol.U[n][2])
		}
		tHalf[k] = sol.T[n]
		// Reset y to (1, 0, 0) when y3 crosses 0.5, once: y3 then crosses
		// again at twice the time.
		fired := 0
		reset := ode.Event[float64]{G: func(u []float64, _ float64) float64 { return u[2] - 0.5 }, Direction: 1,
			Affect: func(u []float64, _ float64) bool {
				fired++
				u[0], u[1], u[2] = 1, 0, 0
				return fired == 2
			}}
		sol, err = ode.Solve(context.Background(), ode.Problem[float64]{F: robertson[float64], Jac: robertsonJac[float64], U0: []float64{1, 0, 0}, T1: 1e5, Events: []ode.Event[float64]{reset}}, m, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		n = len(sol.T) - 1
		if fired != 2 || math.Abs(sol.T[n]-2*tHalf[k]) > 1e-5*tHalf[k] {
			t.Errorf("%s: the reset event fired %d times, ending at %g, want 2 at %g", m.Name(), fired, sol.T[n], 2*tHalf[k])
		}
	}
	t.Logf("y3 = 0.5 at t = %.10g (Rosenbrock23), %.10g (Rodas5P)", tHalf[0], tHalf[1])
	if math.Abs(tHalf[0]-tHalf[1]) > 1e-4*tHalf[1] {
		t.Errorf("the methods disagree on the event time: %g, %g", tHalf[0], tHalf[1])
	}
}

func TestSingularRetcodeString(t *testing.T) {
	if s := ode.Singular.String(); s != "Singular" {
		t.Errorf("Singular.String() = %q", s)
	}
}

// heat is u' = D·Δu on n interior points of [0, 1] with zero boundary
// values: a stiff linear system of size n (eigenvalues down to −4D(n+1)²).
// Its semi-discrete solution from u_i(0) = sin(πx_i) is
// u_i(t) = sin(πx_i)·exp(λt) with λ = −4D(n+1)² sin²(π/(2(n+1))).
func heat(n int, D float64) (func(du, u []float64, _ []float32, _ float64), func(J, u []float64, _ []float32, _ float64), []float64, func(t float64) []float64) {
	c := D * float64((n+1)*(n+1))
	f := func(du, u []float64, _ []float32, _ float64) {
		for i := range u {
			l, r := 0.0, 0.0
			if i > 0 {
				l = u[i-1]
			}
			if i < n-1 {
				r = u[i+1]
			}
			du[i] = c * (l - 2*u[i] + r)
		}
	}
	jac := func(J, _ []float64, _ []float32, _ float64) {
		clear(J)
		for i := 0; i < n; i++ {
			J[i*n+i] = -2 * c
			if i > 0 {
				J[i*n+i-1] = c
			}
			if i < n-1 {
				J[i*n+i+1] = c
			}
		}
	}
	u0 := make([]float64, n)
	for i := range u0 {
		u0[i] = math.Sin(math.Pi * float64(i+1) / float64(n+1))
	}
	s := math.Sin(math.Pi / float64(2*(n+1)))
	lam := -4 * c * s * s
	exact := func(t float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = u0[i] * math.Exp(lam*t)
		}
		return out
	}
	return f, jac, u0, exact
}

// TestStiffHeat100: n = 100, the size the dense LU is meant for.
func TestStiffHeat100(t *testing.T) {
	const n = 100
	f, jac, u0, exact := heat(n, 1)
	ref := exact(0.1)
	for _, m := range stiffMethods {
		for _, withJac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: f, U0: u0, T1: 0.1}
			if withJac {
				prob.Jac = jac
			}
			sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			w := weightedErr(sol.U[1], ref, 1e-6, 1e-8)
			st := sol.Stats
			t.Logf("%-12s Jac %-5v: weighted error %.3g, %d steps (%d rejected), %d f, %d J, %d LU", m.Name(), withJac, w, st.Accepted, st.Rejected, st.FEvals, st.JacEvals, st.LUs)
			if w > accuracyBound {
				t.Errorf("%s heat n=100 (Jac %v): weighted error %.3g", m.Name(), withJac, w)
			}
		}
	}
}

// A forcing with a kink at t = 1 (a ramp that starts there), with
// TStops(1): the finite difference in t stays inside each step, so the
// steps before the stop never see the ramp. u' = −1000u + 1000·max(0, t−1),
// u(0) = 1 has u(2) = 0.999 + 0.001·e^−1000.
func TestStiffTimeDependentKink(t *testing.T) {
	f := func(du, u []float64, _ []float32, t float64) {
		du[0] = -1000*u[0] + 1000*max(0, t-1)
	}
	for _, m := range stiffMethods {
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: f, U0: []float64{1}, T1: 2}, m, ode.Tol(1e-6, 1e-8), ode.TStops(1), ode.SaveAt(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		st := sol.Stats
		t.Logf("%s: u(1) = %.3g, u(2) = %.12g; %d steps (%d rejected)", m.Name(), sol.U[0][0], sol.U[1][0], st.Accepted, st.Rejected)
		if math.Abs(sol.U[0][0]) > 1e-8 || math.Abs(sol.U[1][0]-0.999) > 1e-6 || st.Accepted > 600 {
			t.Errorf("%s: u(1) = %g, u(2) = %.10g after %d steps", m.Name(), sol.U[0][0], sol.U[1][0], st.Accepted)
		}
	}
}

// Rosenbrock23 is a W-method: second order with any Jacobian, even J = 0.
func TestRosenbrock23WMethod(t *testing.T) {
	zero := func(J, _ []float64, _ []float32, _ float64) { clear(J) }
	var hs, errs []float64
	for _, n := range []int{40, 57, 80, 113, 160} {
		h := 3.0 / float64(n)
		y1, y2 := manufExact(0)
		sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: manuf, Jac: zero, U0: []float64{y1, y2}, T1: 3}, ode.Rosenbrock23(), ode.FixedStep(h))
		if err != nil {
			t.Fatal(err)
		}
		e1, e2 := manufExact(3)
		hs, errs = append(hs, h), append(errs, math.Hypot(sol.U[1][0]-e1, sol.U[1][1]-e2))
	}
	if p := slope(hs, errs); math.Abs(p-2) > 0.3 {
		t.Errorf("Rosenbrock23 with J = 0: order %.2f, want 2", p)
	}
}

// A NaN that F puts only in component 1 is reported in component 1 (W⁻¹
// spreads it over every component of the trial state, which named 0),
// whether ∂F/∂t sees it or only a stage does, with a Jacobian from the
// user or from finite differences.
func TestStiffNaNNamesFsComponent(t *testing.T) {
	jac := func(J, _ []float64, _ []float32, _ float64) { J[0], J[1], J[2], J[3] = -1, 0, 0, -1 }
	cases := map[string]func(du, u []float64, _ []float32, t float64){
		"in time": func(du, u []float64, _ []float32, t float64) {
			du[0], du[1] = -u[0], -u[1]
			if t > 0.5 {
				du[1] = math.NaN()
			}
		},
		"in a stage": func(du, u []float64, _ []float32, t float64) {
			du[0], du[1] = -u[0], -u[1]
			if t > 0.5 && t < 0.7 { // only stage times can fall here
				du[1] = math.NaN()
			}
		},
	}
	for _, m := range stiffMethods {
		for name, f := range cases {
			for _, j := range []func(J, u []float64, p []float32, t float64){jac, nil} {
				_, err := ode.Solve(context.Background(), ode.Problem[float64]{F: f, Jac: j, U0: []float64{1, 1}, T1: 2}, m)
				var oe *ode.Error
				if !errors.As(err, &oe) || oe.Code != ode.NonFinite || oe.Component != 1 {
					t.Errorf("%s, NaN %s, user Jacobian %v: got %v, want NonFinite in component 1", m.Name(), name, j != nil, err)
				} else if !strings.Contains(err.Error(), "component 1") {
					t.Errorf("%s, NaN %s: message %q does not name component 1", m.Name(), name, err)
				}
			}
		}
	}
}
