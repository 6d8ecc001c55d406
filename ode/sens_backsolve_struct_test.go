package ode_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// BacksolveAdjoint integrates u backwards, which diffusion makes unstable
// over long spans: the Brusselator's fastest mode, about −40 at N = 20,
// grows e^{40·10} backwards over [0, 10]. The loss below saves every 0.1
// (it reads only u(10)), so u is reset to the forward solution every 0.1
// and a backward error grows at most e^4 before the next reset.
func brussBacksolveLoss() ode.Loss[float64] {
	at := make([]float64, 100)
	for i := range at {
		at[i] = float64(i+1) / 10
	}
	at[len(at)-1] = 10
	return ode.Loss[float64]{At: at, Point: func(i int, _ float64, u, dl []float64) float64 {
		if i != len(at)-1 {
			return 0
		}
		var g float64
		for i := 0; i < len(u); i += 2 {
			g += u[i] * u[i] / 2
			dl[i] = u[i]
		}
		return g
	}}
}

// TestBacksolveGradientStructures: BacksolveAdjoint's gradient of G =
// ½ Σ u_i(10)² with respect to θ and u0, on the 1-D Brusselator at N = 20,
// with BDF, Rodas5P and Rosenbrock23 over band and sparse Jacobians and
// BDF with GMRES matrix-free, agrees with central differences of tight
// solves, with the dense structure's BacksolveAdjoint and with
// InterpolatingAdjoint over the same structure, to 1e-5 relative in norm.
// A Rosenbrock method's solves carry the second-derivative coupling: without
// it the method would lose its order on λ and take many times the steps,
// so the backward steps are bounded by those of the dense structure, whose
// Jacobian is the whole system's.
func TestBacksolveGradientStructures(t *testing.T) {
	const N = 20
	gpFD, guFD := brussCentral(t, N)
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	freeRos := ode.Rodas5PMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	bs, adj := ode.BacksolveAdjoint{}, ode.InterpolatingAdjoint{}
	cases := []struct {
		m       ode.Method
		structs []string
	}{
		{ode.BDF(), []string{"band", "sparse"}},
		{ode.Rodas5P(), []string{"band", "sparse"}},
		{ode.Rosenbrock23(), []string{"band", "sparse"}},
		{free, []string{"free"}},
		{freeRos, []string{"free"}},
	}
	loss := brussBacksolveLoss()
	for _, c := range cases {
		o := opts
		if c.m.Name() == "Rosenbrock23" { // third order: tighter, for the error to be well below the bar
			o = []ode.GradientOption{ode.Tol(1e-10, 1e-12), ode.MaxSteps(1e6)}
		}
		dense, err := ode.Gradient(ctx, brussSensProblem(N, "dense"), c.m, loss, bs, o...)
		if err != nil {
			t.Fatalf("%v dense: %v", c.m, err)
		}
		for _, s := range c.structs {
			name := fmt.Sprintf("%v/%s", c.m, s)
			g, err := ode.Gradient(ctx, brussSensProblem(N, s), c.m, loss, bs, o...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ia, err := ode.Gradient(ctx, brussSensProblem(N, s), c.m, loss, adj, o...)
			if err != nil {
				t.Fatalf("%s InterpolatingAdjoint: %v", name, err)
			}
			ep, eu := relNorm(g.P, gpFD), relNorm(g.U0, guFD)
			dp, du := relNorm(g.P, dense.P), relNorm(g.U0, dense.U0)
			ip, iu := relNorm(g.P, ia.P), relNorm(g.U0, ia.U0)
			t.Logf("%s: dG/dθ = %.8g; vs central differences θ %.2e u0 %.2e; vs dense θ %.2e u0 %.2e; vs InterpolatingAdjoint θ %.2e u0 %.2e; bwd steps %d (dense %d)",
				name, g.P, ep, eu, dp, du, ip, iu, g.Backward.Accepted, dense.Backward.Accepted)
			if max(ep, eu) > 1e-5 {
				t.Errorf("%s: gradient differs from central differences by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, ep, eu)
			}
			if max(dp, du) > 1e-5 {
				t.Errorf("%s: gradient differs from the dense structure's by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, dp, du)
			}
			if max(ip, iu) > 1e-5 {
				t.Errorf("%s: gradient differs from InterpolatingAdjoint's by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, ip, iu)
			}
			if g.Backward.Accepted > 2*dense.Backward.Accepted {
				t.Errorf("%s: %d backward steps, want at most 2× the dense structure's %d", name, g.Backward.Accepted, dense.Backward.Accepted)
			}
		}
	}
}

// A warm GradientSolver of BacksolveAdjoint allocates nothing per
// gradient, for each stiff method and structure.
func TestBacksolveGradientAllocatesNothingWarm(t *testing.T) {
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	for _, c := range []struct {
		m ode.Method
		s string
	}{{ode.BDF(), "band"}, {ode.BDF(), "sparse"}, {ode.Rodas5P(), "band"}, {ode.Rodas5P(), "sparse"},
		{ode.Rosenbrock23(), "sparse"}, {free, "free"}} {
		t.Run(fmt.Sprintf("%v/%s", c.m, c.s), func(t *testing.T) {
			checkWarmBrussAllocs(t, c.m, c.s, ode.BacksolveAdjoint{}, brussBacksolveLoss())
		})
	}
}

// checkWarmBrussAllocs checks that a warm GradientSolver of the
// Brusselator at N = 10 in structure s allocates nothing per gradient.
func checkWarmBrussAllocs(t *testing.T, m ode.Method, s string, sv ode.Sensitivity, loss ode.Loss[float64]) {
	t.Helper()
	ctx := context.Background()
	gs, err := ode.NewGradientSolver(brussSensProblem(10, s), m, sv, ode.Tol(1e-6, 1e-8), ode.MaxSteps(1e6))
	if err != nil {
		t.Fatal(err)
	}
	θ := []float32{1, 3, 1}
	for range 2 {
		if _, err := gs.Gradient(ctx, θ, loss); err != nil {
			t.Fatal(err)
		}
	}
	a := testing.AllocsPerRun(5, func() {
		if _, err := gs.Gradient(ctx, θ, loss); err != nil {
			t.Fatal(err)
		}
	})
	if a != 0 {
		t.Errorf("%v allocations per warm gradient, want 0", a)
	}
}
