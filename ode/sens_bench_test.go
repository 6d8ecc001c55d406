package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The Lotka-Volterra gradient at rtol 1e-6 by each method with Tsit5 and
// Vern7 (the sens scenario of cmd/flatkit, as a go test benchmark for
// profiling): BenchmarkLotkaVolterraGradient/Tsit5/ForwardSensitivity, …
func BenchmarkLotkaVolterraGradient(b *testing.B) {
	for _, sv := range []struct {
		name   string
		method ode.Method
	}{{"Tsit5", ode.Tsit5()}, {"Vern7", ode.Vern7()}} {
		b.Run(sv.name, func(b *testing.B) { benchLVGradient(b, sv.method) })
	}
}

func benchLVGradient(b *testing.B, method ode.Method) {
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 10},
		ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}} {
		b.Run(s.Name(), func(b *testing.B) {
			prob := lvProblem() // with Jac and ParamJac, as bench sens's
			prob.ParamJac = lvParamJac
			gs, err := ode.NewGradientSolver(prob, method, s, ode.Tol(1e-6, 1e-8))
			if err != nil {
				b.Fatal(err)
			}
			loss := lvLoss()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gs.Gradient(ctx, prob.P, loss); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
