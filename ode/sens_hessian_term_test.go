package ode_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products through a firing that ends the solve. The
// losses read saves before it, a running cost whose integral ends at the
// firing and, in some cases, Loss.End at the end time and state: a
// first-passage time loss.
//
//   - "dose stop": evDoseProblem whose threshold dose ends the solve,
//     with the running cost ∫ p₁·N² dt;
//   - "ball stop": the bouncing ball ending at its second impact, with
//     End = (t − 3.5)² + v²/10 at the impact, which reads the time;
//   - "pk stop": the PK model's moving second dose (at 2.5 + a/5, from
//     TimesFrom) ending the solve, with the running cost and End = u²;
//   - "pk fixed stop": the same with the dose at the fixed time 2.5,
//     where a save sees the state before it.

func termCases() []evCase {
	dose := evDoseProblem()
	eff := dose.Events[0].Effect
	dose.Events[0].Effect = func(u []float64, p []float32, t float64) bool {
		eff(u, p, t)
		return true
	}
	doseLoss := evLoss(1, []float64{0.2, 0.5}, []float64{0.4, 0.9})
	doseLoss.Running = func(u []float64, p []float32, _ float64) float64 { return float64(p[1]) * u[0] * u[0] }
	doseLoss.RunningGradient = func(du, dp, u []float64, p []float32, _ float64) {
		du[0] += 2 * float64(p[1]) * u[0]
		dp[1] += u[0] * u[0]
	}

	ball := evBallProblem()
	beff := ball.Events[0].Effect
	ball.Events[0].Effect = func(u []float64, p []float32, t float64) bool {
		beff(u, p, t)
		return t > 2
	}
	ballLoss := evLoss(2, []float64{1, 2, 3}, []float64{5, 5, 6})
	ballLoss.End = func(t float64, u, dl []float64) (float64, float64) {
		dl[0], dl[1] = 0, u[1]/5
		return (t-3.5)*(t-3.5) + u[1]*u[1]/10, 2 * (t - 3.5)
	}

	pk := tfProblem(true)
	peff := pk.Schedules[0].Effect
	pk.Schedules[0].Effect = func(u []float64, p []float32, t float64) bool {
		peff(u, p, t)
		return t > 2
	}
	pkl := pkLossAt([]float64{0.5, 1.5, 2, 2.5}, []float64{0.6, 2.1, 1.5, 1.0})
	pkl.Running = func(u []float64, p []float32, _ float64) float64 { return float64(p[1]) * u[0] * u[0] }
	pkl.RunningGradient = func(du, dp, u []float64, p []float32, _ float64) {
		du[0] += 2 * float64(p[1]) * u[0]
		dp[1] += u[0] * u[0]
	}
	pkl.End = func(_ float64, u, dl []float64) (float64, float64) {
		dl[0] = 2 * u[0]
		return u[0] * u[0], 0
	}
	pkFixed := pkProblem(true) // a dose at the fixed time 2.5 ends the solve
	pkFixed.Schedules[0].Effect = pk.Schedules[0].Effect
	return []evCase{
		{"dose stop", dose, doseLoss},
		{"ball stop", ball, ballLoss},
		{"pk stop", pk, pkl},
		{"pk fixed stop", pkFixed, pkl},
	}
}

// H·v through a terminating firing equals Richardson differences of
// InterpolatingAdjoint's gradient along the unit vectors and five random
// directions, and the full Hessian is symmetric.
func TestHvTerminatingMatchDifferences(t *testing.T) {
	for _, c := range termCases() {
		checkEvHessian(t, c, 1e-8)
	}
}

// Save times after the firing that ended the solve are an error.
func TestHvTerminatingErrors(t *testing.T) {
	c := termCases()[1]
	late := evLoss(2, []float64{1, 4}, []float64{5, 3})
	_, err := ode.HessianVector(context.Background(), c.prob, ode.Tsit5(), late, []float64{1, 0, 0, 0}, ode.InterpolatingAdjoint{})
	if want := "after t="; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// Checkpoints give the products without them; warm products allocate
// nothing.
func TestHvTerminatingCheckpointsAndAllocs(t *testing.T) {
	ctx := context.Background()
	for _, c := range termCases() {
		N := len(c.prob.P) + len(c.prob.U0)
		v := make([]float64, N)
		for i := range v {
			v[i] = 0.5 - 0.3*float64(i%3)
		}
		want, err := ode.HessianVector(ctx, c.prob, ode.Tsit5(), c.loss, v, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatal(err)
		}
		w := hvFlat(want)
		hs, err := ode.NewHvSolver(c.prob, ode.Tsit5(), ode.InterpolatingAdjoint{Checkpoints: 2}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatal(err)
		}
		got, err := hs.HvFor(ctx, c.prob, c.loss, v)
		if err != nil {
			t.Fatal(err)
		}
		if e := hvWorstRel(hvFlat(got), w, len(c.prob.P), len(c.prob.U0)); e > 1e-9 {
			t.Errorf("%s, 2 checkpoints: product %v, without checkpoints %v (%.2g)", c.name, hvFlat(got), w, e)
		}
		checkHvWarmAllocs(t, c.name+", 2 checkpoints", hs, c.prob.P, c.loss, v)
	}
}

// The Gauss–Newton product with a first-passage loss End(τ, u⁺) alone is
// 2Jᵀ·diag(∇²End)·J·v, J the derivatives of the end time and state.
// The ball's End = (t − 3.5)² + v²/10 has the Hessian diag(2, 0, 1/5) in
// (t, h, v); J is taken by Richardson differences of the solution.
func TestHvTerminatingGaussNewton(t *testing.T) {
	ctx := context.Background()
	c := termCases()[1]
	loss := ode.HvLoss[float64]{Loss: ode.Loss[float64]{End: c.loss.End}, GaussNewton: true}
	prob := c.prob
	N := len(prob.P) + len(prob.U0)
	end := func(j int, s float64) []float64 {
		q := prob
		q.P, q.U0 = append([]float32(nil), prob.P...), append([]float64(nil), prob.U0...)
		if j < len(q.P) {
			q.P[j] = float32(float64(q.P[j]) + s)
		} else {
			q.U0[j-len(q.P)] += s
		}
		sol, err := ode.Solve(ctx, q, ode.Vern7(), ode.Tol(1e-12, 1e-14))
		if err != nil {
			t.Fatal(err)
		}
		k := len(sol.T) - 1
		return []float64{sol.T[k], sol.U[k][0], sol.U[k][1]}
	}
	J := make([][]float64, N)
	for j := range N {
		J[j] = richardsonColumn(func(s float64) []float64 { return end(j, s) })
	}
	hess := []float64{2, 0, 0.2}
	v := []float64{0.3, -0.2, 0.5, 0.7}
	r, err := ode.HessianVector(ctx, prob, ode.Tsit5(), loss, v, ode.InterpolatingAdjoint{}, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	checkGaussNewton(t, r, J, hess, v, 1e-7)
}

// BDF, Rodas5P with checkpoints and ensembles go through terminating
// firings too.
func TestHvTerminatingPaths(t *testing.T) {
	ctx := context.Background()
	cs := termCases()
	for _, c := range []evCase{cs[0], cs[2]} {
		checkEvHv(t, c, ode.BDF(), ode.InterpolatingAdjoint{}, pkDiffHessian(t, c.prob, c.loss), 1e-8)
		N := len(c.prob.P) + len(c.prob.U0)
		v := make([]float64, N)
		for i := range v {
			v[i] = 0.5 - 0.3*float64(i%3)
		}
		var w [][]float64
		for _, b := range []int{0, 2} {
			r, err := ode.HessianVector(ctx, c.prob, ode.Rodas5P(), c.loss, v, ode.InterpolatingAdjoint{Checkpoints: b}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			w = append(w, hvFlat(r))
		}
		if e := hvWorstRel(w[1], w[0], len(c.prob.P), len(c.prob.U0)); e > 1e-9 {
			t.Errorf("%s, Rodas5P, 2 checkpoints: product %v, without checkpoints %v (%.2g)", c.name, w[1], w[0], e)
		}
	}
	ens := ode.Ensemble[float64]{Base: cs[1].prob, N: 5, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 8 + 0.5*float64(i) }}
	checkHvEnsemble(t, ens, cs[1].loss, []float64{0.3, -1})
}
