package proptest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// NeuralODECase is a drawn neural ODE u' = Net(u; θ) with a loss. Net is a
// small network of smooth layers: Dense layers with tanh, sigmoid,
// softplus, gelu or swish between. Its weights come from model.Init,
// scaled so the solution stays bounded over the short span. The loss is L
// = Σ_i ‖u(t_i)‖²·w_i at 1–3 save times. Use it with CheckODEGradient:
//
//	c := proptest.NeuralODECases().Draw(t, "case")
//	prob, err := c.Problem()
//	proptest.CheckODEGradient(t, prob, ode.Tsit5(), c.Loss(), proptest.ODETol(1e-5), proptest.ODEAgree(100))
type NeuralODECase struct {
	Net    model.Layer
	Desc   string
	Theta  []float32
	U0     []float32
	T1     float64
	At     []float64
	Weight []float32
}

func (c NeuralODECase) String() string {
	return fmt.Sprintf("%s, u0=%v, T1=%g, At=%v", c.Desc, c.U0, c.T1, c.At)
}

// Problem is the case as a Problem[float32] from odead.NeuralProblem.
func (c NeuralODECase) Problem() (ode.Problem[float32], error) {
	return odead.NeuralProblem(c.Net, append([]float32(nil), c.U0...), 0, c.T1, append([]float32(nil), c.Theta...))
}

// Loss is the case's loss, written with ad ops (odead.Loss).
func (c NeuralODECase) Loss() ode.Loss[float32] {
	w := append([]float32(nil), c.Weight...)
	return odead.Loss(c.At, func(ts []float64, us []ad.Var) ad.Var {
		var s ad.Var
		for i, u := range us {
			term := ad.Scale(ad.Sum(ad.Square(u)), float64(w[i]))
			if s.IsZero() {
				s = term
			} else {
				s = ad.Add(s, term)
			}
		}
		return s
	})
}

var smoothActivations = []struct {
	name  string
	layer func() model.Layer
}{
	{"tanh", func() model.Layer { return model.Tanh() }},
	{"sigmoid", func() model.Layer { return model.Sigmoid() }},
	{"softplus", func() model.Layer { return model.Softplus() }},
	{"gelu", func() model.Layer { return model.Gelu() }},
	{"swish", func() model.Layer { return model.Swish() }},
}

// NeuralODECases draws small neural ODEs: n = 1–3 states, one or two
// hidden layers of 2–8 units.
func NeuralODECases() *rapid.Generator[NeuralODECase] {
	return rapid.Custom(func(t *rapid.T) NeuralODECase {
		n := rapid.IntRange(1, 3).Draw(t, "n")
		depth := rapid.IntRange(1, 2).Draw(t, "hidden layers")
		var layers []model.Layer
		var desc []string
		in := n
		for d := 0; d < depth; d++ {
			h := rapid.IntRange(2, 8).Draw(t, "width")
			a := smoothActivations[rapid.IntRange(0, len(smoothActivations)-1).Draw(t, "activation")]
			layers = append(layers, model.Dense(in, h), a.layer())
			desc = append(desc, fmt.Sprintf("Dense(%d,%d) %s", in, h, a.name))
			in = h
		}
		layers = append(layers, model.Dense(in, n))
		desc = append(desc, fmt.Sprintf("Dense(%d,%d)", in, n))
		net := model.Chain(layers...)
		seed := rapid.Uint64().Draw(t, "seed")
		θ, err := model.Init(net, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatalf("model.Init: %v", err)
		}
		c := NeuralODECase{Net: net, Desc: strings.Join(desc, " → "), Theta: θ}
		for i := 0; i < n; i++ {
			c.U0 = append(c.U0, float32(rapid.Float64Range(-1, 1).Draw(t, "u0")))
		}
		c.T1 = rapid.Float64Range(0.5, 1.5).Draw(t, "T1")
		k := rapid.IntRange(1, 3).Draw(t, "saves")
		for j := 0; j < k; j++ {
			c.At = append(c.At, min(c.T1*float64(j+1)/float64(k), c.T1))
			c.Weight = append(c.Weight, float32(rapid.Float64Range(0.5, 2).Draw(t, "weight")))
		}
		return c
	})
}
