package odead_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"github.com/flatkit/flatkit/proptest"
)

// neuralProblem is the neural ODE u' = net(u) from u0 = (2, 0) over
// [0, 1.5], with model.Init's weights for net from PCG(1, 2).
func neuralProblem(t testing.TB, net model.Layer) ode.Problem[float32] {
	t.Helper()
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	prob, err := odead.NeuralProblem(net, []float32{2, 0}, 0, 1.5, θ)
	if err != nil {
		t.Fatal(err)
	}
	return prob
}

func TestNeuralProblemGradients(t *testing.T) {
	prob := neuralProblem(t, model.Chain(model.Dense(2, 16), model.Tanh(), model.Dense(16, 2)))
	loss := odead.Loss([]float64{0.5, 1, 1.5}, func(ts []float64, us []ad.Var) ad.Var {
		s := ad.Sum(ad.Square(us[0]))
		for _, u := range us[1:] {
			s = ad.Add(s, ad.Sum(ad.Square(u)))
		}
		return s
	})
	proptest.CheckODEGradient(t, prob, ode.Tsit5(), loss, proptest.ODETol(1e-5), proptest.ODEAgree(100), proptest.ODEFDTol(2e-3))
	proptest.CheckODEGradient(t, prob, ode.Rodas5P(), loss, proptest.ODETol(1e-5), proptest.ODEAgree(100))
}

// A universal ODE: known terms on four rates in θ plus a network on the
// rest of θ, through views (no copy).
func TestUniversalODE(t *testing.T) {
	nn := model.Chain(model.Dense(2, 8), model.Tanh(), model.Dense(8, 2))
	w, err := model.Init(nn, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	θ := append([]float32{1.5, 3}, w...)
	net := odead.NeuralRHS(nn)
	ude := func(u, p ad.Var, t float64) ad.Var {
		a, d := ad.Slice(p, 0, 1), ad.Slice(p, 1, 2)
		known := ad.Concat(0, ad.Mul(a, ad.Slice(u, 0, 1)), ad.Neg(ad.Mul(d, ad.Slice(u, 1, 2))))
		return ad.Add(known, net(u, ad.View(p, 2, len(w)), t))
	}
	prob, err := odead.Problem(ude, []float32{1, 1}, 0, 2, θ)
	if err != nil {
		t.Fatal(err)
	}
	loss := odead.Loss([]float64{1, 2}, func(ts []float64, us []ad.Var) ad.Var { return ad.Sum(ad.Square(ad.Sub(us[1], us[0]))) })
	proptest.CheckODEGradient(t, prob, ode.Tsit5(), loss, proptest.ODETol(1e-5), proptest.ODEAgree(100), proptest.ODEFDTol(2e-3))
}

func TestNeuralProblemErrors(t *testing.T) {
	nn := model.Chain(model.Dense(2, 4), model.Tanh(), model.Dense(4, 3))
	θ, _ := model.Init(nn, rand.New(rand.NewPCG(1, 2)))
	if _, err := odead.NeuralProblem(nn, []float32{1, 1}, 0, 1, θ); err == nil || !strings.Contains(err.Error(), "want (1, 2)") {
		t.Errorf("a network to 3 outputs for 2 states: got %v", err)
	}
	if _, err := odead.NeuralProblem(nn, []float32{1, 1}, 0, 1, θ[1:]); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("short θ: got %v", err)
	}
	_, err := ode.Gradient(context.Background(), ode.Problem[float32]{}, ode.Tsit5(), ode.Loss[float32]{}, nil)
	if err == nil {
		t.Error("empty problem: no error")
	}
}
