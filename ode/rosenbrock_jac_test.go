package ode_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
)

// Jacobians of the stiff methods: from the user, finite differences and ad.

// robertsonAD is Robertson written with ad ops (float32).
func robertsonAD(u, _ ad.Var, _ float64) ad.Var {
	y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	r1 := ad.Scale(y1, 0.04)
	r2 := ad.Scale(ad.Mul(y2, y3), 1e4)
	r3 := ad.Scale(ad.Square(y2), 3e7)
	return ad.Concat(0, ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
}

// TestJacobianSources: the user's Jacobian, finite differences and ADFunc
// give the same solution within the tolerance (float32 state, where all
// three apply).
func TestJacobianSources(t *testing.T) {
	adp := ode.ADFunc(robertsonAD, 3)
	u0 := []float32{1, 0, 0}
	adp.U0, adp.T1 = u0, 1e5
	srcs := []struct {
		name string
		prob ode.Problem[float32]
	}{
		{"user", ode.Problem[float32]{F: robertson[float32], Jac: robertsonJac[float32], U0: u0, T1: 1e5}},
		{"fd", ode.Problem[float32]{F: robertson[float32], U0: u0, T1: 1e5}},
		{"ad", adp},
	}
	for _, m := range stiffMethods {
		for _, s := range srcs {
			sol, err := ode.Solve(context.Background(), s.prob, m, ode.Tol(1e-4, 1e-8))
			if err != nil {
				t.Fatalf("%s %s: %v", m.Name(), s.name, err)
			}
			u := sol.U[1]
			w := weightedErr([]float64{float64(u[0]), float64(u[1]), float64(u[2])}, robertsonRef1e5, 1e-4, 1e-8)
			st := sol.Stats
			t.Logf("%-12s %-4s: u = %v, weighted error %.3g; %d steps (%d rejected), %d f, %d J", m.Name(), s.name, u, w, st.Accepted, st.Rejected, st.FEvals, st.JacEvals)
			if w > robertsonBound {
				t.Errorf("%s %s float32: weighted error %.3g", m.Name(), s.name, w)
			}
		}
	}
}

// The float64 solutions with the user's Jacobian and finite differences
// agree to within the tolerance.
func TestJacobianUserVsFD64(t *testing.T) {
	for _, m := range stiffMethods {
		var us [2][]float64
		for k, jac := range []func(J, u []float64, p []float32, t float64){robertsonJac[float64], nil} {
			sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: robertson[float64], Jac: jac, U0: []float64{1, 0, 0}, T1: 1e5}, m, ode.Tol(1e-8, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			us[k] = sol.U[1]
		}
		if w := weightedErr(us[1], us[0], 1e-8, 1e-12); w > 3 {
			t.Errorf("%s: user Jac vs FD differ by %.3g in the weighted norm", m.Name(), w)
		}
	}
}

func TestADProblem(t *testing.T) {
	prob, err := ode.ADProblem(robertsonAD, []float32{1, 0, 0}, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	J := make([]float32, 9)
	u := []float32{0.9, 2e-5, 0.1}
	prob.Jac(J, u, nil, 0)
	want := make([]float32, 9)
	robertsonJac(want, u, nil, 0)
	for i := range J {
		if d := math.Abs(float64(J[i] - want[i])); d > 1e-5*math.Abs(float64(want[i]))+1e-6 {
			t.Errorf("J[%d] = %g, want %g", i, J[i], want[i])
		}
	}
	du, dw := make([]float32, 3), make([]float32, 3)
	prob.F(du, u, nil, 0)
	robertson(dw, u, nil, 0)
	for i := range du {
		if d := math.Abs(float64(du[i] - dw[i])); d > 1e-6*math.Abs(float64(dw[i]))+1e-9 {
			t.Errorf("du[%d] = %g, want %g", i, du[i], dw[i])
		}
	}
	// Parameters reach f as a constant of shape [len(p)].
	decayAD := func(u, p ad.Var, _ float64) ad.Var { return ad.Neg(ad.Mul(p, u)) }
	pr, err := ode.ADProblem(decayAD, []float32{1}, 0, 1, []float32{2})
	if err != nil {
		t.Fatal(err)
	}
	sol, err := ode.Solve(context.Background(), pr, ode.Rodas5P(), ode.Tol(1e-5, 1e-7))
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(sol.U[1][0]); math.Abs(got-math.Exp(-2)) > 1e-5 {
		t.Errorf("u' = −pu, p = 2: u(1) = %g, want %g", got, math.Exp(-2))
	}
	// A wrong output size is reported up front, and by ADFunc's Err.
	bad := func(u, _ ad.Var, _ float64) ad.Var { return ad.Slice(u, 0, 2) }
	if _, err := ode.ADProblem(bad, []float32{1, 0, 0}, 0, 1, nil); err == nil {
		t.Error("ADProblem accepted a function with 2 outputs for 3 states")
	} else {
		t.Log(err)
	}
	bp := ode.ADFunc(bad, 3)
	copy(du, dw)
	bp.F(du, u, nil, 0)
	if du[0] != dw[0] || bp.Err() == nil {
		t.Errorf("ADFunc with a failing f wrote %v (was %v), Err %v; want du untouched and an error", du, dw, bp.Err())
	}
	bp.U0, bp.T1 = []float32{1, 0, 0}, 1
	_, err = ode.Solve(context.Background(), bp, ode.Rodas5P())
	var oe *ode.Error
	if !errors.As(err, &oe) || oe.Code != ode.Failed || !errors.Is(err, bp.Err()) {
		t.Errorf("solve with a failing ADFunc: %v, want Failed with ADFunc's error", err)
	}
}
