package ode

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// gradBruss is linsysBruss (A = 1, B = 3) with A and B as the parameters
// p: F gains (A−1) − (B−3)u in u' and (B−3)u in v', so that at p = (1, 3)
// F and its Jacobian are linsysBruss's, and ∂F/∂p is the Brusselator's.
// Jac writes J in the storage of structure s; JVP, VJP and ParamJac are
// exact.
func gradBruss(br linsysBruss, s Structure) Problem[float64] {
	n := 2 * br.N
	prob := br.problem()
	prob.T1, prob.P, prob.JacStructure = 1, []float32{1, 3}, s
	prob.F = func(du, y []float64, p []float32, t float64) {
		br.f(du, y, p, t)
		a, b := float64(p[0])-1, float64(p[1])-3
		for i := 0; i < n; i += 2 {
			du[i] += a - b*y[i]
			du[i+1] += b * y[i]
		}
	}
	set := func(J []float64, y []float64, pos func(i, j int) int) {
		br.entries(y, func(i, j int, v float64) { J[pos(i, j)] = v })
	}
	switch s := s.(type) {
	case nil:
		prob.Jac = func(J, y []float64, _ []float32, _ float64) {
			clear(J)
			set(J, y, func(i, j int) int { return i*n + j })
		}
	case BandJacobian:
		prob.Jac = func(J, y []float64, _ []float32, _ float64) {
			clear(J)
			set(J, y, func(i, j int) int { return bandPos(i, j, s.Lower, s.Upper) })
		}
	case SparseJacobian:
		prob.Jac = func(J, y []float64, _ []float32, _ float64) { set(J, y, s.Pattern.Index) }
	case MatrixFreeJacobian:
		prob.Jac = func(J, _ []float64, _ []float32, _ float64) {
			panic("Problem.Jac called with a MatrixFreeJacobian")
		}
	}
	prob.ParamJac = func(Jp, y []float64, _ []float32, _ float64) {
		for i := 0; i < n; i += 2 {
			Jp[2*i], Jp[2*i+1] = 1, -y[i]
			Jp[2*i+2], Jp[2*i+3] = 0, y[i]
		}
	}
	prob.JVP = func(jv, y, v []float64, _ []float32, dp []float64, _ float64) {
		clear(jv)
		br.entries(y, func(i, j int, x float64) { jv[i] += x * v[j] })
		if dp != nil {
			for i := 0; i < n; i += 2 {
				jv[i] += dp[0] - y[i]*dp[1]
				jv[i+1] += y[i] * dp[1]
			}
		}
	}
	prob.VJP = func(du, dp, w, y []float64, _ []float32, _ float64) {
		br.entries(y, func(i, j int, x float64) { du[j] += w[i] * x })
		if dp != nil {
			for i := 0; i < n; i += 2 {
				dp[0] += w[i]
				dp[1] += y[i] * (w[i+1] - w[i])
			}
		}
	}
	return prob
}

// TestGradientStructuredJacobian: Gradient reads a band or sparse
// Problem.Jac in its structure's storage, so the gradients of the 1-D
// Brusselator with a band and a sparse structure agree with those with a
// dense one, for BDF and Rodas5P, by ForwardSensitivity (with Jac and
// ParamJac, and with JVPs; every block in the structure) and
// InterpolatingAdjoint (its passes in the structure and its transpose).
// The block-diagonal Newton matrix of BDF's sensitivities and the
// differenced coupling of Rodas5P's are not the dense path's, so they
// agree to well below the tolerance, not to rounding. A matrix-free
// structure's Jac is not read (the problem's panics); it runs GMRES, so
// it agrees to the tolerance only.
func TestGradientStructuredJacobian(t *testing.T) {
	const N = 10
	br := newLinsysBruss(N)
	loss := Loss[float64]{At: []float64{0.5, 1}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		var s float64
		for i, v := range u {
			w := float64(i%3 + 1)
			s += w * v * v / 2
			dl[i] = w * v
		}
		return s
	}}
	sens := []struct {
		name string
		s    Sensitivity
		jvp  bool // drop ParamJac: the sensitivities by JVPs
	}{
		{"forward (Jac, ParamJac)", ForwardSensitivity{}, false},
		{"forward (JVP)", ForwardSensitivity{}, true},
		{"interpolating adjoint", InterpolatingAdjoint{}, false},
	}
	for _, m := range []Method{BDF(), Rodas5P()} {
		for _, sc := range sens {
			grad := func(s Structure) *GradientResult[float64] {
				prob := gradBruss(br, s)
				if sc.jvp {
					prob.ParamJac = nil
				}
				g, err := Gradient(context.Background(), prob, m, loss, sc.s, Tol(1e-6, 1e-8))
				if err != nil {
					t.Fatalf("%s, %s, %v: %v", m.Name(), sc.name, s, err)
				}
				return g
			}
			want := grad(nil)
			for _, s := range []Structure{BandJacobian{Lower: 2, Upper: 2}, SparseJacobian{Pattern: br.pattern()}, MatrixFreeJacobian{}} {
				got := grad(s)
				name := fmt.Sprintf("%s, %s, %v", m.Name(), sc.name, s)
				e := math.Abs(got.Value-want.Value) / math.Abs(want.Value)
				for k, w := range want.P {
					e = max(e, math.Abs(got.P[k]-w)/math.Abs(w))
				}
				scale := 0.0
				for _, w := range want.U0 {
					scale = max(scale, math.Abs(w))
				}
				for k, w := range want.U0 {
					e = max(e, math.Abs(got.U0[k]-w)/scale)
				}
				t.Logf("%s: dL/dp = %.6g, relative difference %.3g", name, got.P, e)
				bound := 1e-6
				if _, free := s.(MatrixFreeJacobian); free {
					// GMRES: agreement to the tolerance asked.
					bound = 1e-4
				}
				if e > bound {
					t.Errorf("%s: gradient differs from the dense structure's by %.3g > %g (dL/dp %v, want %v)", name, e, bound, got.P, want.P)
				}
			}
		}
	}
}
