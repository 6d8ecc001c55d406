package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// diffReact is a 1-D diffusion-reaction problem of n points with zero
// values beyond the ends: u_i' = p0·(u_{i−1} − 2u_i + u_{i+1}) − p1·u_i²,
// with the diffusion rate p0 = 1000 and a start that is 0 at the ends, so
// that F is large beside components that are 0. Its Jac is tridiagonal,
// its JVP exact in u and p.
func diffReact(n int) ode.Problem[float64] {
	at := func(u []float64, i int) float64 {
		if i < 0 || i >= len(u) {
			return 0
		}
		return u[i]
	}
	f := func(du, u []float64, p []float32, _ float64) {
		k, r := float64(p[0]), float64(p[1])
		for i := range u {
			du[i] = k*(at(u, i-1)-2*u[i]+at(u, i+1)) - r*u[i]*u[i]
		}
	}
	jvp := func(jv, u, v []float64, p []float32, dp []float64, _ float64) {
		k, r := float64(p[0]), float64(p[1])
		for i := range u {
			jv[i] = k*(at(v, i-1)-2*v[i]+at(v, i+1)) - 2*r*u[i]*v[i]
			if dp != nil {
				jv[i] += dp[0]*(at(u, i-1)-2*u[i]+at(u, i+1)) - dp[1]*u[i]*u[i]
			}
		}
	}
	jac := func(J, u []float64, p []float32, _ float64) { // band storage, Lower = Upper = 1
		k, r := float64(p[0]), float64(p[1])
		for i := range u {
			J[3*i+1] = -2*k - 2*r*u[i]
			if i > 0 {
				J[3*i] = k
			}
			if i+1 < len(u) {
				J[3*i+2] = k
			}
		}
	}
	u0 := make([]float64, n)
	for i := 1; i < n-1; i++ {
		u0[i] = 1.5 * math.Sin(math.Pi*float64(i)/float64(n-1))
	}
	return ode.Problem[float64]{F: f, JVP: jvp, Jac: jac, JacStructure: ode.BandJacobian{Lower: 1, Upper: 1},
		U0: u0, T0: 0, T1: 0.005, P: []float32{1000, 2}}
}

// TestRosenbrock23GMRESSmallAtol: Rosenbrock23 with GMRES and no
// preconditioner, on a 5-point diffusion of rate 1000 whose end values
// are 0, at atol 1e-10. GMRES's 5 Krylov vectors solve the 5 equations,
// so every stage's solve is exact but for rounding; the solve and
// ForwardSensitivity agree with the band LU's to 1e-6. The stages of
// Rosenbrock23 are in F's units, about 1000 here: their GMRES stopped at
// the state's residual 1e-4 asked for less than the rounding of F at the
// weights 1/atol, failed at every step size, and the step shrank to
// 1e-12 until MaxSteps.
func TestRosenbrock23GMRESSmallAtol(t *testing.T) {
	ctx := context.Background()
	prob := diffReact(5)
	loss := ode.Loss[float64]{At: []float64{prob.T1}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		var g float64
		for i, v := range u {
			g += v * v / 2
			dl[i] = v
		}
		return g
	}}
	opts := []ode.GradientOption{ode.Tol(1e-8, 1e-10), ode.MaxSteps(20000)}
	free := prob
	free.Jac, free.JacStructure = nil, ode.MatrixFreeJacobian{}
	for _, name := range []string{"solve", "ForwardSensitivity"} {
		t.Run(name, func(t *testing.T) {
			var got, want []float64
			for _, c := range []struct {
				p ode.Problem[float64]
				m ode.Method
			}{{prob, ode.Rosenbrock23()}, {free, ode.Rosenbrock23Method{Linear: ode.GMRES{}}}} {
				var v []float64
				if name == "solve" {
					sol, err := ode.Solve(ctx, c.p, c.m, ode.Tol(1e-8, 1e-10), ode.MaxSteps(20000))
					if err != nil {
						t.Fatalf("%s: %v", c.m.Name(), err)
					}
					v = sol.U[len(sol.U)-1]
				} else {
					g, err := ode.Gradient(ctx, c.p, c.m, loss, ode.ForwardSensitivity{}, opts...)
					if err != nil {
						t.Fatalf("%s: %v", c.m.Name(), err)
					}
					v = append(append([]float64(nil), g.P...), g.U0...)
				}
				got, want = v, got
			}
			e := relNorm(got, want)
			t.Logf("GMRES against band LU: %.2g relative", e)
			if e > 1e-6 {
				t.Errorf("GMRES %v, band LU %v: %.2g relative apart, want ≤ 1e-6", got, want, e)
			}
		})
	}
}
