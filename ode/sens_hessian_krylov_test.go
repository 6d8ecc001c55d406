package ode_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products on the 1-D Brusselator with the augmented
// systems solved by GMRES: matrix-free, or beside a band, sparse or dense
// structure that only the preconditioner's sweeps follow.

// brussKrylov is a case of the Brusselator's products: a method, a
// structure (brussSensProblem's) and whether the loss has a running cost.
type brussKrylov struct {
	m       ode.Method
	s       string // brussSensProblem's structure
	running bool
}

func (c brussKrylov) String() string {
	if p := methodPrecond(c.m); p != "" {
		return fmt.Sprintf("%v/%s/%s/running=%v", c.m, p, c.s, c.running)
	}
	return fmt.Sprintf("%v/%s/running=%v", c.m, c.s, c.running)
}

// methodPrecond names the preconditioner of a stiff method's GMRES, "no
// preconditioner" for GMRES without one, and is "" for a direct solver.
func methodPrecond(m ode.Method) string {
	var ls ode.LinearSolver
	switch m := m.(type) {
	case ode.BDFMethod:
		ls = m.Linear
	case ode.Rodas5PMethod:
		ls = m.Linear
	}
	g, ok := ls.(ode.GMRES)
	switch {
	case !ok:
		return ""
	case g.Precond == nil:
		return "no preconditioner"
	}
	return g.Precond.String()
}

// TestHvBrusselatorKrylov: H·v of brussHvLoss on the Brusselator (N = 24,
// 48 states, rtol 1e-8) by BDF and Rodas5P with GMRES, matrix-free or
// beside a band, sparse or dense structure, with band, block-diagonal or
// no preconditioner, equals the dense structure's direct product along
// three random directions, with and without a running cost, and equals
// Richardson central differences of InterpolatingAdjoint's gradient
// (brussHvRichardson) along the first.
//
// The bars against the dense product. GMRES stops each solve at a
// weighted residual of a fraction of the error test's scale, each block
// in its own weights: BDF's at 0.05 of Newton's tolerance (CVODE's
// epslin), so that what it leaves is corrected by the next Newton
// iterate and bounded by the same convergence test as a direct solve's;
// Rodas5P's at rosKrylovTol = 1e-4 of the scale per stage. The product
// then differs from the direct one by no more than the direct products
// of other structures do at this tolerance (TestHvBrusselatorStructures):
// BDF's iterates, and so its steps, move with the residuals, and its
// products differ by the discretisation error the tolerance admits,
// about 1e-7, bar 1e-6 for each of the θ and u0 rows; Rodas5P takes the
// same steps, its products differing by the stages' residuals alone,
// about 1e-9, bar 1e-8. Against the differences, whose own error is
// about 1e-7, the bar is 1e-5.
func TestHvBrusselatorKrylov(t *testing.T) {
	const N = 24
	ctx := context.Background()
	np, n := 3, 2*N
	vs := brussHvDirections(np, n, 3)
	band := ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}
	block := ode.GMRES{Precond: ode.BlockDiagonalPreconditioner{Block: 2}}
	cases := []brussKrylov{
		{ode.BDFMethod{Linear: band}, "free", false},
		{ode.BDFMethod{Linear: band}, "free", true},
		{ode.BDFMethod{Linear: band}, "band", false},
		{ode.BDFMethod{Linear: block}, "sparse", false},
		{ode.BDFMethod{Linear: ode.GMRES{}}, "free", false},
		{ode.BDFMethod{Linear: band}, "dense", false},
		{ode.Rodas5PMethod{Linear: band}, "free", false},
		{ode.Rodas5PMethod{Linear: band}, "free", true},
		{ode.Rodas5PMethod{Linear: band}, "dense", false},
	}
	refs := map[string][][]float64{} // the dense direct products, by method and running cost
	ref := func(m ode.Method, running bool) [][]float64 {
		direct := ode.Method(ode.BDF())
		if m.Name() == "Rodas5P" {
			direct = ode.Rodas5P()
		}
		k := fmt.Sprintf("%v/%v", direct, running)
		if r, ok := refs[k]; ok {
			return r
		}
		hs, err := ode.NewHvSolver(brussHvProblem(N, "dense"), direct, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6))
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]float64, len(vs))
		for i, v := range vs {
			r, err := hs.Hv(ctx, brussSensProblem(N, "dense").P, brussHvLoss(running), v)
			if err != nil {
				t.Fatalf("%v dense: %v", direct, err)
			}
			out[i] = append(append([]float64(nil), r.HvP...), r.HvU0...)
		}
		refs[k] = out
		return out
	}
	diffs := brussHvRichardson(t, N, vs[0])
	for _, c := range cases {
		want := ref(c.m, c.running)
		hs, err := ode.NewHvSolver(brussHvProblem(N, c.s), c.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6))
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for i, v := range vs {
			r, err := hs.Hv(ctx, brussSensProblem(N, c.s).P, brussHvLoss(c.running), v)
			if err != nil {
				t.Fatalf("%v: v%d: %v", c, i, err)
			}
			ep, eu := relNorm(r.HvP, want[i][:np]), relNorm(r.HvU0, want[i][np:])
			t.Logf("%v: v%d: H·v vs dense direct: θ rows %.2e, u0 rows %.2e; steps fwd %d bwd %d, GMRES iterations %d %d",
				c, i, ep, eu, r.Forward.Accepted, r.Backward.Accepted, r.Forward.LinearIters, r.Backward.LinearIters)
			bar := 1e-6
			if c.m.Name() == "Rodas5P" {
				bar = 1e-8
			}
			if max(ep, eu) > bar {
				t.Errorf("%v: v%d: H·v differs from the dense direct product by %.3g (θ rows) and %.3g (u0 rows), want ≤ %g", c, i, ep, eu, bar)
			}
			if i == 0 && !c.running {
				got := append(append([]float64(nil), r.HvP...), r.HvU0...)
				e := relNorm(got, diffs)
				t.Logf("%v: H·v0 vs Richardson differences of the gradient: %.2e", c, e)
				if e > 1e-5 {
					t.Errorf("%v: H·v differs from Richardson differences of the gradient by %.3g, want ≤ 1e-5", c, e)
				}
			}
		}
	}
}

// TestHvKrylovBlockWeights: BDF with GMRES and a band preconditioner on
// the Brusselator at N = 100 (200 states), rtol 1e-8, where the tangent's
// components near 0 sit on their absolute tolerance beside a state of
// order 1. Each block's GMRES solve stops in that block's own error
// weights; weighed by the state's, the tangent's corrections were left
// orders of magnitude above its error test's scale and the forward solve
// ended in a dt underflow near t = 0.08. The product equals the band
// structure's direct one.
func TestHvKrylovBlockWeights(t *testing.T) {
	const N = 100
	ctx := context.Background()
	v := brussHvDirections(3, 2*N, 1)[0]
	opts := []ode.GradientOption{ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6)}
	want, err := ode.HessianVector(ctx, brussHvProblem(N, "band"), ode.BDF(), brussHvLoss(false), v, ode.InterpolatingAdjoint{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m := ode.BDFMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
	r, err := ode.HessianVector(ctx, brussHvProblem(N, "free"), m, brussHvLoss(false), v, ode.InterpolatingAdjoint{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ep, eu := relNorm(r.HvP, want.HvP), relNorm(r.HvU0, want.HvU0)
	t.Logf("H·v vs the band direct product: θ rows %.2e, u0 rows %.2e; forward steps %d (%d error test failures), direct %d",
		ep, eu, r.Forward.Accepted, r.Forward.ErrTestFails, want.Forward.Accepted)
	if max(ep, eu) > 1e-6 {
		t.Errorf("H·v differs from the band direct product by %.3g (θ rows) and %.3g (u0 rows), want ≤ 1e-6", ep, eu)
	}
}

// With checkpoints, a GMRES product equals the one without: Rodas5P's to
// the bit (each segment solved again on the forward solve's own steps),
// BDF's within the checkpoint tests' bar (it solves each segment with its
// own error control: HessianVector's doc).
func TestHvKrylovCheckpoints(t *testing.T) {
	const N = 12
	ctx := context.Background()
	band := ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}
	v := brussHvDirections(3, 2*N, 2)[1]
	for _, c := range []struct {
		m   ode.Method
		bar float64
	}{{ode.Rodas5PMethod{Linear: band}, 0}, {ode.BDFMethod{Linear: band}, 1e-5}} {
		var want []float64
		for _, k := range []int{0, 4} {
			r, err := ode.HessianVector(ctx, brussHvProblem(N, "free"), c.m, brussHvLoss(true), v, ode.InterpolatingAdjoint{Checkpoints: k}, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatalf("%v, %d checkpoints: %v", c.m, k, err)
			}
			got := append(append([]float64(nil), r.HvP...), r.HvU0...)
			if k == 0 {
				want = got
				continue
			}
			e := relNorm(got, want)
			t.Logf("%v, %d checkpoints: H·v vs without %.2e", c.m, k, e)
			if e > c.bar {
				t.Errorf("%v, %d checkpoints: H·v differs from the product without by %.3g, want ≤ %g", c.m, k, e, c.bar)
			}
		}
	}
}
