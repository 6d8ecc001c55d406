package odead_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
)

// BenchmarkHvNeural times a Hessian-vector product of a neural ODE
// 2-50-2 (Tsit5 rtol 1e-3) beside the gradient by InterpolatingAdjoint;
// bench hvp-ode reports the same ratio on the spiral.
func BenchmarkHvNeural(b *testing.B) {
	prob := neuralProblem(b, model.Chain(model.Dense(2, 50), model.Tanh(), model.Dense(50, 2)))
	loss := ode.HvLoss[float32]{Loss: squaresLoss()}
	ctx := context.Background()
	tol := ode.Tol(1e-3, 1e-6)
	b.Run("gradient", func(b *testing.B) {
		gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := gs.Gradient(ctx, prob.P, loss.Loss); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hv", func(b *testing.B) {
		hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		v := make([]float32, len(prob.P)+2)
		for i := range v {
			v[i] = float32(i%7) - 3
		}
		for b.Loop() {
			if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
