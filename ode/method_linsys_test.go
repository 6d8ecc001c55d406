package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// TestStructuresFloat32: Robertson with a float32 state through every
// structure and linear solver, set on the methods' Linear field, stays
// within the accuracy bound of the dense solve (TestJacobianSources).
func TestStructuresFloat32(t *testing.T) {
	var e []linalg.Entry
	for _, ij := range [][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {2, 1}} {
		e = append(e, linalg.Entry{Row: ij[0], Col: ij[1]})
	}
	full, err := linalg.NewPattern(3, 3, e)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		s    ode.Structure
		ls   ode.LinearSolver
	}{
		{"dense", nil, nil},
		{"band", ode.BandJacobian{Lower: 1, Upper: 2}, nil},
		{"band dense LU", ode.BandJacobian{Lower: 1, Upper: 2}, ode.DenseLU{}},
		{"sparse dense LU", ode.SparseJacobian{Pattern: full}, ode.DenseLU{}},
		{"sparse band LU", ode.SparseJacobian{Pattern: full}, ode.BandLU{}},
		{"sparse", ode.SparseJacobian{Pattern: full}, nil},
		{"band sparse LU", ode.BandJacobian{Lower: 1, Upper: 2}, ode.SparseLU{}},
		{"GMRES band", ode.MatrixFreeJacobian{}, ode.GMRES{Precond: ode.BandPreconditioner{Lower: 1, Upper: 2}}},
		{"GMRES block", ode.MatrixFreeJacobian{}, ode.GMRES{Precond: ode.BlockDiagonalPreconditioner{Block: 3}}},
	}
	methods := []func(ode.LinearSolver) ode.Method{
		func(ls ode.LinearSolver) ode.Method { return ode.Rodas5PMethod{Linear: ls} },
		func(ls ode.LinearSolver) ode.Method { return ode.Rosenbrock23Method{Linear: ls} },
	}
	for _, mk := range methods {
		for _, c := range cases {
			m := mk(c.ls)
			prob := ode.Problem[float32]{F: robertson[float32], U0: []float32{1, 0, 0}, T1: 1e5, JacStructure: c.s}
			sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-4, 1e-8))
			if err != nil {
				t.Errorf("%s %s: %v", m.Name(), c.name, err)
				continue
			}
			u := sol.U[len(sol.U)-1]
			w := weightedErr([]float64{float64(u[0]), float64(u[1]), float64(u[2])}, robertsonRef1e5, 1e-4, 1e-8)
			t.Logf("%-12s %-16s: weighted error %.3g; %+v", m.Name(), c.name, w, sol.Stats)
			if w > robertsonBound {
				t.Errorf("%s %s float32: weighted error %.3g", m.Name(), c.name, w)
			}
		}
	}
}
