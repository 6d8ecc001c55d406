package ode_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// The 1-D Brusselator of issue 28 with θ = (A, B, 50α) as parameters
// (stiffprob.Bruss1DParams) and the loss G = ½ Σᵢ uᵢ(10)² over the u
// species.

// brussSensProblem returns the Brusselator on N grid points with its
// Jacobian in structure s: "dense", "band", "sparse" or "free".
func brussSensProblem(N int, s string) ode.Problem[float64] {
	b := stiffprob.NewBruss1DParams[float64](N)
	prob := ode.Problem[float64]{F: b.F, U0: b.U0(), T0: 0, T1: 10, P: b.P(), JVP: b.JVP, VJP: b.VJP}
	switch s {
	case "dense":
		prob.Jac = b.Jac
	case "band":
		prob.Jac, prob.JacStructure = b.JacBand, ode.BandJacobian{Lower: 2, Upper: 2}
	case "sparse":
		prob.Jac, prob.JacStructure = b.JacSparse, ode.SparseJacobian{Pattern: b.Pattern()}
	case "free":
		prob.JacStructure = ode.MatrixFreeJacobian{}
	}
	return prob
}

func brussSensLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{10}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		var g float64
		for i := 0; i < len(u); i += 2 {
			g += u[i] * u[i] / 2
			dl[i] = u[i]
		}
		return g
	}}
}

// brussLossAt solves tightly and returns G.
func brussLossAt(t *testing.T, prob ode.Problem[float64]) float64 {
	t.Helper()
	sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-10, 1e-12), ode.MaxSteps(1e6))
	if err != nil {
		t.Fatal(err)
	}
	u := sol.U[len(sol.U)-1]
	var g float64
	for i := 0; i < len(u); i += 2 {
		g += u[i] * u[i] / 2
	}
	return g
}

// brussCentral returns dG/dθ and dG/du0 by central differences of tight
// solves (rtol 1e-10), relative steps 1e-4 in θ (float32) and 1e-5 in u0.
func brussCentral(t *testing.T, N int) (gp, gu []float64) {
	prob := brussSensProblem(N, "band")
	gp = make([]float64, len(prob.P))
	for k, v := range prob.P {
		pp := *(&prob)
		pp.P = append([]float32(nil), prob.P...)
		hi, lo := v*(1+1e-4), v*(1-1e-4)
		pp.P[k] = hi
		gh := brussLossAt(t, pp)
		pp.P[k] = lo
		gl := brussLossAt(t, pp)
		gp[k] = (gh - gl) / (float64(hi) - float64(lo))
	}
	gu = make([]float64, len(prob.U0))
	for i, v := range prob.U0 {
		pu := prob
		pu.U0 = append([]float64(nil), prob.U0...)
		h := 1e-5 * max(1, math.Abs(v))
		pu.U0[i] = v + h
		gh := brussLossAt(t, pu)
		pu.U0[i] = v - h
		gl := brussLossAt(t, pu)
		gu[i] = (gh - gl) / (2 * h)
	}
	return gp, gu
}

// relNorm is ‖a − b‖/‖b‖.
func relNorm(a, b []float64) float64 {
	var d, s float64
	for i := range b {
		d += (a[i] - b[i]) * (a[i] - b[i])
		s += b[i] * b[i]
	}
	return math.Sqrt(d / s)
}

// TestBrusselatorAdjointStructures: InterpolatingAdjoint's gradient of
// G = ½ Σ u_i(10)² with respect to θ = (A, B, 50α) and u0, on the 1-D
// Brusselator at N = 20 (40 states), with BDF, Rodas5P and Rosenbrock23
// over band and sparse Jacobians (and matrix-free GMRES), agrees with the
// dense structure's gradient and with central differences of tight
// solves to 1e-5 relative in norm.
func TestBrusselatorAdjointStructures(t *testing.T) {
	const N = 20
	gpFD, guFD := brussCentral(t, N)
	t.Logf("central differences: dG/dθ = %.8g", gpFD)
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	cases := []struct {
		m       ode.Method
		structs []string
		ckpt    int
	}{
		{ode.BDF(), []string{"band", "sparse"}, 0},
		{ode.Rodas5P(), []string{"band", "sparse"}, 0},
		{ode.Rodas5P(), []string{"band"}, 16},
		{ode.Rosenbrock23(), []string{"band"}, 0},
		{free, []string{"free"}, 0},
	}
	for _, c := range cases {
		o := opts
		if c.m.Name() == "Rosenbrock23" { // third order: tighter, for the error to be well below the bar
			o = []ode.GradientOption{ode.Tol(1e-10, 1e-12), ode.MaxSteps(1e6)}
		}
		dense, err := ode.Gradient(ctx, brussSensProblem(N, "dense"), c.m, brussSensLoss(), ode.InterpolatingAdjoint{}, o...)
		if err != nil {
			t.Fatalf("%v dense: %v", c.m, err)
		}
		for _, s := range c.structs {
			name := fmt.Sprintf("%v/%s/checkpoints %d", c.m, s, c.ckpt)
			g, err := ode.Gradient(ctx, brussSensProblem(N, s), c.m, brussSensLoss(), ode.InterpolatingAdjoint{Checkpoints: c.ckpt}, o...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ep, eu := relNorm(g.P, gpFD), relNorm(g.U0, guFD)
			dp, du := relNorm(g.P, dense.P), relNorm(g.U0, dense.U0)
			t.Logf("%s: dG/dθ = %.8g; vs central differences θ %.2e u0 %.2e; vs dense θ %.2e u0 %.2e; steps fwd %d bwd %d",
				name, g.P, ep, eu, dp, du, g.Forward.Accepted, g.Backward.Accepted)
			if max(ep, eu) > 1e-5 {
				t.Errorf("%s: gradient differs from central differences by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, ep, eu)
			}
			if max(dp, du) > 1e-5 {
				t.Errorf("%s: gradient differs from the dense structure's by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, dp, du)
			}
		}
	}
}

// A warm GradientSolver of the Brusselator's adjoint allocates nothing per
// gradient, for each stiff method and structure.
func TestBrusselatorAdjointAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	for _, c := range []struct {
		m ode.Method
		s string
	}{{ode.BDF(), "band"}, {ode.BDF(), "sparse"}, {ode.Rodas5P(), "band"}, {ode.Rodas5P(), "sparse"},
		{ode.Rosenbrock23(), "sparse"}, {free, "free"}} {
		t.Run(fmt.Sprintf("%v/%s", c.m, c.s), func(t *testing.T) {
			prob := brussSensProblem(10, c.s)
			gs, err := ode.NewGradientSolver(prob, c.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			θ, loss := []float32{1, 3, 1}, brussSensLoss()
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
		})
	}
}
