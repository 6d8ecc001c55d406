package ode_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// GaussAdjoint on Lotka-Volterra matches CVODES's reference gradient
// (good to ~1e-9) to 1e-6 at rtol 1e-10 with Tsit5, Vern7 and DP5, every
// rule of 1 to 5 nodes with Vern7 included, and with checkpoints.
func TestGaussAdjointLotkaVolterra(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		m ode.Method
		s ode.GaussAdjoint
	}{
		{ode.Tsit5(), ode.GaussAdjoint{}}, {ode.DP5(), ode.GaussAdjoint{}}, {ode.Vern7(), ode.GaussAdjoint{}},
		{ode.Vern7(), ode.GaussAdjoint{Nodes: 3}}, {ode.Vern7(), ode.GaussAdjoint{Nodes: 5}},
		{ode.Tsit5(), ode.GaussAdjoint{Checkpoints: 8}}, {ode.Rodas5P(), ode.GaussAdjoint{}},
	} {
		g, err := ode.Gradient(ctx, lvProblem(), c.m, lvLoss(), c.s, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatalf("%v %+v: %v", c.m, c.s, err)
		}
		e := lvMaxRelErr(g)
		t.Logf("%v %+v: max relative error %.2e, backward steps %d", c.m, c.s, e, g.Backward.Accepted)
		if e > 1e-6 {
			t.Errorf("%v %+v: gradient %v %v off the reference by %.3g relative, want ≤ 1e-6", c.m, c.s, g.P, g.U0, e)
		}
	}
	// One node per step is a midpoint rule, second order: at the same
	// steps it is far off, which shows the nodes are used.
	g, err := ode.Gradient(ctx, lvProblem(), ode.Vern7(), lvLoss(), ode.GaussAdjoint{Nodes: 1}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	if e := lvMaxRelErr(g); e < 1e-6 {
		t.Errorf("a one-node rule with Vern7 is within %.2e of the reference; want a midpoint rule's error", e)
	}
	if _, err := ode.Gradient(ctx, lvProblem(), ode.Tsit5(), lvLoss(), ode.GaussAdjoint{Nodes: 6}); err == nil {
		t.Error("GaussAdjoint{Nodes: 6}: no error, want one naming the range")
	}
}

// TestGaussAdjointBrusselator: on the 1-D Brusselator at N = 20 with BDF
// and Rodas5P over band and sparse Jacobians, BDF-GMRES matrix-free and
// checkpointed BDF, GaussAdjoint agrees with central differences of
// tight solves and with InterpolatingAdjoint to 1e-5 relative in norm.
func TestGaussAdjointBrusselator(t *testing.T) {
	const N = 20
	gpFD, guFD := brussCentral(t, N)
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	free := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	for _, c := range []struct {
		m ode.Method
		s string
		g ode.GaussAdjoint
	}{
		{ode.BDF(), "band", ode.GaussAdjoint{}}, {ode.BDF(), "sparse", ode.GaussAdjoint{}},
		{ode.Rodas5P(), "band", ode.GaussAdjoint{}}, {ode.Rodas5P(), "sparse", ode.GaussAdjoint{}},
		{free, "free", ode.GaussAdjoint{}}, {ode.BDF(), "band", ode.GaussAdjoint{Checkpoints: 16}},
		{ode.Rodas5P(), "dense", ode.GaussAdjoint{}},
	} {
		name := fmt.Sprintf("%v/%s/%+v", c.m, c.s, c.g)
		g, err := ode.Gradient(ctx, brussSensProblem(N, c.s), c.m, brussSensLoss(), c.g, opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ia, err := ode.Gradient(ctx, brussSensProblem(N, c.s), c.m, brussSensLoss(), ode.InterpolatingAdjoint{Checkpoints: c.g.Checkpoints}, opts...)
		if err != nil {
			t.Fatalf("%s InterpolatingAdjoint: %v", name, err)
		}
		ep, eu := relNorm(g.P, gpFD), relNorm(g.U0, guFD)
		ip, iu := relNorm(g.P, ia.P), relNorm(g.U0, ia.U0)
		t.Logf("%s: dG/dθ = %.8g; vs central differences θ %.2e u0 %.2e; vs InterpolatingAdjoint θ %.2e u0 %.2e; bwd steps %d (InterpolatingAdjoint %d)",
			name, g.P, ep, eu, ip, iu, g.Backward.Accepted, ia.Backward.Accepted)
		if max(ep, eu) > 1e-5 {
			t.Errorf("%s: gradient differs from central differences by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, ep, eu)
		}
		if max(ip, iu) > 1e-5 {
			t.Errorf("%s: gradient differs from InterpolatingAdjoint's by %.3g (θ) and %.3g (u0), want ≤ 1e-5", name, ip, iu)
		}
	}
}

// A warm GradientSolver of GaussAdjoint allocates nothing per gradient.
func TestGaussAdjointAllocatesNothingWarm(t *testing.T) {
	for _, c := range []struct {
		m ode.Method
		s string
	}{{ode.BDF(), "band"}, {ode.Rodas5P(), "sparse"}, {ode.Tsit5(), "dense"}} {
		t.Run(fmt.Sprintf("%v/%s", c.m, c.s), func(t *testing.T) {
			checkWarmBrussAllocs(t, c.m, c.s, ode.GaussAdjoint{}, brussSensLoss())
		})
	}
}
