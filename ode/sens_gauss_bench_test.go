package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// GaussAdjoint beside InterpolatingAdjoint on the 1-D Brusselator at
// N = 500 (θ = (A, B, 50α) and the 1000 initial values), rtol 1e-6, atol
// 1e-8, band:
// go test ./ode -run X -bench GaussAdjointBrusselator -benchtime 10x
func BenchmarkGaussAdjointBrusselator(b *testing.B) {
	const N = 500
	ctx := context.Background()
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		for _, s := range []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.GaussAdjoint{}} {
			b.Run(m.Name()+"/"+s.Name(), func(b *testing.B) {
				prob := brussSensProblem(N, "band")
				gs, err := ode.NewGradientSolver(prob, m, s, ode.Tol(1e-6, 1e-8))
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
				b.ReportMetric(float64(g.Backward.Accepted), "bwd-steps")
				b.ReportMetric(g.P[0], "dG/dA")
			})
		}
	}
}
