package odead_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/odecheck"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// A right-hand side or a loss written with ad ops that fails on its tape
// ends every entry point of ode with its own error as the cause, through
// the problem's and the loss's Err, also when goroutines share one
// problem.

// errBroken is the error the failing functions below record on their tape.
var errBroken = errors.New("the ad function broke")

// breakingLV is adLV that records errBroken on its tape wherever fails(t)
// holds.
func breakingLV(fails func(t float64) bool) func(u, p ad.Var, t float64) ad.Var {
	return func(u, p ad.Var, t float64) ad.Var {
		if fails(t) {
			return u.Tape().Fail(errBroken)
		}
		return adLV(u, p, t)
	}
}

// failingLV is Lotka-Volterra on [0, 10] written with ad ops, failing at
// t ≥ tFail.
func failingLV(t *testing.T, tFail float64) ode.Problem[float32] {
	t.Helper()
	prob, err := odead.Problem(breakingLV(func(s float64) bool { return s >= tFail }), []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	return prob
}

// armedLV is Lotka-Volterra written with ad ops, failing once the loss
// returned with it has been evaluated: after the forward solve, in the
// backward or reverse pass.
func armedLV(t *testing.T) (ode.Problem[float32], ode.Loss[float32]) {
	t.Helper()
	var armed atomic.Bool
	prob, err := odead.Problem(breakingLV(func(float64) bool { return armed.Load() }), []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	loss := odead.Loss([]float64{10}, func(_ []float64, us []ad.Var) ad.Var {
		armed.Store(true)
		return ad.Sum(ad.Square(us[0]))
	})
	return prob, loss
}

// failingLoss is a loss written with ad ops that records errBroken on its
// tape.
func failingLoss() ode.Loss[float32] {
	return odead.Loss([]float64{10}, func(_ []float64, us []ad.Var) ad.Var { return us[0].Tape().Fail(errBroken) })
}

// upTo is 0, 1, …, n−1.
func upTo(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func TestErrHookSolve(t *testing.T) {
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		sol, err := ode.Solve(context.Background(), failingLV(t, 4.5), m)
		odecheck.Cause(t, m.Name(), err, errBroken)
		if sol == nil || sol.Stats.Retcode != ode.Failed || sol.T[len(sol.T)-1] >= 4.5 {
			t.Errorf("%s: solution %v, want one that ends with Failed before t=4.5", m.Name(), sol)
		}
	}
}

// Integrator: NewIntegrator and Run, then Reinit and Run again (the failure is
// sticky: the problem stays failed).
func TestErrHookIntegrator(t *testing.T) {
	prob := failingLV(t, 4.5)
	it, err := ode.NewIntegrator(prob, ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	odecheck.Cause(t, "Run", it.Run(context.Background()), errBroken)
	if err := it.Reinit(prob.U0, 0, 1, prob.P); err != nil {
		t.Fatal(err)
	}
	odecheck.Cause(t, "Run after Reinit", it.Run(context.Background()), errBroken)
}

// Ensemble.Solve on several workers: one trajectory with a failing
// problem of its own, and one failing problem shared by all.
func TestErrHookEnsembleSolve(t *testing.T) {
	ctx := context.Background()
	plain, err := odead.Problem(adLV, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	one := ode.Ensemble[float32]{Base: plain, N: 6, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float32]) {
			if i == 3 {
				f := failingLV(t, 4.5)
				p.F, p.Jac, p.Err = f.F, f.Jac, f.Err
			}
		}}
	for _, w := range []int{1, 3} {
		res, err := one.Solve(ctx, ode.Tsit5(), ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("one failing trajectory, workers ", w), err, res.Errors, errBroken, 3)
		shared := ode.Ensemble[float32]{Base: failingLV(t, 4.5), N: 6, ShardSize: 2}
		res, err = shared.Solve(ctx, ode.Tsit5(), ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("shared failing problem, workers ", w), err, res.Errors, errBroken, upTo(shared.N)...)
	}
}

// Goroutines that call Solve on one shared problem, from starts of which
// some make f fail (u1 above 6) and some not: every solve that fails has
// f's error as the cause, none a NonFinite or an error without it, and
// at least one fails.
func TestErrHookSharedProblem(t *testing.T) {
	var calls atomic.Int64
	f := func(u, p ad.Var, t float64) ad.Var {
		calls.Add(1)
		if u.Data()[0] > 6 {
			return u.Tape().Fail(errBroken)
		}
		return adLV(u, p, t)
	}
	prob, err := odead.Problem(f, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	starts := [][]float32{{1, 1}, {2, 1}, {1, 0.5}, {0.8, 1.2}, {3, 2}, {1.1, 0.9}}
	errs := make(chan error, len(starts))
	for _, u0 := range starts {
		go func() {
			p := prob
			p.U0 = u0
			_, err := ode.Solve(context.Background(), p, ode.Tsit5())
			errs <- err
		}()
	}
	failed := 0
	for range starts {
		if err := <-errs; err != nil {
			failed++
			odecheck.Cause(t, "a goroutine's solve", err, errBroken)
		}
	}
	if failed == 0 {
		t.Errorf("no solve failed (%d calls of f), want u1 to pass 6 in some", calls.Load())
	}
}

// Gradient and GradientSolver.Gradient by every sensitivity method: f
// failing in the forward solve, f failing after it (in the backward or
// reverse pass, or at the end), and the loss failing.
func TestErrHookGradient(t *testing.T) {
	ctx := context.Background()
	sens := []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 4},
		ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 4}}
	cases := []struct {
		name  string
		setup func() (ode.Problem[float32], ode.Loss[float32])
	}{
		{"f in the forward solve", func() (ode.Problem[float32], ode.Loss[float32]) { return failingLV(t, 4.5), lvLoss32() }},
		{"f after the forward solve", func() (ode.Problem[float32], ode.Loss[float32]) { return armedLV(t) }},
		{"the loss", func() (ode.Problem[float32], ode.Loss[float32]) { return failingLV(t, 100), failingLoss() }},
	}
	for _, s := range sens {
		for _, c := range cases {
			what := s.Name() + ", " + c.name
			prob, loss := c.setup()
			_, err := ode.Gradient(ctx, prob, ode.Tsit5(), loss, s)
			odecheck.Cause(t, what, err, errBroken)
			prob, loss = c.setup()
			gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = gs.Gradient(ctx, prob.P, loss)
			odecheck.Cause(t, "GradientSolver, "+what, err, errBroken)
		}
	}
}

// Ensemble.Gradient on several workers: one trajectory whose f fails,
// one whose loss fails, and a failing problem shared by all.
func TestErrHookEnsembleGradient(t *testing.T) {
	ctx := context.Background()
	plain, err := odead.Problem(adLV, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	ens := ode.Ensemble[float32]{Base: plain, N: 6, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float32]) {
			if i == 1 {
				f := failingLV(t, 4.5)
				p.F, p.JVP, p.VJP, p.Err = f.F, f.JVP, f.VJP, f.Err
			}
		}}
	lossFor := func(i int) ode.Loss[float32] {
		if i == 4 {
			return failingLoss()
		}
		return lvLoss32()
	}
	for _, w := range []int{1, 3} {
		res, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("ensemble gradient, workers ", w), err, res.Errors, errBroken, 1, 4)
		shared := ode.Ensemble[float32]{Base: failingLV(t, 4.5), N: 6, ShardSize: 2}
		res, err = shared.Gradient(ctx, ode.Tsit5(), func(int) ode.Loss[float32] { return lvLoss32() }, ode.InterpolatingAdjoint{}, ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("shared failing problem, workers ", w), err, res.Errors, errBroken, upTo(shared.N)...)
	}
}

// A problem and a loss that do not fail differentiate as before: the
// gradient of an ad problem is the same, bit for bit, after a
// GradientSolver was given a failing one.
func TestErrHookLeavesGoodProblems(t *testing.T) {
	ctx := context.Background()
	plain, err := odead.Problem(adLV, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := ode.NewGradientSolver(plain, ode.Tsit5(), ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gs.Gradient(ctx, plain.P, lvLoss32())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(g.P)
	_, err = gs.GradientFor(ctx, failingLV(t, 1), lvLoss32())
	odecheck.Cause(t, "GradientFor", err, errBroken)
	g, err = gs.GradientFor(ctx, plain, lvLoss32())
	if err != nil || !slices.Equal(g.P, want) {
		t.Errorf("after a failure: %v, dL/dp %v, want %v", err, g, want)
	}
}
