package ode_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// pbruss is the 1-D Brusselator of Hairer and Wanner with its constants A
// and B as the parameters p = (A, B): N grid points, 2N states u_i, v_i
// interleaved, α = (N+1)²/50, the boundary values kept at the
// literature's u = 1, v = 3, and a Jacobian of bandwidths 2 and 2.
type pbruss struct {
	N     int
	alpha float64
}

func (b pbruss) at(y []float64, i int) (u, v float64) {
	if i == 0 || i == b.N+1 {
		return 1, 3
	}
	return y[2*(i-1)], y[2*(i-1)+1]
}

func (b pbruss) f(du, y []float64, p []float32, _ float64) {
	A, B, a := float64(p[0]), float64(p[1]), b.alpha
	for i := 1; i <= b.N; i++ {
		ul, vl := b.at(y, i-1)
		u, v := b.at(y, i)
		ur, vr := b.at(y, i+1)
		uuv := u * u * v
		du[2*(i-1)] = A + uuv - (B+1)*u + a*(ul-2*u+ur)
		du[2*(i-1)+1] = B*u - uuv + a*(vl-2*v+vr)
	}
}

// entries calls set(row, col, ∂F_row/∂y_col) for every structural entry.
func (b pbruss) entries(y []float64, p []float32, set func(i, j int, v float64)) {
	B, a, n := float64(p[1]), b.alpha, 2*b.N
	for i := 1; i <= b.N; i++ {
		u, v := b.at(y, i)
		r := 2 * (i - 1)
		set(r, r, 2*u*v-(B+1)-2*a)
		set(r, r+1, u*u)
		set(r+1, r, B-2*u*v)
		set(r+1, r+1, -u*u-2*a)
		if r >= 2 {
			set(r, r-2, a)
			set(r+1, r-1, a)
		}
		if r+2 < n {
			set(r, r+2, a)
			set(r+1, r+3, a)
		}
	}
}

func (b pbruss) pattern() *linalg.Pattern {
	var e []linalg.Entry
	b.entries(make([]float64, 2*b.N), []float32{1, 3}, func(i, j int, _ float64) { e = append(e, linalg.Entry{Row: i, Col: j}) })
	p, err := linalg.NewPattern(2*b.N, 2*b.N, e)
	if err != nil {
		panic(err)
	}
	return p
}

// problem is the problem with Jac in the storage of structure s, and
// exact JVP, VJP and ParamJac.
func (b pbruss) problem(s ode.Structure) ode.Problem[float64] {
	n := 2 * b.N
	u0 := make([]float64, n)
	for i := 1; i <= b.N; i++ {
		u0[2*(i-1)] = 1 + math.Sin(2*math.Pi*float64(i)/float64(b.N+1))
		u0[2*(i-1)+1] = 3
	}
	prob := ode.Problem[float64]{F: b.f, U0: u0, T1: 1, P: []float32{1, 3}, JacStructure: s}
	switch s := s.(type) {
	case nil:
		prob.Jac = func(J, y []float64, p []float32, _ float64) {
			clear(J)
			b.entries(y, p, func(i, j int, v float64) { J[i*n+j] = v })
		}
	case ode.BandJacobian:
		w := s.Lower + s.Upper + 1
		prob.Jac = func(J, y []float64, p []float32, _ float64) {
			clear(J)
			b.entries(y, p, func(i, j int, v float64) { J[i*w+j-i+s.Lower] = v })
		}
	case ode.SparseJacobian:
		prob.Jac = func(J, y []float64, p []float32, _ float64) {
			b.entries(y, p, func(i, j int, v float64) { J[s.Pattern.Index(i, j)] = v })
		}
	case ode.MatrixFreeJacobian:
		prob.Jac = func(J, _ []float64, _ []float32, _ float64) {
			panic("Problem.Jac called with a MatrixFreeJacobian")
		}
	}
	prob.ParamJac = func(Jp, y []float64, _ []float32, _ float64) {
		for i := 0; i < b.N; i++ {
			u := y[2*i]
			Jp[2*i*2], Jp[2*i*2+1] = 1, -u
			Jp[(2*i+1)*2], Jp[(2*i+1)*2+1] = 0, u
		}
	}
	prob.JVP = func(jv, y, v []float64, p []float32, dp []float64, _ float64) {
		clear(jv)
		b.entries(y, p, func(i, j int, x float64) { jv[i] += x * v[j] })
		if dp != nil {
			for i := 0; i < b.N; i++ {
				u := y[2*i]
				jv[2*i] += dp[0] - u*dp[1]
				jv[2*i+1] += u * dp[1]
			}
		}
	}
	prob.VJP = func(du, dp, w, y []float64, p []float32, _ float64) {
		b.entries(y, p, func(i, j int, x float64) { du[j] += w[i] * x })
		if dp != nil {
			for i := 0; i < b.N; i++ {
				u := y[2*i]
				dp[0] += w[2*i]
				dp[1] += -u*w[2*i] + u*w[2*i+1]
			}
		}
	}
	return prob
}

// TestGradientStructuredJacobian: Gradient reads a band or sparse
// Problem.Jac in its structure's storage (forming the dense matrix its
// sensitivity systems use), so the gradients of the 1-D Brusselator with
// a band and a sparse structure equal those with a dense one, for BDF and
// Rodas5P, by ForwardSensitivity (with Jac and ParamJac, and with JVPs)
// and InterpolatingAdjoint. A matrix-free structure's Jac is not read
// (the problem's panics).
func TestGradientStructuredJacobian(t *testing.T) {
	const N = 10
	br := pbruss{N: N, alpha: float64((N+1)*(N+1)) / 50}
	loss := ode.Loss[float64]{At: []float64{0.5, 1}, Point: func(_ int, _ float64, u, dl []float64) float64 {
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
		s    ode.Sensitivity
		jvp  bool // drop ParamJac: the sensitivities by JVPs
	}{
		{"forward (Jac, ParamJac)", ode.ForwardSensitivity{}, false},
		{"forward (JVP)", ode.ForwardSensitivity{}, true},
		{"interpolating adjoint", ode.InterpolatingAdjoint{}, false},
	}
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		for _, sc := range sens {
			grad := func(s ode.Structure) *ode.GradientResult[float64] {
				prob := br.problem(s)
				if sc.jvp {
					prob.ParamJac = nil
				}
				g, err := ode.Gradient(bg, prob, m, loss, sc.s, ode.Tol(1e-6, 1e-8))
				if err != nil {
					t.Fatalf("%s, %s, %v: %v", m.Name(), sc.name, s, err)
				}
				return g
			}
			want := grad(nil)
			for _, s := range []ode.Structure{ode.BandJacobian{Lower: 2, Upper: 2}, ode.SparseJacobian{Pattern: br.pattern()}, ode.MatrixFreeJacobian{}} {
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
				if e > 1e-6 {
					t.Errorf("%s: gradient differs from the dense structure's by %.3g (dL/dp %v, want %v)", name, e, got.P, want.P)
				}
			}
		}
	}
}
