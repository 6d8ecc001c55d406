package ad_test

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

func Example() {
	// A 2→1 linear model with its parameters in one flat vector.
	θ := []float32{0.5, -1, 0.25} // weight (1×2), then bias (1)
	x := flat.Tensor{Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}
	tape := ad.NewTape()
	p := tape.Param(θ)
	w := ad.View(p, 0, 1, 2)
	b := ad.View(p, 2, 1)
	y := ad.Add(ad.MatMulT(tape.Const(x), w, false, true), b) // x·wᵀ + b
	loss := ad.Mean(ad.Mul(y, y))
	g, err := tape.Grad(loss)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(loss.Item(), g)
	tape.Reset() // reuse the tape's memory for the next step
	// Output: 3.3125 [-8 -11.5 -3.5]
}

func ExampleHVP() {
	f := func(p ad.Var) ad.Var { return ad.Sum(ad.Mul(ad.Mul(p, p), p)) } // Σ θ³
	hv, err := ad.HVP(f, []float32{1, 2}, []float32{1, 1})
	fmt.Println(hv, err) // H = diag(6θ)
	// Output: [6 12] <nil>
}
