package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Jacobians of the stiff methods: from the user and finite differences
// (from ad: odead's TestJacobianFromFunc).

// TestJacobianSources: the user's Jacobian and finite differences give
// the same solution within the tolerance (float32 state).
func TestJacobianSources(t *testing.T) {
	u0 := []float32{1, 0, 0}
	srcs := []struct {
		name string
		prob ode.Problem[float32]
	}{
		{"user", ode.Problem[float32]{F: robertson[float32], Jac: robertsonJac[float32], U0: u0, T1: 1e5}},
		{"fd", ode.Problem[float32]{F: robertson[float32], U0: u0, T1: 1e5}},
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
