package model_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
)

// A small CNN: its parameters are one flat buffer named with PyTorch's
// nn.Sequential paths; the gradient is a flat vector of the same layout.
func Example() {
	net := model.Chain(
		model.Conv([]int{3, 3}, 1, 4, model.Pad(1)),
		model.Relu(),
		model.Flatten(),
		model.Dense(4*6*6, 3),
	)
	lay, err := model.Layout(net)
	if err != nil {
		panic(err)
	}
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	for _, l := range lay.Leaves() {
		fmt.Println(l.Path, l.Shape, l.Offset)
	}

	tape := ad.NewTape()
	x := tape.Const(flat.Tensor{Shape: []int{2, 1, 6, 6}, Data: make([]float32, 72)})
	y := net.Apply(nil, tape.Param(θ), x)
	g, err := tape.Grad(ad.Sum(y))
	fmt.Println(y.Shape(), len(g) == len(θ), err)
	// Output:
	// 0.weight [4 1 3 3] 0
	// 0.bias [4] 36
	// 3.weight [3 144] 40
	// 3.bias [3] 472
	// [2 3] true <nil>
}
