package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

func TestBDFRobertsonQuick(t *testing.T) {
	for _, t1 := range []float64{1e5, 1e11} {
		ref := robertsonRef1e5
		if t1 > 1e6 {
			ref = robertsonRef1e11
		}
		for _, jac := range []bool{true, false} {
			prob := ode.Problem[float64]{F: robertson[float64], U0: []float64{1, 0, 0}, T1: t1}
			if jac {
				prob.Jac = robertsonJac
			}
			sol, err := ode.Solve(context.Background(), prob, ode.BDF(), ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			u := sol.U[len(sol.U)-1]
			st := sol.Stats
			t.Logf("t1 %g jac %v: w %.3g  %v; %+v", t1, jac, weightedErr(u, ref, 1e-6, 1e-8), u, st)
		}
	}
}
