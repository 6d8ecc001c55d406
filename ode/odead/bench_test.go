package odead_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The spiral network's right-hand side and its products, one call per
// op: the per-evaluation cost that a neural-ODE gradient multiplies.

func BenchmarkSpiralF(b *testing.B) {
	prob := neuralProblem(b, spiralNet())
	u, du := []float32{1.5, -0.3}, make([]float32, 2)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u[0] = 1.5 + float32(i&7)*1e-3
		prob.F(du, u, prob.P, 0)
	}
}

func BenchmarkSpiralVJP(b *testing.B) {
	prob := neuralProblem(b, spiralNet())
	u, w := []float32{1.5, -0.3}, []float32{0.7, -1.1}
	du, dp := make([]float32, 2), make([]float32, len(prob.P))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u[0] = 1.5 + float32(i&7)*1e-3
		prob.VJP(du, dp, w, u, prob.P, 0)
	}
}

func BenchmarkSpiralJVP(b *testing.B) {
	prob := neuralProblem(b, spiralNet())
	u, v, jv := []float32{1.5, -0.3}, []float32{0.7, -1.1}, make([]float32, 2)
	dp := make([]float32, len(prob.P))
	for i := range dp {
		dp[i] = float32(i%5) * 0.1
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u[0] = 1.5 + float32(i&7)*1e-3
		prob.JVP(jv, u, v, prob.P, dp, 0)
	}
}

// BenchmarkSpiralRK4Gradient is the PyTorch peer's case (bench node): the
// fixture's weights, RK4 with 4 steps per save interval, DiscreteAdjoint.
func BenchmarkSpiralRK4Gradient(b *testing.B) {
	f := loadSpiralFixture(b)
	prob, θ, _ := spiralProblem(b, f)
	T1 := f.TS[len(f.TS)-1]
	steps := (len(f.TS) - 1) * f.Steps
	gs, err := ode.NewGradientSolver(prob, ode.RK4(), ode.DiscreteAdjoint{}, ode.FixedStep(T1/float64(steps)))
	if err != nil {
		b.Fatal(err)
	}
	loss := spiralLoss(f)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gs.Gradient(context.Background(), θ, loss); err != nil {
			b.Fatal(err)
		}
	}
}
