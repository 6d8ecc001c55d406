package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

func TestSmallConvNetGradient(t *testing.T) {
	net := model.Chain(
		model.Conv([]int{3, 3}, 2, 3, model.Pad(1)),
		model.Tanh(),
		model.Flatten(),
		model.Dense(3*4*4, 5),
	)
	lay := mustLayout(t, net)
	want := []string{"0.weight", "0.bias", "3.weight", "3.bias"}
	for i, l := range lay.Leaves() {
		if l.Path != want[i] {
			t.Fatalf("leaf %d is %q, want %q", i, l.Path, want[i])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	θ, err := model.Init(net, rng)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*2*4*4)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	f := func(p ad.Var) ad.Var {
		xv := p.Tape().Const(flat.Tensor{Shape: []int{2, 2, 4, 4}, Data: x})
		return ad.Sum(ad.Square(net.Apply(nil, p, xv)))
	}
	proptest.CheckGrad(t, f, θ)
	proptest.CheckHVP(t, f, θ)
}
