package ode

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTransposedSolves: for every direct structure and solver (dense LU,
// band LU, sparse LU, and the gathered and filled combinations), the
// transposed solve of the discrete adjoint is the adjoint of the solve:
// ⟨W⁻ᵀb, r⟩ = ⟨b, W⁻¹r⟩ for random b and r, with W = I − cJ of the
// Brusselator's non-symmetric J.
func TestTransposedSolves(t *testing.T) {
	b := newLinsysBruss(12)
	cases := append(linsysCases(b), linsysCase{name: "dense"}, linsysCase{name: "dense 2", s: DenseJacobian{}})
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		if _, ok := c.ls.(GMRES); ok {
			continue
		}
		prob := c.problem(b)
		if c.name == "dense 2" {
			prob.U0 = prob.U0[:2] // pivoting, and the unrolled solves of n ≤ 3
			prob.F = func(du, u []float64, _ []float32, _ float64) { du[0], du[1] = u[0]*u[1]-3*u[1], u[0]*u[0]+0.5*u[1] }
		}
		for _, m := range []Method{Rodas5PMethod{Linear: c.ls}, Rosenbrock23Method{Linear: c.ls}} {
			it, err := initWith(prob, m, defaultOptions())
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var ls linSys[float64]
			switch st := it.st.(type) {
			case *rosenbrock[float64]:
				ls = st.lin.ls
			case *ros23[float64]:
				ls = st.lin.ls
			}
			n := len(prob.U0)
			u := append([]float64(nil), prob.U0...)
			for i := range u {
				u[i] += 0.3 * r.NormFloat64()
			}
			if n == 2 { // |W₀₀| = 0.05 < |W₁₀| = 3: a row swap
				u[0], u[1] = 30, 19
			}
			copy(it.u, u)
			f0 := make([]float64, n)
			prob.F(f0, u, nil, 0)
			if !ls.jacobian(it, 0, it.u, f0, 0.01) || !ls.factor(it, 0.05) {
				t.Fatalf("%s: jacobian or factor failed", c.name)
			}
			tr := transposedSolve(ls)
			if tr == nil {
				t.Fatalf("%s: no transposed solve", c.name)
			}
			for range 3 {
				bb, rr := make([]float64, n), make([]float64, n)
				for i := range bb {
					bb[i], rr[i] = r.NormFloat64(), r.NormFloat64()
				}
				x, y := append([]float64(nil), bb...), append([]float64(nil), rr...)
				tr(x)
				ls.solve(it, y, it.u, f0, 1e-12)
				var lhs, rhs, scale float64
				for i := range x {
					lhs += x[i] * rr[i]
					rhs += bb[i] * y[i]
					scale += math.Abs(x[i]*rr[i]) + math.Abs(bb[i]*y[i])
				}
				if math.Abs(lhs-rhs) > 1e-13*scale {
					t.Errorf("%s %s: ⟨W⁻ᵀb, r⟩ = %.17g, ⟨b, W⁻¹r⟩ = %.17g", m.Name(), c.name, lhs, rhs)
				}
			}
		}
	}
}
