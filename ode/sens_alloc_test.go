package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// A warm GradientSolver allocates nothing per gradient, for every method.
func TestGradientAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	loss := lvLoss()
	loss.At = []float64{2.5, 5, 10}
	for _, tc := range []struct {
		m ode.Method
		s ode.Sensitivity
	}{
		{ode.Tsit5(), ode.ForwardSensitivity{}},
		{ode.Tsit5(), ode.InterpolatingAdjoint{}},
		{ode.Tsit5(), ode.InterpolatingAdjoint{Checkpoints: 8}},
		{ode.Tsit5(), ode.BacksolveAdjoint{}},
		{ode.Tsit5(), ode.DiscreteAdjoint{}},
		{ode.Vern7(), ode.DiscreteAdjoint{Checkpoints: 8}},
		{ode.Rodas5P(), ode.ForwardSensitivity{}},
		{ode.Rodas5P(), ode.InterpolatingAdjoint{}},
	} {
		t.Run(tc.m.Name()+"/"+tc.s.Name(), func(t *testing.T) {
			prob := lvProblem()
			gs, err := ode.NewGradientSolver(prob, tc.m, tc.s, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			θ := []float32{1.5, 1, 3, 1}
			for range 3 {
				if _, err := gs.Gradient(ctx, θ, loss); err != nil {
					t.Fatal(err)
				}
			}
			a := testing.AllocsPerRun(20, func() {
				if _, err := gs.Gradient(ctx, θ, loss); err != nil {
					t.Fatal(err)
				}
			})
			if a != 0 {
				t.Errorf("%v allocations per warm gradient, want 0", a)
			}
		})
	}
}
