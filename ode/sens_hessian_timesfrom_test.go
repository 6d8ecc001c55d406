package ode_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products through schedules whose times are parameters.
// The PK model of sens_hessian_sched_test.go with the nonlinear dose
// u ← u·e^(−c) + D/(1 + u), θ = (k, D, c, a), and the first dose at a
// time computed from a:
//
//   - "linear": doses at (a, 2.5), a = 1.2: the dose time is a parameter;
//   - "quadratic": doses at (1 + a², 2.5 + a/5), a = 0.5: the time is
//     nonlinear in θ (its second derivative enters the product), and the
//     second row of TimesFromJac is not zero;
//   - "quadratic running": the same with the running cost ∫ D·u² dt,
//     whose integrand jumps at the doses: dL/dτ has its jump.

// tfSchedule is pkNonlinearDose with the times from ts(a).
func tfSchedule(quadratic bool) ode.Schedule[float64] {
	s := pkNonlinearDose()
	s.Times = make([]float64, 2)
	if quadratic {
		s.TimesFrom = func(ts []float64, p []float32) {
			a := float64(p[3])
			ts[0], ts[1] = 1+a*a, 2.5+a/5
		}
		s.TimesFromJac = func(J []float64, p []float32) {
			clear(J)
			J[3], J[4+3] = 2*float64(p[3]), 0.2
		}
		return s
	}
	s.TimesFrom = func(ts []float64, p []float32) { ts[0], ts[1] = float64(p[3]), 2.5 }
	s.TimesFromJac = func(J []float64, _ []float32) {
		clear(J)
		J[3] = 1
	}
	return s
}

func tfProblem(quadratic bool) ode.Problem[float64] {
	prob := pkProblem(true)
	prob.P = []float32{0.75, 2, 0.25, 1.2}
	if quadratic {
		prob.P[3] = 0.5
	}
	prob.Schedules = []ode.Schedule[float64]{tfSchedule(quadratic)}
	return prob
}

func tfCases() []evCase {
	return []evCase{
		{"linear", tfProblem(false), pkLoss()},
		{"quadratic", tfProblem(true), pkLoss()},
		{"quadratic running", tfProblem(true), pkRunningLoss()},
	}
}

// H·v through dose times that move with θ equals Richardson differences
// of InterpolatingAdjoint's gradient along the unit vectors and five
// random directions, with explicit and stiff methods, and the full
// Hessian is symmetric. The τ̇ terms are needed: with τ̇ = 0 in the
// backward jump (tauDot) every case fails, by 1 to 1.9 times the
// column's max; with τ̇ = 0 in the forward tangent's jump, by 0.83 times
// or more; with c(θ) = ∂ts/∂θ not evaluated again at the perturbed θ
// (timesRowAt at the solve's θ, so no ∂c/∂θ), the quadratic cases fail
// by 1.1 and 1.3 times and "linear" passes, its c being constant.
func TestHvTimesFromMatchDifferences(t *testing.T) {
	for _, c := range tfCases() {
		checkEvHessian(t, c, 1e-8)
	}
}

// BDF, checkpoints and TimesFromJac by differences (FiniteDiff) go
// through the moving doses too.
func TestHvTimesFromPaths(t *testing.T) {
	c := tfCases()[1]
	ref := pkDiffHessian(t, c.prob, c.loss)
	checkEvHv(t, c, ode.BDF(), ode.InterpolatingAdjoint{}, ref, 1e-8)
	checkEvHv(t, c, ode.Tsit5(), ode.InterpolatingAdjoint{Checkpoints: 2}, ref, 1e-8)
	fd := c
	fd.prob.Schedules = []ode.Schedule[float64]{tfSchedule(true)}
	fd.prob.Schedules[0].TimesFromJac = nil
	checkEvHv(t, fd, ode.Vern7(), ode.InterpolatingAdjoint{FiniteDiff: true}, ref, 1e-4)
}

// The Gauss–Newton product through moving doses applies the transpose of
// the forward tangent's jumps: for the least-squares loss it is 2·JᵀJ·v,
// J the sensitivities of the saves to (θ, u0), taken here by Richardson
// differences of the solution.
func TestHvTimesFromGaussNewton(t *testing.T) {
	ctx := context.Background()
	prob := tfProblem(true)
	loss := pkLoss()
	loss.GaussNewton = true
	N := len(prob.P) + 1
	// J[i][j] = ∂u(t_i)/∂(θ, u0)_j by Richardson differences.
	sol := func(j int, s float64) []float64 {
		q := prob
		q.P, q.U0 = append([]float32(nil), prob.P...), append([]float64(nil), prob.U0...)
		if j < len(q.P) {
			q.P[j] = float32(float64(q.P[j]) + s)
		} else {
			q.U0[0] += s
		}
		r, err := ode.Solve(ctx, q, ode.Vern7(), ode.Tol(1e-12, 1e-14), ode.SaveAt(pkAt...))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(pkAt))
		for i := range pkAt {
			out[i] = r.U[i][0]
		}
		return out
	}
	J := make([][]float64, N)
	for j := range N {
		J[j] = richardsonColumn(func(s float64) []float64 { return sol(j, s) })
	}
	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	v := []float64{0.3, -1, 0.5, 0.7, -0.4}
	r, err := hs.HvFor(ctx, prob, loss, v)
	if err != nil {
		t.Fatal(err)
	}
	hess := make([]float64, len(pkAt))
	for i := range hess {
		hess[i] = 2
	}
	checkGaussNewton(t, r, J, hess, v, 1e-7)
}

// checkGaussNewton checks the product r along v against Jᵀ·diag(hess)·J·v,
// J[j] the derivatives of the loss's arguments in (θ, u0)_j, relative to
// the largest entry, to tol.
func checkGaussNewton(t *testing.T, r *ode.HvResult[float64], J [][]float64, hess, v []float64, tol float64) {
	t.Helper()
	N := len(J)
	got := append(append([]float64(nil), r.HvP...), r.HvU0...)
	want := make([]float64, N)
	scale := 0.0
	for a := range N {
		for b := range N {
			for i, h := range hess {
				want[a] += J[a][i] * h * J[b][i] * v[b]
			}
		}
		scale = max(scale, math.Abs(want[a]))
	}
	for a := range N {
		if e := math.Abs(got[a]-want[a]) / scale; e > tol {
			t.Errorf("Gauss–Newton (H·v)[%d] = %.12g, want %.12g (%.2g)", a, got[a], want[a], e)
		}
	}
}

// Warm products through moving doses allocate nothing.
func TestHvTimesFromAllocatesNothingWarm(t *testing.T) {
	checkHvWarmAllocsPaths(t, tfProblem(true), pkRunningLoss(), []float64{0.3, -1, 0.5, 0.7, -0.4})
}

// checkHvWarmAllocsPaths is checkHvWarmAllocs with Tsit5, with and
// without checkpoints, and Rodas5P.
func checkHvWarmAllocsPaths(t *testing.T, prob ode.Problem[float64], loss ode.HvLoss[float64], v []float64) {
	t.Helper()
	for _, c := range []struct {
		m    ode.Method
		ckpt int
	}{{ode.Tsit5(), 0}, {ode.Tsit5(), 2}, {ode.Rodas5P(), 0}} {
		hs, err := ode.NewHvSolver(prob, c.m, ode.InterpolatingAdjoint{Checkpoints: c.ckpt}, ode.Tol(1e-6, 1e-8))
		if err != nil {
			t.Fatal(err)
		}
		checkHvWarmAllocs(t, fmt.Sprintf("%s, %d checkpoints", c.m.Name(), c.ckpt), hs, prob.P, loss, v)
	}
}

// A TimesFrom without TimesFromJac is an error naming it, unless
// FiniteDiff is set.
func TestHvTimesFromErrors(t *testing.T) {
	prob := tfProblem(false)
	prob.Schedules[0].TimesFromJac = nil
	_, err := ode.HessianVector(context.Background(), prob, ode.Tsit5(), pkLoss(), make([]float64, 5), ode.InterpolatingAdjoint{})
	if want := "Problem.Schedules[0].TimesFromJac is nil"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// Ensemble.HessianVector goes through each subject's moving doses.
func TestHvTimesFromEnsemble(t *testing.T) {
	ens := ode.Ensemble[float64]{Base: tfProblem(true), N: 5, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] = 1 + 0.1*float64(i)
		}}
	checkHvEnsemble(t, ens, pkLoss(), []float64{0.3, -1, 0.5, 0.7})
}

// checkHvWarmAllocs checks that products by hs at θ along v allocate
// nothing once warm.
func checkHvWarmAllocs(t *testing.T, name string, hs *ode.HvSolver[float64], θ []float32, loss ode.HvLoss[float64], v []float64) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		if _, err := hs.Hv(ctx, θ, loss, v); err != nil {
			t.Fatal(err)
		}
	}
	a := testing.AllocsPerRun(10, func() {
		if _, err := hs.Hv(ctx, θ, loss, v); err != nil {
			t.Fatal(err)
		}
	})
	if a != 0 {
		t.Errorf("%s: %v allocations per warm product, want 0", name, a)
	}
}

// BenchmarkHvTimesFromPK times one product through the nonlinear doses at
// times from θ beside InterpolatingAdjoint's gradient of the same loss,
// at rtol 1e-8, as BenchmarkHvSchedulePK does at fixed times.
func BenchmarkHvTimesFromPK(b *testing.B) {
	benchHvPK(b, tfProblem(true), []float64{0.3, -1, 0.5, 0.7, -0.4})
}

// benchHvPK times the gradient and one product along v of pkLoss for
// prob with Tsit5 at rtol 1e-8.
func benchHvPK(b *testing.B, prob ode.Problem[float64], v []float64) {
	ctx := context.Background()
	tol := ode.Tol(1e-8, 1e-10)
	b.Run("gradient", func(b *testing.B) {
		gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		loss := pkLoss().Loss
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gs.Gradient(ctx, prob.P, loss); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hv", func(b *testing.B) {
		hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		loss := pkLoss()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
