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

// TestBrusselatorGradientStructures: the gradient of G = ½ Σ u_i(10)²
// with respect to θ = (A, B, 50α) and u0, on the 1-D Brusselator at N = 20
// (40 states), by InterpolatingAdjoint with BDF, Rodas5P and Rosenbrock23
// over band and sparse Jacobians (and matrix-free GMRES, and
// checkpointed), and by ForwardSensitivity with BDF and Rodas5P over band
// and sparse (BDF also dense, matrix-free GMRES with and without a band
// preconditioner, and without the sensitivities in the error test), agrees with the dense structure's adjoint gradient and with
// central differences of tight solves to 1e-5 relative in norm.
func TestBrusselatorGradientStructures(t *testing.T) {
	const N = 20
	gpFD, guFD := brussCentral(t, N)
	t.Logf("central differences: dG/dθ = %.8g", gpFD)
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	adj, fwd := ode.InterpolatingAdjoint{}, ode.ForwardSensitivity{}
	cases := []struct {
		m       ode.Method
		s       ode.Sensitivity
		structs []string
	}{
		{ode.BDF(), adj, []string{"band", "sparse"}},
		{ode.Rodas5P(), adj, []string{"band", "sparse"}},
		{ode.Rodas5P(), ode.InterpolatingAdjoint{Checkpoints: 16}, []string{"band"}},
		{ode.BDF(), ode.InterpolatingAdjoint{Checkpoints: 16}, []string{"band", "sparse"}},
		{ode.Rosenbrock23(), adj, []string{"band"}},
		{free, adj, []string{"free"}},
		{ode.BDF(), fwd, []string{"dense", "band", "sparse"}}, // the staggered corrector
		{free, fwd, []string{"free"}},
		{ode.BDFMethod{Linear: ode.GMRES{}}, fwd, []string{"free"}}, // without a preconditioner
		{ode.BDF(), ode.ForwardSensitivity{NoErrorControl: true}, []string{"band"}},
		{ode.Rodas5P(), fwd, []string{"band", "sparse"}},
	}
	for _, c := range cases {
		o := opts
		if c.m.Name() == "Rosenbrock23" { // third order: tighter, for the error to be well below the bar
			o = []ode.GradientOption{ode.Tol(1e-10, 1e-12), ode.MaxSteps(1e6)}
		}
		// The dense reference is the adjoint's: a dense ForwardSensitivity
		// factors n(1+m) = 1760 rows and takes minutes.
		dense, err := ode.Gradient(ctx, brussSensProblem(N, "dense"), c.m, brussSensLoss(), adj, o...)
		if err != nil {
			t.Fatalf("%v %v dense: %v", c.m, c.s, err)
		}
		for _, s := range c.structs {
			name := fmt.Sprintf("%v/%s/%s", c.m, c.s.Name(), s)
			if a, ok := c.s.(ode.InterpolatingAdjoint); ok && a.Checkpoints > 0 {
				name += "/checkpointed"
			}
			if f, ok := c.s.(ode.ForwardSensitivity); ok && f.NoErrorControl {
				name += "/NoErrorControl"
			}
			g, err := ode.Gradient(ctx, brussSensProblem(N, s), c.m, brussSensLoss(), c.s, o...)
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
			// A Rosenbrock method whose solves dropped the coupling of the
			// sensitivities or of μ would lose its order there and take
			// hundreds of times the steps.
			// (A checkpointed adjoint's Backward counts the replays too.)
			limit := 3
			if a, ok := c.s.(ode.InterpolatingAdjoint); ok && a.Checkpoints > 0 {
				limit = 4
			}
			if steps := g.Forward.Accepted + g.Backward.Accepted; steps > limit*dense.Forward.Accepted {
				t.Errorf("%s: %d steps, want at most %d× the state's %d", name, steps, limit, dense.Forward.Accepted)
			}
		}
	}
}

// A warm GradientSolver of the Brusselator's gradient allocates nothing
// per gradient, for each stiff method and structure.
func TestBrusselatorGradientAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	adj, fwd := ode.InterpolatingAdjoint{}, ode.ForwardSensitivity{}
	for _, c := range []struct {
		m  ode.Method
		s  string
		sv ode.Sensitivity
	}{{ode.BDF(), "band", adj}, {ode.BDF(), "sparse", adj}, {ode.Rodas5P(), "band", adj}, {ode.Rodas5P(), "sparse", adj},
		{ode.Rosenbrock23(), "sparse", adj}, {free, "free", adj}, {ode.BDF(), "band", fwd}, {ode.Rodas5P(), "sparse", fwd},
		{ode.BDF(), "dense", fwd}, {ode.BDF(), "sparse", fwd}, {free, "free", fwd},
		{ode.BDF(), "band", ode.ForwardSensitivity{NoErrorControl: true}}} {
		t.Run(fmt.Sprintf("%v/%s/%s", c.m, c.s, c.sv.Name()), func(t *testing.T) {
			prob := brussSensProblem(10, c.s)
			gs, err := ode.NewGradientSolver(prob, c.m, c.sv, ode.Tol(1e-6, 1e-8))
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

// TestBrusselatorRunningCostStructures: with a running cost
// ∫₀¹⁰ ½ Σ u_i² dt added to G, the forward pass carries its integral as
// a quadrature beside the structured state. The adjoint's gradient over
// band and sparse Jacobians, with BDF and Rodas5P, agrees with the dense
// structure's adjoint and with ForwardSensitivity over a band Jacobian
// (an independent method) to 1e-6 relative in norm.
func TestBrusselatorRunningCostStructures(t *testing.T) {
	const N = 10
	ctx := context.Background()
	loss := brussSensLoss()
	loss.Running = func(u []float64, _ []float32, _ float64) float64 {
		var g float64
		for i := 0; i < len(u); i += 2 {
			g += u[i] * u[i] / 2
		}
		return g
	}
	loss.RunningGradient = func(du, _, u []float64, _ []float32, _ float64) {
		for i := 0; i < len(u); i += 2 {
			du[i] += u[i]
		}
	}
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		dense, err := ode.Gradient(ctx, brussSensProblem(N, "dense"), m, loss, ode.InterpolatingAdjoint{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		fwd, err := ode.Gradient(ctx, brussSensProblem(N, "band"), m, loss, ode.ForwardSensitivity{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"band", "sparse"} {
			g, err := ode.Gradient(ctx, brussSensProblem(N, s), m, loss, ode.InterpolatingAdjoint{}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			d := max(relNorm(g.P, dense.P), relNorm(g.U0, dense.U0))
			f := max(relNorm(g.P, fwd.P), relNorm(g.U0, fwd.U0))
			t.Logf("%v/%s: G = %.10g, dG/dθ = %.8g; vs dense adjoint %.2e, vs forward sensitivities %.2e; steps fwd %d (dense %d) bwd %d",
				m, s, g.Value, g.P, d, f, g.Forward.Accepted, dense.Forward.Accepted, g.Backward.Accepted)
			if d > 1e-6 || f > 1e-6 || math.Abs(g.Value-dense.Value) > 1e-7*math.Abs(dense.Value) {
				t.Errorf("%v/%s: G = %.10g (dense %.10g), gradient differs from the dense adjoint's by %.3g and the forward sensitivities' by %.3g, want ≤ 1e-6",
					m, s, g.Value, dense.Value, d, f)
			}
			if g.Forward.Accepted > 2*dense.Forward.Accepted {
				t.Errorf("%v/%s: forward pass took %d steps, the dense one %d: the quadrature's coupling is wrong", m, s, g.Forward.Accepted, dense.Forward.Accepted)
			}
		}
	}
}
