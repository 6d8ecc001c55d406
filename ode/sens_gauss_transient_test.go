package ode_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// transientProblem is three states with a fast diffusion of rate 1000
// (no flux at the ends) and one parameter p in the reaction terms,
//
//	u_i' = −u_i/2 + cos(t + i)/4 + 1000·(∂²u)_i + f_i,
//	f_0 = f_1 = −p, f_2 = −p·u_2,
//
// from u0 = (1.5, 1.5, −1.5) over [0, 1]: u relaxes to its mean within
// about 1e-3, a transient the forward solve takes in small steps and λ
// (smooth there) does not. It is the case
// TestODEGradientsOfRandomStiffProblems drew with seed
// 14713631500767686628. s is "dense" (with Jac) or "band" (J from JVPs).
func transientProblem(s string) ode.Problem[float64] {
	const d = 1000
	diffuse := func(dst, x []float64) {
		for i := range x {
			var v float64
			if i > 0 {
				v += x[i-1] - x[i]
			}
			if i+1 < len(x) {
				v += x[i+1] - x[i]
			}
			dst[i] += d * v
		}
	}
	prob := ode.Problem[float64]{
		U0: []float64{1.5, 1.5, -1.5}, T0: 0, T1: 1, P: []float32{1.5},
		F: func(du, u []float64, p []float32, t float64) {
			for i := range du {
				du[i] = -u[i]/2 + math.Cos(t+float64(i))/4
			}
			diffuse(du, u)
			pk := float64(p[0])
			du[0] -= pk
			du[1] -= pk
			du[2] -= pk * u[2]
		},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			for i := range jv {
				jv[i] = -v[i] / 2
			}
			diffuse(jv, v)
			jv[2] -= float64(p[0]) * v[2]
			if dp != nil {
				jv[0] -= dp[0]
				jv[1] -= dp[0]
				jv[2] -= dp[0] * u[2]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			for i := range du {
				du[i] -= w[i] / 2
			}
			diffuse(du, w) // symmetric
			du[2] -= float64(p[0]) * w[2]
			if dp != nil {
				dp[0] -= w[0] + w[1] + w[2]*u[2]
			}
		},
	}
	switch s {
	case "dense":
		prob.Jac = func(J, u []float64, p []float32, t float64) {
			clear(J)
			for i := range 3 {
				J[i*3+i] = -0.5
				if i > 0 {
					J[i*3+i-1] += d
					J[i*3+i] -= d
				}
				if i < 2 {
					J[i*3+i+1] += d
					J[i*3+i] -= d
				}
			}
			J[8] -= float64(p[0])
		}
	case "band":
		prob.JacStructure = ode.BandJacobian{Lower: 1, Upper: 1}
	}
	return prob
}

func transientLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{1}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		var g float64
		for i, v := range u {
			g += v * v / 2
			dl[i] = v
		}
		return g
	}}
}

// TestGaussAdjointFastTransient: where u has a fast transient that λ does
// not, GaussAdjoint's quadrature must follow the forward solve's steps,
// not only λ's. With BDF and Rodas5P, dense and band, with and without
// checkpoints, dL/dp agrees with ForwardSensitivity's and
// InterpolatingAdjoint's to 1e-6 relative. (A Gauss rule on each backward
// step alone was off by 3e-4 with BDF.)
func TestGaussAdjointFastTransient(t *testing.T) {
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-8, 1e-10)}
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		for _, s := range []string{"dense", "band"} {
			for _, ck := range []int{0, 6} {
				name := fmt.Sprintf("%v/%s/checkpoints %d", m, s, ck)
				fs, err := ode.Gradient(ctx, transientProblem(s), m, transientLoss(), ode.ForwardSensitivity{}, opts...)
				if err != nil {
					t.Fatalf("%s ForwardSensitivity: %v", name, err)
				}
				ia, err := ode.Gradient(ctx, transientProblem(s), m, transientLoss(), ode.InterpolatingAdjoint{Checkpoints: ck}, opts...)
				if err != nil {
					t.Fatalf("%s InterpolatingAdjoint: %v", name, err)
				}
				g, err := ode.Gradient(ctx, transientProblem(s), m, transientLoss(), ode.GaussAdjoint{Checkpoints: ck}, opts...)
				if err != nil {
					t.Fatalf("%s GaussAdjoint: %v", name, err)
				}
				ef := math.Abs(g.P[0]-fs.P[0]) / math.Abs(fs.P[0])
				ei := math.Abs(g.P[0]-ia.P[0]) / math.Abs(ia.P[0])
				eu := relNorm(g.U0, fs.U0)
				t.Logf("%s: dL/dp %.10g, ForwardSensitivity %.10g (%.2e), InterpolatingAdjoint %.10g (%.2e); dL/du0 vs forward %.2e; steps fwd %d bwd %d",
					name, g.P[0], fs.P[0], ef, ia.P[0], ei, eu, g.Forward.Accepted, g.Backward.Accepted)
				if ef > 1e-6 || ei > 1e-6 {
					t.Errorf("%s: dL/dp = %.10g, want ForwardSensitivity's %.10g and InterpolatingAdjoint's %.10g to 1e-6 relative (off by %.2e and %.2e)",
						name, g.P[0], fs.P[0], ia.P[0], ef, ei)
				}
				if eu > 1e-6 {
					t.Errorf("%s: dL/du0 = %v, want ForwardSensitivity's %v to 1e-6 relative (off by %.2e)", name, g.U0, fs.U0, eu)
				}
			}
		}
	}
}

// TestGaussAdjointQuadratureCost: GaussAdjoint's quadrature takes at
// most (forward steps + backward steps) × nodes VJPs with a parameter
// part, and on the fast transient more than a rule per backward step
// would (it follows the forward steps there).
func TestGaussAdjointQuadratureCost(t *testing.T) {
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		prob := transientProblem("dense")
		vjp, calls := prob.VJP, 0
		prob.VJP = func(du, dp, w, u []float64, p []float32, tt float64) {
			if dp != nil {
				calls++
			}
			vjp(du, dp, w, u, p, tt)
		}
		const nodes = 3
		g, err := ode.Gradient(context.Background(), prob, m, transientLoss(), ode.GaussAdjoint{Nodes: nodes}, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		f, b := g.Forward.Accepted, g.Backward.Accepted
		t.Logf("%v: %d VJPs with dp; forward steps %d, backward %d", m, calls, f, b)
		if calls > (f+b)*nodes {
			t.Errorf("%v: %d VJPs with a parameter part, want at most (%d forward + %d backward steps) × %d nodes", m, calls, f, b, nodes)
		}
		if calls <= b*nodes {
			t.Errorf("%v: %d VJPs with a parameter part, want more than %d backward steps × %d nodes", m, calls, b, nodes)
		}
	}
}
