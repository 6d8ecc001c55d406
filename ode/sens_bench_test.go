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

// The 1-D Brusselator's adjoint gradient (G = ½ Σ u_i(10)², θ = (A, B,
// α)) beside the forward solve alone, at N = 500 (1000 states), rtol
// 1e-6, atol 1e-8, band and sparse: issue 28's cost ratio.
// go test ./ode -run X -bench BrusselatorAdjoint -benchtime 5x
func BenchmarkBrusselatorAdjoint(b *testing.B) {
	const N = 500
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-6, 1e-8)}
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		for _, s := range []string{"band", "sparse"} {
			prob := brussSensProblem(N, s)
			b.Run(m.Name()+"/"+s+"/solve", func(b *testing.B) {
				it, err := ode.NewIntegrator(prob, m, ode.Tol(1e-6, 1e-8))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := it.Reinit(prob.U0, prob.T0, prob.T1, prob.P); err != nil {
						b.Fatal(err)
					}
					if err := it.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(m.Name()+"/"+s+"/adjoint", func(b *testing.B) {
				gs, err := ode.NewGradientSolver(prob, m, ode.InterpolatingAdjoint{}, opts...)
				if err != nil {
					b.Fatal(err)
				}
				loss := brussSensLoss()
				b.ReportAllocs()
				var g *ode.GradientResult[float64]
				for b.Loop() {
					if g, err = gs.Gradient(ctx, prob.P, loss); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(g.Forward.Accepted), "fwd-steps")
				b.ReportMetric(float64(g.Backward.Accepted), "bwd-steps")
				b.ReportMetric(float64(g.Backward.JacEvals), "bwd-jacs")
				b.ReportMetric(float64(g.Backward.LUs), "bwd-LUs")
			})
		}
	}
}
