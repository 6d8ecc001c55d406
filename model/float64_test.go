package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

// The layers and losses that have float64 kernels in ad compute in
// float64 when their parameters and input do (θ through
// ad.ParamFloat64 or Param64): their constants follow the input's
// precision. The float64 checkers hold their gradients to 1e-8.
func TestLayersInFloat64(t *testing.T) {
	x := []float64{0.3, -1.2, 0.8, 2.1, -0.4, 0.9, 1.5, -0.7}
	cases := []struct {
		name  string
		net   model.Layer
		train bool
		loss  func(y ad.Var) ad.Var
	}{
		{"Dense LayerNorm Tanh", model.Chain(model.Dense(4, 6), model.LayerNorm([]int{6}), model.Tanh(), model.Dense(6, 3)), false, nil},
		{"Dropout in training", model.Chain(model.Dense(4, 6), model.Dropout(0.3), model.Sigmoid(), model.Dense(6, 3)), true, nil},
		{"BinaryCrossEntropy", model.Chain(model.Dense(4, 3), model.Sigmoid()), false, func(y ad.Var) ad.Var {
			target := y.Tape().Const64(flat.Tensor64{Shape: []int{2, 3}, Data: []float64{1, 0, 1, 0, 0, 1}})
			return model.BinaryCrossEntropy(y, target)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			θ32, err := model.Init(c.net, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			θ := make([]float64, len(θ32))
			for i, v := range θ32 {
				θ[i] = float64(v)
			}
			f := func(p ad.Var) ad.Var {
				// A fresh RNG of the same seed at every call: the same
				// Dropout mask for every evaluation of the check.
				ctx := &model.Ctx{Train: c.train, RNG: rand.New(rand.NewPCG(3, 4))}
				y := c.net.Apply(ctx, p, p.Tape().Const64(flat.Tensor64{Shape: []int{2, 4}, Data: x}))
				if c.loss != nil {
					return c.loss(y)
				}
				return ad.Sum(ad.Mul(y, y))
			}
			proptest.CheckGrad(t, f, θ, proptest.Tol(1e-8, 1e-10))
			proptest.CheckHVP(t, f, θ)
		})
	}
}
