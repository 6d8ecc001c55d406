package odead_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// gaussNet is a neural ODE's network with 1 082 parameters on 2 states.
func gaussNet() model.Layer {
	return model.Chain(model.Dense(2, 30), model.Tanh(), model.Dense(30, 30), model.Tanh(), model.Dense(30, 2))
}

func gaussNeuralProblem(t testing.TB) ode.Problem[float64] {
	t.Helper()
	net := gaussNet()
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	prob, err := odead.NeuralProblem(net, []float64{2, 0}, 0, 3, θ)
	if err != nil {
		t.Fatal(err)
	}
	return prob
}

func gaussNeuralLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{0.5, 1, 1.5, 2, 2.5, 3}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		dl[0], dl[1] = u[0], u[1]
		return (u[0]*u[0] + u[1]*u[1]) / 2
	}}
}

// GaussAdjoint and InterpolatingAdjoint agree on the 1 082-parameter
// neural ODE with Tsit5 and BDF to 1e-5 relative in norm at rtol 1e-8.
func TestGaussAdjointNeural(t *testing.T) {
	prob := gaussNeuralProblem(t)
	for _, m := range []ode.Method{ode.Tsit5(), ode.BDF()} {
		var ref []float64
		for _, s := range []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.GaussAdjoint{}} {
			g, err := ode.Gradient(context.Background(), prob, m, gaussNeuralLoss(), s, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatalf("%v %s: %v", m, s.Name(), err)
			}
			v := append(append([]float64(nil), g.P...), g.U0...)
			if ref == nil {
				ref = v
				continue
			}
			var d, n float64
			for i := range v {
				d += (v[i] - ref[i]) * (v[i] - ref[i])
				n += ref[i] * ref[i]
			}
			t.Logf("%v: GaussAdjoint vs InterpolatingAdjoint %.2e relative in norm", m, math.Sqrt(d/n))
			if math.Sqrt(d/n) > 1e-5 {
				t.Errorf("%v: GaussAdjoint differs from InterpolatingAdjoint by %.3g relative in norm, want ≤ 1e-5", m, math.Sqrt(d/n))
			}
		}
	}
}

// go test ./ode/odead -run X -bench GaussAdjointNeural -benchtime 20x
func BenchmarkGaussAdjointNeural(b *testing.B) {
	prob := gaussNeuralProblem(b)
	for _, m := range []ode.Method{ode.Tsit5(), ode.BDF()} {
		for _, s := range []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.GaussAdjoint{}} {
			b.Run(m.Name()+"/"+s.Name(), func(b *testing.B) {
				gs, err := ode.NewGradientSolver(prob, m, s, ode.Tol(1e-6, 1e-8))
				if err != nil {
					b.Fatal(err)
				}
				loss := gaussNeuralLoss()
				b.ReportAllocs()
				var g *ode.GradientResult[float64]
				for b.Loop() {
					if g, err = gs.Gradient(context.Background(), prob.P, loss); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(g.Backward.Accepted), "bwd-steps")
			})
		}
	}
}
