package ode_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/ode"
)

// wantSolveError checks that err is an *ode.Error with the code, that the
// solution carries the same code, and that the message names the time.
func wantSolveError(t *testing.T, sol *ode.Solution[float64], err error, code ode.Retcode) *ode.Error {
	t.Helper()
	var oe *ode.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T), want an *ode.Error with %v", err, err, code)
	}
	if oe.Code != code {
		t.Fatalf("code %v (%v), want %v", oe.Code, err, code)
	}
	if sol == nil || sol.Stats.Retcode != code {
		t.Fatalf("solution %v, want one with Retcode %v", sol, code)
	}
	if !strings.Contains(err.Error(), "t=") {
		t.Errorf("message %q does not name t", err)
	}
	t.Log(err)
	return oe
}

func TestMaxSteps(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	sol, err := ode.Solve(bg, prob, ode.Tsit5(), ode.MaxSteps(10))
	oe := wantSolveError(t, sol, err, ode.MaxStepsReached)
	if sol.Stats.Accepted+sol.Stats.Rejected != 10 || !(oe.T > 0 && oe.T < 10) {
		t.Errorf("stopped at t=%g after %d+%d steps", oe.T, sol.Stats.Accepted, sol.Stats.Rejected)
	}
	// the partial solution ends at the last state reached
	if len(sol.T) != 2 || sol.T[1] != oe.T {
		t.Errorf("partial solution at %v, want [0 %g]", sol.T, oe.T)
	}
}

func TestDtUnderflowAtBlowUp(t *testing.T) {
	// u' = u², u(0) = 1 is 1/(1−t): it blows up at t = 1.
	prob := ode.Problem[float64]{F: func(du, u []float64, _ []float32, _ float64) { du[0] = u[0] * u[0] }, U0: []float64{1}, T1: 2}
	for _, m := range adaptiveMethods {
		sol, err := ode.Solve(bg, prob, m)
		oe := wantSolveError(t, sol, err, ode.DtUnderflow)
		if math.Abs(oe.T-1) > 1e-5 {
			t.Errorf("%s: dt underflow at t=%.17g, want ≈ 1", m.Name(), oe.T)
		}
	}
}

func TestNonFinite(t *testing.T) {
	// F turns NaN in component 1 past t = 0.5 (and the NaN spreads to
	// component 0 through the coupling).
	f := func(du, u []float64, _ []float32, t float64) {
		lotkaVolterra(du, u, nil, t)
		if t > 0.5 {
			du[1] = math.NaN()
		}
	}
	prob := ode.Problem[float64]{F: f, U0: []float64{1, 1}, T1: 2}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.BS3()} {
		sol, err := ode.Solve(bg, prob, m)
		oe := wantSolveError(t, sol, err, ode.NonFinite)
		if oe.Component != 1 || math.Abs(oe.T-0.5) > 1e-3 {
			t.Errorf("%s: NaN reported in component %d at t=%g, want component 1 near t=0.5", m.Name(), oe.Component, oe.T)
		}
		if !strings.Contains(err.Error(), "component 1") {
			t.Errorf("message %q does not name the component", err)
		}
	}
	sol, err := ode.Solve(bg, prob, ode.RK4(), ode.FixedStep(0.1))
	if oe := wantSolveError(t, sol, err, ode.NonFinite); oe.Component != 1 {
		t.Errorf("RK4: component %d", oe.Component)
	}
	// NaN at the very start
	prob.F = func(du, _ []float64, _ []float32, _ float64) { du[0], du[1] = 0, math.Inf(1) }
	sol, err = ode.Solve(bg, prob, ode.Tsit5())
	if oe := wantSolveError(t, sol, err, ode.NonFinite); oe.Component != 1 || oe.T != 0 {
		t.Errorf("Inf at start: component %d at t=%g", oe.Component, oe.T)
	}
}

func TestCancelledContext(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	sol, err := ode.Solve(ctx, prob, ode.Tsit5())
	wantSolveError(t, sol, err, ode.Cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(%v, context.Canceled) = false", err)
	}
	// cancelled in the middle of a long solve: it stops soon after
	ctx, cancel = context.WithCancel(bg)
	calls := 0
	prob.F = func(du, u []float64, p []float32, t float64) {
		calls++
		if calls == 200 {
			cancel()
		}
		lotkaVolterra(du, u, p, t)
	}
	prob.T1 = 1e6
	sol, err = ode.Solve(ctx, prob, ode.Tsit5(), ode.MaxSteps(1e9))
	wantSolveError(t, sol, err, ode.Cancelled)
	if calls > 200+16*7+10 {
		t.Errorf("%d evaluations after cancel at 200: ctx checked too rarely", calls-200)
	}
	// a deadline
	ctx, cancel = context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	prob.F = lotkaVolterra
	start := time.Now()
	_, err = ode.Solve(ctx, prob, ode.Tsit5(), ode.MaxSteps(1e9), ode.Tol(1e-12, 1e-14))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("deadline: %v after %v", err, time.Since(start))
	}
}

func TestInvalidInput(t *testing.T) {
	good := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 1}
	cases := []struct {
		name string
		prob ode.Problem[float64]
		m    ode.Method
		opts []ode.SolveOption
		want string
	}{
		{"nil F", ode.Problem[float64]{U0: []float64{1}, T1: 1}, ode.Tsit5(), nil, "F is nil"},
		{"empty U0", ode.Problem[float64]{F: lotkaVolterra, T1: 1}, ode.Tsit5(), nil, "U0 is empty"},
		{"NaN U0", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, math.NaN()}, T1: 1}, ode.Tsit5(), nil, "U0[1]"},
		{"Inf T1", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: math.Inf(1)}, ode.Tsit5(), nil, "not finite"},
		{"nil method", good, nil, nil, "method is nil"},
		{"bad tol", good, ode.Tsit5(), []ode.SolveOption{ode.Tol(-1, 1e-8)}, "Tol(-1"},
		{"zero abs tol", good, ode.Tsit5(), []ode.SolveOption{ode.Tol(1e-6, 0)}, "abs > 0"},
		{"SaveAt outside", good, ode.Tsit5(), []ode.SolveOption{ode.SaveAt(0.5, 2)}, "SaveAt time 2"},
		{"NaN SaveAt", good, ode.Tsit5(), []ode.SolveOption{ode.SaveAt(0.5, math.NaN())}, "SaveAt: time NaN is not finite, want finite times"},
		{"MaxSteps 0", good, ode.Tsit5(), []ode.SolveOption{ode.MaxSteps(0)}, "MaxSteps(0)"},
		{"RK4 without step", good, ode.RK4(), nil, "FixedStep"},
		{"zero FixedStep", good, ode.RK4(), []ode.SolveOption{ode.FixedStep(0)}, "FixedStep(0)"},
		{"nil G", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 1, Events: []ode.Event[float64]{{}}}, ode.Tsit5(), nil, "Events[0].G"},
		{"bad direction", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 1,
			Events: []ode.Event[float64]{{G: func([]float64, float64) float64 { return 1 }, Direction: 2}}}, ode.Tsit5(), nil, "Direction = 2"},
	}
	for _, c := range cases {
		sol, err := ode.Solve(bg, c.prob, c.m, c.opts...)
		if err == nil || sol != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Solve = %v, %v; want a nil solution and an error containing %q", c.name, sol, err, c.want)
		}
	}
}

func TestStepAfterDone(t *testing.T) {
	it, err := ode.NewIntegrator(ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 1}, ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for !it.Done() {
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
		steps++
	}
	if err := it.Step(); !errors.Is(err, ode.ErrDone) {
		t.Errorf("Step after done: %v, want ErrDone", err)
	}
	if it.T() != 1 || steps != it.Stats().Accepted || it.Stats().Retcode != ode.Success {
		t.Errorf("t=%g after %d steps, stats %+v", it.T(), steps, it.Stats())
	}
	if err := it.Run(bg); err != nil {
		t.Errorf("Run after done: %v", err)
	}
}

func TestRetcodeStrings(t *testing.T) {
	for c, s := range map[ode.Retcode]string{ode.Unfinished: "Unfinished", ode.Success: "Success", ode.Terminated: "Terminated",
		ode.MaxStepsReached: "MaxSteps", ode.DtUnderflow: "DtUnderflow", ode.NonFinite: "NonFinite", ode.Cancelled: "Cancelled",
		ode.ErrorTestFailed: "ErrorTestFailed", ode.ConvergenceFailed: "ConvergenceFailed", 99: "Retcode(99)"} {
		if c.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(c), c.String(), s)
		}
	}
}
