package ode_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flatkit/flatkit/internal/odecheck"
	"github.com/flatkit/flatkit/ode"
)

// The error hooks Problem.Err and Loss.Err: a failure of a callback that
// it could not return ends every entry point with that failure as the
// cause, and nothing a failed callback wrote is kept.

// errBroken is the error of the failing callbacks below.
var errBroken = errors.New("the callback broke")

// breaker keeps a callback's failure as the ad bridge does: the first
// error is kept and errOf reports it from then on.
type breaker struct{ err atomic.Pointer[error] }

func (b *breaker) fail() {
	e := errBroken
	b.err.CompareAndSwap(nil, &e)
}

func (b *breaker) errOf() error {
	if p := b.err.Load(); p != nil {
		return *p
	}
	return nil
}

// brokenLV is Lotka-Volterra whose callbacks fail where fails says: at
// time t, F and Jac (deriv false) or JVP and VJP (deriv true). A failing
// call leaves its outputs as they were, as the ad bridge does (finite
// values, which the step-size control may well accept), and records
// errBroken, which the problem's Err reports.
func brokenLV(fails func(t float64, deriv bool) bool) ode.Problem[float64] {
	b := new(breaker)
	p := lvProblem()
	broke := func(t float64, deriv bool) bool {
		if !fails(t, deriv) {
			return false
		}
		b.fail()
		return true
	}
	p.F = func(du, u []float64, q []float32, t float64) {
		if !broke(t, false) {
			lvF(du, u, q, t)
		}
	}
	p.Jac = func(J, u []float64, q []float32, t float64) {
		if !broke(t, false) {
			lvJac(J, u, q, t)
		}
	}
	p.JVP = func(jv, u, v []float64, q []float32, dp []float64, t float64) {
		if !broke(t, true) {
			lvJVP(jv, u, v, q, dp, t)
		}
	}
	p.VJP = func(du, dp, w, u []float64, q []float32, t float64) {
		if !broke(t, true) {
			lvVJP(du, dp, w, u, q, t)
		}
	}
	p.Err = b.errOf
	return p
}

// failingLV is brokenLV failing at t ≥ tFail: F and Jac if f is set, JVP
// and VJP if d is set.
func failingLV(tFail float64, f, d bool) ode.Problem[float64] {
	return brokenLV(func(t float64, deriv bool) bool { return t >= tFail && (deriv && d || !deriv && f) })
}

// failingLoss is lvLoss, whose Saved fails (and records errBroken for
// Err) if u(10)[0] > above.
func failingLoss(above float64) ode.Loss[float64] {
	l, b := lvLoss(), new(breaker)
	saved := l.Saved
	l.Err = b.errOf
	l.Saved = func(ts []float64, us, dl [][]float64) float64 {
		if us[0][0] > above {
			b.fail()
			return 0
		}
		return saved(ts, us, dl)
	}
	return l
}

// upTo is 0, 1, …, n−1.
func upTo(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

var hookMethods = []ode.Method{ode.Tsit5(), ode.Vern7(), ode.BS3(), ode.Rodas5P(), ode.Rosenbrock23()}

// Solve ends with Failed and the callback's error, and what it saved is
// what a solve without the failure saves up to there, bit for bit.
func TestErrHookSolve(t *testing.T) {
	ctx := context.Background()
	ts := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, m := range hookMethods {
		clean, err := ode.Solve(ctx, lvProblem(), m, ode.SaveAt(ts...))
		if err != nil {
			t.Fatal(err)
		}
		sol, err := ode.Solve(ctx, failingLV(4.5, true, false), m, ode.SaveAt(ts...))
		odecheck.Cause(t, m.Name(), err, errBroken)
		if sol == nil || sol.Stats.Retcode != ode.Failed {
			t.Fatalf("%s: solution %v, want one with Retcode Failed", m.Name(), sol)
		}
		if len(sol.T) == 0 || len(sol.T) > 4 || !slices.Equal(sol.T, clean.T[:len(sol.T)]) {
			t.Errorf("%s: saved at %v, want a prefix of %v before t=4.5", m.Name(), sol.T, clean.T)
		}
		for i := range sol.U {
			if !slices.Equal(sol.U[i], clean.U[i]) {
				t.Errorf("%s: saved u(%g) = %v, want %v", m.Name(), sol.T[i], sol.U[i], clean.U[i])
			}
		}
	}
	// Fixed steps, and a span of no length on a problem already failed:
	// the error is sticky.
	failed := failingLV(4.5, true, false)
	_, err := ode.Solve(ctx, failed, ode.RK4(), ode.FixedStep(0.01))
	odecheck.Cause(t, "RK4", err, errBroken)
	failed.T1 = failed.T0
	_, err = ode.Solve(ctx, failed, ode.Tsit5())
	odecheck.Cause(t, "empty span after a failure", err, errBroken)

	// A failing F that writes NaN at the start: the failure, not NonFinite.
	b := new(breaker)
	nan := ode.Problem[float64]{U0: []float64{1, 1}, T1: 1, Err: b.errOf,
		F: func(du, _ []float64, _ []float32, _ float64) { b.fail(); du[0], du[1] = math.NaN(), math.NaN() }}
	_, err = ode.Solve(ctx, nan, ode.Tsit5())
	odecheck.Cause(t, "NaN and a failure", err, errBroken)

	// A terminating event whose Affect (code of the user's, under the
	// same hook) fails: the end is the failure.
	ev, b2 := lvProblem(), new(breaker)
	ev.Err = b2.errOf
	ev.Events = []ode.Event[float64]{{G: func(_ []float64, t float64) float64 { return t - 3 },
		Affect: func([]float64, float64) bool { b2.fail(); return true }}}
	_, err = ode.Solve(ctx, ev, ode.Tsit5())
	odecheck.Cause(t, "a failing terminating event", err, errBroken)
}

// Integrator: NewIntegrator and Run, Reinit and Run again (the hook still reports
// the failure), Step by step, and U0From.
func TestErrHookIntegrator(t *testing.T) {
	ctx := context.Background()
	it, err := ode.NewIntegrator(failingLV(3, true, false), ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	odecheck.Cause(t, "Run", it.Run(ctx), errBroken)
	odecheck.Cause(t, "Err", it.Err(), errBroken)
	if err := it.Reinit([]float64{1, 1}, 0, 1, lvProblem().P); err != nil {
		t.Fatal(err)
	}
	odecheck.Cause(t, "Run after Reinit", it.Run(ctx), errBroken)

	it, err = ode.NewIntegrator(failingLV(3, true, false), ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		err = it.Step()
	}
	odecheck.Cause(t, "Step", err, errBroken)
	if !it.Done() || it.T() >= 3 {
		t.Errorf("Step: done %t at t=%g, want done before t=3", it.Done(), it.T())
	}

	p := failingLV(0, false, false)
	b := new(breaker)
	p.Err = b.errOf
	p.U0From = func(u0 []float64, _ []float32) { b.fail() }
	_, err = ode.NewIntegrator(p, ode.Tsit5())
	if !errors.Is(err, errBroken) {
		t.Errorf("NewIntegrator with a failing U0From: %v, want errBroken as the cause", err)
	}
}

// Ensemble.Solve, on several workers: one trajectory with a problem of
// its own that fails, and all trajectories sharing one failing problem.
func TestErrHookEnsembleSolve(t *testing.T) {
	ctx := context.Background()
	one := ode.Ensemble[float64]{Base: lvProblem(), N: 8, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			if i == 5 {
				f := failingLV(2, true, false)
				p.F, p.Jac, p.Err = f.F, f.Jac, f.Err
			}
		}}
	shared := ode.Ensemble[float64]{Base: failingLV(2, true, false), N: 8, ShardSize: 2}
	for _, w := range []int{1, 3} {
		res, err := one.Solve(ctx, ode.Tsit5(), ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("one failing trajectory, workers ", w), err, res.Errors, errBroken, 5)
		res, err = shared.Solve(ctx, ode.Tsit5(), ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("shared failing problem, workers ", w), err, res.Errors, errBroken, upTo(shared.N)...)
	}
}

// Goroutines that call Solve on one shared problem: each gets the
// callback's error, none a NonFinite or another error without it.
func TestErrHookSharedProblem(t *testing.T) {
	prob := failingLV(2, true, false)
	const G = 4
	errs := make(chan error, G)
	for range G {
		go func() {
			_, err := ode.Solve(context.Background(), prob, ode.Tsit5())
			errs <- err
		}()
	}
	for range G {
		odecheck.Cause(t, "a goroutine's solve", <-errs, errBroken)
	}
}

// armedLV is Lotka-Volterra whose F fails once the loss has been
// evaluated, after the forward solve, and the loss that arms it.
func armedLV() (ode.Problem[float64], ode.Loss[float64]) {
	var armed atomic.Bool
	l := lvLoss()
	saved := l.Saved
	l.Saved = func(ts []float64, us, dl [][]float64) float64 {
		armed.Store(true)
		return saved(ts, us, dl)
	}
	return brokenLV(func(_ float64, deriv bool) bool { return !deriv && armed.Load() }), l
}

// The gradient passes: a failure in the forward solve (F), in the
// derivative products alone (the backward or reverse pass, or the
// sensitivities), in the loss, and in F after the forward solve (the
// checkpoints' re-solves, the backward solve of the state, the reverse
// pass, the end). Each is caught where it happens: the error names the
// pass ("" is the check at the end, which names none).
func TestErrHookGradient(t *testing.T) {
	ctx := context.Background()
	sens := []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 4},
		ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 4}}
	const fwd, bwd, rev, re = "the forward solve", "the backward (adjoint) solve", "the reverse pass", "the forward re-solve"
	cases := []struct {
		name  string
		setup func() (ode.Problem[float64], ode.Loss[float64])
		where [6]string // by sens
	}{
		{"F", func() (ode.Problem[float64], ode.Loss[float64]) { return failingLV(4.5, true, false), lvLoss() },
			[6]string{fwd, fwd, fwd, fwd, fwd, fwd}},
		{"products", func() (ode.Problem[float64], ode.Loss[float64]) { return failingLV(4.5, false, true), lvLoss() },
			[6]string{fwd, bwd, bwd, bwd, rev, rev}},
		{"loss", func() (ode.Problem[float64], ode.Loss[float64]) {
			return failingLV(math.Inf(1), true, true), failingLoss(-10)
		},
			[6]string{"the loss", "the loss", "the loss", "the loss", "the loss", "the loss"}},
		{"F after the forward solve", armedLV, [6]string{"", "", re, bwd, "", rev}},
	}
	check := func(what, where string, err error) {
		t.Helper()
		odecheck.Cause(t, what, err, errBroken)
		msg := "ode: Gradient: " + where
		if where == "" {
			msg = "ode: Gradient: " + errBroken.Error()
		}
		if err != nil && !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("%s: %q, want it to start with %q", what, err, msg)
		}
	}
	for k, s := range sens {
		for _, c := range cases {
			what := s.Name() + " " + c.name
			prob, loss := c.setup()
			_, err := ode.Gradient(ctx, prob, ode.Tsit5(), loss, s)
			check(what, c.where[k], err)
			prob, loss = c.setup()
			gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = gs.Gradient(ctx, prob.P, loss)
			check("GradientSolver "+what, c.where[k], err)
		}
	}
	// A GradientSolver differentiates a plain problem as before after it
	// was given a failing one, and the hooks of a problem that does not
	// fail change nothing.
	gs, err := ode.NewGradientSolver(lvProblem(), ode.Tsit5(), ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := gs.Gradient(ctx, lvProblem().P, lvLoss())
	if err != nil {
		t.Fatal(err)
	}
	wantP := slices.Clone(want.P)
	_, err = gs.GradientFor(ctx, failingLV(1, true, true), lvLoss())
	odecheck.Cause(t, "GradientFor", err, errBroken)
	for _, p := range []ode.Problem[float64]{lvProblem(), failingLV(math.Inf(1), true, true)} {
		g, err := gs.GradientFor(ctx, p, lvLoss())
		if err != nil || !slices.Equal(g.P, wantP) {
			t.Errorf("after a failure: %v, dL/dp = %v, want %v", err, g, wantP)
		}
	}
}

// Ensemble.Gradient, on several workers: one trajectory whose problem
// fails, one whose loss fails, and a problem shared by all that fails.
func TestErrHookEnsembleGradient(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(8)
	ens.ShardSize = 2
	modify := ens.Modify
	ens.Modify = func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
		modify(i, rng, p)
		if i == 2 {
			f := failingLV(2, true, false)
			p.F, p.Err = f.F, f.Err
		}
	}
	withLoss := func(i int) ode.Loss[float64] {
		if i == 6 {
			return failingLoss(-10)
		}
		return lossFor(i)
	}
	shared := ode.Ensemble[float64]{Base: failingLV(4.5, false, true), N: 8, ShardSize: 2}
	for _, w := range []int{1, 3} {
		res, err := ens.Gradient(ctx, ode.Tsit5(), withLoss, ode.InterpolatingAdjoint{}, ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("ensemble gradient, workers ", w), err, res.Errors, errBroken, 2, 6)
		res, err = shared.Gradient(ctx, ode.Tsit5(), func(int) ode.Loss[float64] { return lvLoss() }, ode.InterpolatingAdjoint{}, ode.Workers(w))
		odecheck.Failures(t, fmt.Sprint("shared failing problem, workers ", w), err, res.Errors, errBroken, upTo(shared.N)...)
	}
}
