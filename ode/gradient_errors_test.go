package ode_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

func TestGradientErrors(t *testing.T) {
	ctx := context.Background()
	withEvent := lvProblem()
	withEvent.Events = []ode.Event[float64]{{G: func(u []float64, t float64) float64 { return u[0] - 2 }}}
	noU0VJP := lvProblem()
	noU0VJP.U0From = func(u0 []float64, p []float32) { u0[0], u0[1] = 1, 1 }
	nanLoss := lvLoss()
	nanLoss.Saved = func(ts []float64, us, dl [][]float64) float64 { return math.NaN() }
	nanGrad := lvLoss()
	nanGrad.Saved = func(ts []float64, us, dl [][]float64) float64 { dl[0][1] = math.Inf(1); return 1 }
	both := lvLoss()
	both.Point = func(i int, t float64, u, dl []float64) float64 { return 0 }
	noAt := lvLoss()
	noAt.At = nil
	outside := lvLoss()
	outside.At = []float64{11}
	noGrad := ode.Loss[float64]{Running: func(u []float64, p []float32, t float64) float64 { return u[0] }}
	blowUp := lvProblem()
	blowUp.F = func(du, u []float64, p []float32, t float64) { du[0], du[1] = u[0]*u[0], 0 }
	blowUp.U0 = []float64{1, 1}
	cases := []struct {
		name string
		prob ode.Problem[float64]
		m    ode.Method
		loss ode.Loss[float64]
		s    ode.Sensitivity
		opts []ode.Option
		want string
	}{
		{"events", withEvent, ode.Tsit5(), lvLoss(), ode.InterpolatingAdjoint{}, nil, "events are not supported yet (Problem has 1 events, want none)"},
		{"discrete through Rodas5P", lvProblem(), ode.Rodas5P(), lvLoss(), ode.DiscreteAdjoint{}, nil, "DiscreteAdjoint supports the explicit"},
		{"no U0FromVJP", noU0VJP, ode.Tsit5(), lvLoss(), nil, nil, "U0FromVJP is nil"},
		{"NaN loss", lvProblem(), ode.Tsit5(), nanLoss, ode.InterpolatingAdjoint{}, nil, "the loss returned NaN"},
		{"Inf dL/du", lvProblem(), ode.Tsit5(), nanGrad, ode.ForwardSensitivity{}, nil, "dL/du at t=10 (At[0]) has +Inf in component 1"},
		{"Saved and Point", lvProblem(), ode.Tsit5(), both, nil, nil, "Saved and Point are both set"},
		{"Saved without At", lvProblem(), ode.Tsit5(), noAt, nil, nil, "Saved or Point is set but At is empty, want at least one save time"},
		{"At outside", lvProblem(), ode.Tsit5(), outside, nil, nil, "Loss.At time 11 is outside the span [0, 10]"},
		{"Running without its gradient", lvProblem(), ode.Tsit5(), noGrad, nil, nil, "RunningGrad is nil"},
		{"SaveAt", lvProblem(), ode.Tsit5(), lvLoss(), nil, []ode.Option{ode.SaveAt(1)}, "ode: Gradient: option SaveAt applies to solves only"},
		{"forward blows up", blowUp, ode.Tsit5(), lvLoss(), ode.InterpolatingAdjoint{}, nil, "the forward solve: dt underflow at t="},
		{"nil method", lvProblem(), nil, lvLoss(), nil, nil, "method is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ode.Gradient(ctx, c.prob, c.m, c.loss, c.s, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if strings.Count(err.Error(), "ode:") > 1 {
				t.Errorf("%q repeats its prefix", err)
			}
		})
	}
	if _, err := ode.Init(lvProblem(), ode.Tsit5(), ode.AdjointTol(1e-6, 1e-8)); err == nil || !strings.Contains(err.Error(), "ode: Init: option AdjointTol applies to gradients only") {
		t.Errorf("Init with AdjointTol: got %v", err)
	}
	gs, err := ode.NewGradientSolver(lvProblem(), ode.Tsit5(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gs.Gradient(ctx, []float32{1, 2}, lvLoss()); err == nil || !strings.Contains(err.Error(), "len(P) = 2, want 4") {
		t.Errorf("Gradient with a short θ: got %v", err)
	}
}
