package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// gnSquares is Σᵢ ½‖u(tᵢ) − dᵢ‖² at at, with its exact second
// derivative (the identity), whose Gauss–Newton matrix is Σᵢ SᵢᵀSᵢ.
func gnSquares(at []float64, d [][]float64) ode.HvLoss[float64] {
	return ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: at,
		Point: func(i int, _ float64, u, dl []float64) float64 {
			var l float64
			for j := range u {
				r := u[j] - d[i][j]
				dl[j] = r
				l += r * r / 2
			}
			return l
		}},
		PointHv:     func(_ int, _ float64, _, ud, hv []float64) { copy(hv, ud) },
		GaussNewton: true,
	}
}

// gnBySens is Σᵢ SᵢᵀSᵢ·v from ForwardSensitivity's sensitivities at the
// save times: the Gauss–Newton product by another road.
func gnBySens(t *testing.T, prob ode.Problem[float64], m ode.Method, loss ode.Loss[float64], v []float64, opts ...ode.GradientOption) []float64 {
	t.Helper()
	g, err := ode.Gradient(context.Background(), prob, m, loss, ode.ForwardSensitivity{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	n, N := len(prob.U0), len(v)
	out := make([]float64, N)
	for _, s := range g.Sens {
		sv := make([]float64, n)
		for k := range N {
			for j := range n {
				sv[j] += s[k*n+j] * v[k]
			}
		}
		for k := range N {
			for j := range n {
				out[k] += s[k*n+j] * sv[j]
			}
		}
	}
	return out
}

// The Gauss–Newton product (HvLoss.GaussNewton) of a least-squares loss
// equals Σᵢ SᵢᵀSᵢ·v from ForwardSensitivity, in every backward path
// (explicit; stiff with the dense augmented Jacobian; stiff in a band
// structure; through a dose schedule), and differs from H·v on the
// nonlinear Lotka-Volterra problem, where F's second derivatives count.
// On a problem linear in u and θ together the two products agree.
func TestHessianVectorGaussNewton(t *testing.T) {
	ctx := context.Background()
	tol := ode.Tol(1e-10, 1e-12)
	at := []float64{3, 6.5, 10}
	d := [][]float64{{0.8, 1.1}, {1.2, 0.7}, {0.9, 1}}
	loss := gnSquares(at, d)
	v := []float64{0.3, -0.7, 0.5, 1, -0.4, 0.2} // θ (4), then u0 (2)

	lv := lvHvProblem()
	band := lvHvProblem()
	band.JacStructure, band.Jac = ode.BandJacobian{Lower: 1, Upper: 1}, nil // J from JVP
	dosed := lvHvProblem()
	dosed.Schedules = []ode.Schedule[float64]{{Times: []float64{4.5},
		Effect: func(u []float64, p []float32, _ float64) bool { u[0] = u[0]*u[0]/2 + float64(p[1]); return false },
		EffectJVP: func(jv, u, w []float64, _ []float32, dp []float64, _, _ float64) {
			jv[0], jv[1] = u[0]*w[0], w[1]
			if dp != nil {
				jv[0] += dp[1]
			}
		},
		EffectVJP: func(du, dp, w, u []float64, _ []float32, _ float64) float64 {
			du[0] += w[0] * u[0]
			du[1] += w[1]
			if dp != nil {
				dp[1] += w[0]
			}
			return 0
		}}}
	for _, c := range []struct {
		name string
		prob ode.Problem[float64]
		m    ode.Method
	}{
		{"Tsit5", lv, ode.Tsit5()},
		{"Vern7", lv, ode.Vern7()},
		{"Rodas5P dense", lv, ode.Rodas5P()},
		{"Rodas5P band", band, ode.Rodas5P()},
		{"Vern7 dosed", dosed, ode.Vern7()},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs, err := ode.NewHvSolver(c.prob, c.m, ode.InterpolatingAdjoint{}, tol)
			if err != nil {
				t.Fatal(err)
			}
			r, err := hs.HvFor(ctx, c.prob, loss, v)
			if err != nil {
				t.Fatal(err)
			}
			gn := append(append([]float64(nil), r.HvP...), r.HvU0...)
			want := gnBySens(t, c.prob, c.m, loss.Loss, v, tol)
			scale := 0.0
			for _, w := range want {
				scale = math.Max(scale, math.Abs(w))
			}
			for k := range want {
				if math.Abs(gn[k]-want[k]) > 1e-7*scale {
					t.Errorf("GN·v[%d] = %.10g, Σ SᵀS·v = %.10g", k, gn[k], want[k])
				}
			}
			// The full Hessian differs: F's second derivatives count.
			full := loss
			full.GaussNewton = false
			h, err := hs.HvFor(ctx, c.prob, full, v)
			if err != nil {
				t.Fatal(err)
			}
			hv := append(append([]float64(nil), h.HvP...), h.HvU0...)
			diff := 0.0
			for k := range hv {
				diff = math.Max(diff, math.Abs(hv[k]-gn[k]))
			}
			if diff < 1e-3*scale {
				t.Errorf("H·v and GN·v differ by %.3g (scale %.3g), want a visible gap on a nonlinear F", diff, scale)
			}
		})
	}

	// u' = A·u + b(θ), linear in u and θ together: H·v = GN·v.
	lin := ode.Problem[float64]{U0: []float64{1, 0.5}, T1: 2, P: []float32{0.5, -0.25},
		F: func(du, u []float64, p []float32, _ float64) {
			du[0] = -u[0] + 0.5*u[1] + float64(p[0])
			du[1] = 0.25*u[0] - 2*u[1] + float64(p[1])
		},
		JVP: func(jv, u, w []float64, _ []float32, dp []float64, _ float64) {
			jv[0] = -w[0] + 0.5*w[1]
			jv[1] = 0.25*w[0] - 2*w[1]
			if dp != nil {
				jv[0] += dp[0]
				jv[1] += dp[1]
			}
		},
		VJP: func(du, dp, w, _ []float64, _ []float32, _ float64) {
			du[0] += -w[0] + 0.25*w[1]
			du[1] += 0.5*w[0] - 2*w[1]
			if dp != nil {
				dp[0] += w[0]
				dp[1] += w[1]
			}
		}}
	lin.VJPJVP = func(gu, gp, hu, hp, w, wd, u, _ []float64, p []float32, _ []float64, t float64) {
		lin.VJP(gu, gp, w, u, p, t)
		lin.VJP(hu, hp, wd, u, p, t)
	}
	ll := gnSquares([]float64{0.5, 2}, [][]float64{{1, 1}, {0.5, 0.25}})
	vl := []float64{1, -0.5, 0.25, 2}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		hs, err := ode.NewHvSolver(lin, m, ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		r, err := hs.HvFor(ctx, lin, ll, vl)
		if err != nil {
			t.Fatal(err)
		}
		gn := append(append([]float64(nil), r.HvP...), r.HvU0...)
		full := ll
		full.GaussNewton = false
		h, err := hs.HvFor(ctx, lin, full, vl)
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range append(append([]float64(nil), h.HvP...), h.HvU0...) {
			if math.Abs(x-gn[k]) > 1e-9*math.Max(1, math.Abs(x)) {
				t.Errorf("%s: linear F: H·v[%d] = %.12g, GN·v %.12g, want equal", m.Name(), k, x, gn[k])
			}
		}
	}
}
