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
		opts []ode.GradientOption
		want string
	}{
		{"events", withEvent, ode.Tsit5(), lvLoss(), ode.BacksolveAdjoint{}, nil, "BacksolveAdjoint does not differentiate through events and schedules yet with Tsit5 (Problem has 1 Events and 0 Schedules)"},
		{"discrete through BDF", lvProblem(), ode.BDF(), lvLoss(), ode.DiscreteAdjoint{}, nil, "DiscreteAdjoint supports the explicit"},
		{"no U0FromVJP", noU0VJP, ode.Tsit5(), lvLoss(), nil, nil, "U0FromVJP is nil"},
		{"NaN loss", lvProblem(), ode.Tsit5(), nanLoss, ode.InterpolatingAdjoint{}, nil, "the loss returned NaN"},
		{"Inf dL/du", lvProblem(), ode.Tsit5(), nanGrad, ode.ForwardSensitivity{}, nil, "dL/du at t=10 (At[0]) has +Inf in component 1"},
		{"Saved and Point", lvProblem(), ode.Tsit5(), both, nil, nil, "Saved and Point are both set"},
		{"Saved without At", lvProblem(), ode.Tsit5(), noAt, nil, nil, "Saved or Point is set but At is empty, want at least one save time"},
		{"At outside", lvProblem(), ode.Tsit5(), outside, nil, nil, "Loss.At time 11 is outside the span [0, 10]"},
		{"Running without its gradient", lvProblem(), ode.Tsit5(), noGrad, nil, nil, "RunningGradient is nil"},
		{"AdjointTol below 0", lvProblem(), ode.Tsit5(), lvLoss(), ode.InterpolatingAdjoint{AdjointTol: ode.Tolerance{Rel: -1, Abs: 1e-8}},
			nil, "ode: Gradient: InterpolatingAdjoint.AdjointTol = {Rel:-1 Abs:1e-08}, want a finite Rel ≥ 0 and a finite Abs > 0, or the zero Tolerance"},
		{"AdjointTol infinite", lvProblem(), ode.Tsit5(), lvLoss(), ode.BacksolveAdjoint{AdjointTol: ode.Tolerance{Rel: 1e-6, Abs: math.Inf(1)}},
			nil, "BacksolveAdjoint.AdjointTol = {Rel:1e-06 Abs:+Inf}, want"},
		{"QuadTol without Abs", lvProblem(), ode.Tsit5(), lvLoss(), ode.ForwardSensitivity{QuadTol: ode.Tolerance{Rel: 1e-6}},
			nil, "ForwardSensitivity.QuadTol = {Rel:1e-06 Abs:0}, want a finite Rel ≥ 0 and Abs > 0"},
		{"QuadTol NaN", lvProblem(), ode.Tsit5(), lvLoss(), ode.DiscreteAdjoint{QuadTol: ode.Tolerance{Rel: math.NaN(), Abs: 1}},
			nil, "DiscreteAdjoint.QuadTol = {Rel:NaN Abs:1}"},
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
	quadOut := ode.InterpolatingAdjoint{AdjointTol: ode.Tolerance{Rel: 1e-6, Abs: 1e-6}, QuadTol: ode.Tolerance{Rel: 1e-6, Abs: math.Inf(1)}}
	if _, err := ode.Gradient(ctx, lvProblem(), ode.Tsit5(), lvLoss(), quadOut); err != nil {
		t.Errorf("QuadTol with Abs +Inf (out of the error control): %v", err)
	}
	ens, lossFor := lvEnsemble(4)
	bad := ode.InterpolatingAdjoint{QuadTol: ode.Tolerance{Rel: -1, Abs: 1}}
	if _, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, bad); err == nil || !strings.Contains(err.Error(), "InterpolatingAdjoint.QuadTol = {Rel:-1 Abs:1}") {
		t.Errorf("Ensemble.Gradient with a bad QuadTol: got %v", err)
	}
	gs, err := ode.NewGradientSolver(lvProblem(), ode.Tsit5(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gs.Gradient(ctx, []float32{1, 2}, lvLoss()); err == nil || !strings.Contains(err.Error(), "len(P) = 2, want 4") {
		t.Errorf("Gradient with a short θ: got %v", err)
	}
}
