package ode_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products on the 1-D Brusselator (brussSensProblem) in
// band and sparse structures, against the dense structure's and central
// differences of the gradient.

// brussVJPJVP is the Brusselator's Problem.VJPJVP on N grid points, exact:
// the VJP at w into gu, gp, and its derivative along (ud, pd) plus the VJP
// at wd into hu, hp.
func brussVJPJVP(N int) func(gu, gp, hu, hp, w, wd, u, ud []float64, p []float32, pd []float64, t float64) {
	vjp := brussSensProblem(N, "dense").VJP
	k := float64(N+1) * float64(N+1) / 50
	return func(gu, gp, hu, hp, w, wd, u, ud []float64, p []float32, pd []float64, t float64) {
		vjp(gu, gp, w, u, p, t)
		vjp(hu, hp, wd, u, p, t)
		var dB, dc float64
		if pd != nil {
			dB, dc = pd[1], pd[2]*k
		}
		at := func(x []float64, i int) (float64, float64) { // 0 outside: the boundary values are constants
			if i < 0 || i >= N {
				return 0, 0
			}
			return x[2*i], x[2*i+1]
		}
		var qb, qc float64
		for i := range N {
			ui, vi := u[2*i], u[2*i+1]
			dui, dvi := ud[2*i], ud[2*i+1]
			wu, wv := w[2*i], w[2*i+1]
			wul, wvl := at(w, i-1)
			wur, wvr := at(w, i+1)
			duv := dui*vi + ui*dvi
			hu[2*i] += (2*duv-dB-2*dc)*wu + (dB-2*duv)*wv + dc*(wul+wur)
			hu[2*i+1] += 2*ui*dui*(wu-wv) - 2*dc*wv + dc*(wvl+wvr)
			dul, dvl := at(ud, i-1)
			dur, dvr := at(ud, i+1)
			qb += dui * (wv - wu)
			qc += k * (wu*(dul-2*dui+dur) + wv*(dvl-2*dvi+dvr))
		}
		if hp != nil {
			hp[1] += qb
			hp[2] += qc
		}
	}
}

// brussHvProblem is brussSensProblem with its exact VJPJVP.
func brussHvProblem(N int, s string) ode.Problem[float64] {
	prob := brussSensProblem(N, s)
	prob.VJPJVP = brussVJPJVP(N)
	return prob
}

// brussHvLoss is a loss at three save times, c_k·(½ Σ u_j² + 0.1 Σ u_j v_j)
// over the grid, with its exact second derivative; with running, it adds
// ∫ 0.05 Σ v_j² dt.
func brussHvLoss(running bool) ode.HvLoss[float64] {
	c := []float64{1, 0.5, 2}
	l := ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: []float64{1, 4, 10},
		Point: func(i int, _ float64, u, dl []float64) float64 {
			var g float64
			for j := 0; j < len(u); j += 2 {
				g += c[i] * (u[j]*u[j]/2 + 0.1*u[j]*u[j+1])
				dl[j] = c[i] * (u[j] + 0.1*u[j+1])
				dl[j+1] = c[i] * 0.1 * u[j]
			}
			return g
		}},
		PointHv: func(i int, _ float64, u, ud, hv []float64) {
			for j := 0; j < len(u); j += 2 {
				hv[j] = c[i] * (ud[j] + 0.1*ud[j+1])
				hv[j+1] = c[i] * 0.1 * ud[j]
			}
		},
	}
	if running {
		l.Running = func(u []float64, _ []float32, _ float64) float64 {
			var g float64
			for j := 1; j < len(u); j += 2 {
				g += 0.05 * u[j] * u[j]
			}
			return g
		}
		l.RunningGradient = func(gu, _, u []float64, _ []float32, _ float64) {
			for j := 1; j < len(u); j += 2 {
				gu[j] += 0.1 * u[j]
			}
		}
		l.RunningHv = func(hu, _, u, ud []float64, _ []float32, _ []float64, _ float64) {
			for j := 1; j < len(u); j += 2 {
				hu[j] += 0.1 * ud[j]
			}
		}
	}
	return l
}

// brussHvDirections returns k random directions of length np + n; the
// first has dyadic parameter components, so that θ ± 2⁻ᵐ·v_θ is exact in
// float32.
func brussHvDirections(np, n, k int) [][]float64 {
	rng := rand.New(rand.NewPCG(31, 7))
	vs := make([][]float64, k)
	for i := range vs {
		v := make([]float64, np+n)
		for j := range v {
			v[j] = rng.NormFloat64()
		}
		vs[i] = v
	}
	copy(vs[0], []float64{1, 0.5, -0.25})
	return vs
}

// TestHvBrusselatorStructures: H·v of a loss of the Brusselator (N = 24,
// 48 states) by Rodas5P and BDF in band and sparse structures equals the
// dense structure's along random directions, with and without a running
// cost, and Rodas5P's band product equals Richardson-extrapolated central
// differences of InterpolatingAdjoint gradients along one direction.
func TestHvBrusselatorStructures(t *testing.T) {
	const N = 24
	ctx := context.Background()
	np, n := 3, 2*N
	vs := brussHvDirections(np, n, 3)
	type key struct {
		m       string
		running bool
	}
	cases := []struct {
		m       ode.Method
		running bool
		tol     float64 // the bar against the dense structure's product
	}{
		{ode.Rodas5P(), false, 1e-6},
		{ode.Rodas5P(), true, 1e-6},
		{ode.BDF(), false, 1e-6},
	}
	var bandRodas []float64 // H·vs[0] by Rodas5P in band storage, θ rows then u0's
	for _, c := range cases {
		dense, err := ode.NewHvSolver(brussHvProblem(N, "dense"), c.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6))
		if err != nil {
			t.Fatal(err)
		}
		ref := make([][]float64, len(vs))
		for i, v := range vs {
			r, err := dense.Hv(ctx, brussSensProblem(N, "dense").P, brussHvLoss(c.running), v)
			if err != nil {
				t.Fatalf("%v dense: %v", c.m, err)
			}
			ref[i] = append(append([]float64(nil), r.HvP...), r.HvU0...)
		}
		for _, s := range []string{"band", "sparse"} {
			name := fmt.Sprintf("%v/%s/running=%v", c.m, s, c.running)
			hs, err := ode.NewHvSolver(brussHvProblem(N, s), c.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var worst float64
			for i, v := range vs {
				r, err := hs.Hv(ctx, brussSensProblem(N, s).P, brussHvLoss(c.running), v)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got := append(append([]float64(nil), r.HvP...), r.HvU0...)
				e := relNorm(got, ref[i])
				ep, eu := relNorm(r.HvP, ref[i][:np]), relNorm(r.HvU0, ref[i][np:])
				worst = max(worst, e)
				t.Logf("%s: v%d: H·v vs dense %.2e (θ rows %.2e, u0 rows %.2e); steps fwd %d bwd %d", name, i, e, ep, eu, r.Forward.Accepted, r.Backward.Accepted)
				if max(ep, eu) > c.tol {
					t.Errorf("%s: v%d: H·v differs from the dense structure's by %.3g (θ rows) and %.3g (u0 rows), want ≤ %g", name, i, ep, eu, c.tol)
				}
				if i == 0 && s == "band" && !c.running && c.m.Name() == "Rodas5P" {
					bandRodas = got
				}
			}
		}
	}

	d1 := brussHvRichardson(t, N, vs[0])
	e := relNorm(bandRodas, d1)
	t.Logf("Rodas5P/band: H·v0 vs Richardson central differences of the gradient: %.2e (θ rows %.2e, u0 rows %.2e)", e, relNorm(bandRodas[:np], d1[:np]), relNorm(bandRodas[np:], d1[np:]))
	if e > 1e-5 {
		t.Errorf("Rodas5P/band: H·v differs from central differences of the gradient by %.3g, want ≤ 1e-5", e)
	}
}

// brussHvRichardson returns central differences of the gradient of
// brussHvLoss(false) on the Brusselator of N points along v (θ rows,
// then u0's), Richardson extrapolated from steps 2⁻⁸ and 2⁻⁹ (exact in
// float32 for θ when v's θ components are dyadic). The gradients are
// InterpolatingAdjoint's by Rodas5P in band storage at rtol 1e-11.
func brussHvRichardson(t *testing.T, N int, v []float64) []float64 {
	t.Helper()
	ctx := context.Background()
	prob := brussHvProblem(N, "band")
	np := len(prob.P)
	gs, err := ode.NewGradientSolver(prob, ode.Rodas5P(), ode.InterpolatingAdjoint{}, ode.Tol(1e-11, 1e-13), ode.MaxSteps(1e6))
	if err != nil {
		t.Fatal(err)
	}
	grad := func(h float64) []float64 {
		pp := prob
		pp.P = append([]float32(nil), prob.P...)
		pp.U0 = append([]float64(nil), prob.U0...)
		for k := range pp.P {
			pp.P[k] = float32(float64(prob.P[k]) + h*v[k])
			if float64(pp.P[k]) != float64(prob.P[k])+h*v[k] {
				t.Fatalf("θ_%d + %g·v is not exact in float32", k, h)
			}
		}
		for i := range pp.U0 {
			pp.U0[i] += h * v[np+i]
		}
		g, err := gs.GradientFor(ctx, pp, brussHvLoss(false).Loss)
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]float64(nil), g.P...), g.U0...)
	}
	diff := func(h float64) []float64 {
		a, b := grad(h), grad(-h)
		for i := range a {
			a[i] = (a[i] - b[i]) / (2 * h)
		}
		return a
	}
	d1, d2 := diff(math.Ldexp(1, -8)), diff(math.Ldexp(1, -9))
	for i := range d1 {
		d1[i] = (4*d2[i] - d1[i]) / 3
	}
	return d1
}

// A warm HvSolver allocates nothing per product in a band, sparse or
// matrix-free structure, with direct solvers or GMRES.
func TestHvBrusselatorStructuresAllocateNothingWarm(t *testing.T) {
	ctx := context.Background()
	band := ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}
	for _, c := range []brussKrylov{
		{ode.Rodas5P(), "band", true}, {ode.Rodas5P(), "sparse", true}, {ode.BDF(), "band", true},
		{ode.BDFMethod{Linear: band}, "free", true}, {ode.BDFMethod{Linear: ode.GMRES{}}, "free", false},
		{ode.Rodas5PMethod{Linear: band}, "free", true}, {ode.Rodas5PMethod{Linear: band}, "dense", false},
	} {
		t.Run(c.String(), func(t *testing.T) {
			prob := brussHvProblem(8, c.s)
			hs, err := ode.NewHvSolver(prob, c.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			loss := brussHvLoss(c.running)
			v := brussHvDirections(3, 16, 1)[0]
			if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(3, func() {
				if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%v allocations per warm product, want 0", a)
			}
		})
	}
}

// With InterpolatingAdjoint.FiniteDiff, the band structure's product from
// VJPJVP by differences of VJPs, and from JVP by differences of F too,
// equals the dense structure's exact product to the differences' error.
// (The backward solve takes about twice the steps of the exact products'
// in either structure: the differences' noise is in its error test.)
func TestHvBrusselatorStructuresFiniteDiff(t *testing.T) {
	const N = 12
	ctx := context.Background()
	v := brussHvDirections(3, 2*N, 2)[1]
	opts := []ode.GradientOption{ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6)}
	dense, err := ode.HessianVector(ctx, brussHvProblem(N, "dense"), ode.Rodas5P(), brussHvLoss(true), v, ode.InterpolatingAdjoint{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ref := append(append([]float64(nil), dense.HvP...), dense.HvU0...)
	for _, c := range []struct {
		name  string
		noJVP bool
	}{{"VJPJVP by differences", false}, {"JVP and VJPJVP by differences", true}} {
		prob := brussSensProblem(N, "band")
		if c.noJVP {
			prob.JVP = nil
		}
		l := brussHvLoss(true)
		l.PointHv, l.RunningHv = nil, nil
		r, err := ode.HessianVector(ctx, prob, ode.Rodas5P(), l, v, ode.InterpolatingAdjoint{FiniteDiff: true}, opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := append(append([]float64(nil), r.HvP...), r.HvU0...)
		e := relNorm(got, ref)
		t.Logf("%s: H·v vs the dense structure's exact product %.2e; steps fwd %d bwd %d (dense %d %d)", c.name, e, r.Forward.Accepted, r.Backward.Accepted, dense.Forward.Accepted, dense.Backward.Accepted)
		if e > 1e-5 {
			t.Errorf("%s: H·v differs from the dense structure's exact product by %.3g, want ≤ 1e-5", c.name, e)
		}
	}
}
