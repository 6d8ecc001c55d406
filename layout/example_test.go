package layout_test

import (
	"fmt"

	"github.com/flatkit/flatkit/layout"
)

func ExampleBuilder() {
	b := layout.NewBuilder()
	b.Add("weight", 2, 3)
	enc := b.Group("encoder")
	enc.Add("bias", 2)
	b.Tie("decoder.weight", "weight")
	lay, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	θ := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	w, _ := lay.View(θ, "decoder.weight")
	fmt.Println(w)
	lo, hi, _ := lay.Range("encoder")
	fmt.Println(lo, hi)
	fmt.Println(lay)
	// Output:
	// Tensor[2×3] [[1 2 3] [4 5 6]]
	// 6 8
	// Layout(8 floats, 2 leaves)
	//   weight [2×3] θ[0:6] =decoder.weight
	//   encoder.bias [2] θ[6:8]
}

func ExampleDestructure() {
	type Kinetics struct {
		Rates []float32 `flat:"shape=4"`
		Init  []float32 `flat:"shape=2"`
		Name  string    // a hyperparameter, left alone
	}
	k := Kinetics{Rates: []float32{1.5, 1, 3, 1}, Init: []float32{1, 1}, Name: "Lotka-Volterra"}
	θ, lay, err := layout.Destructure(&k)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lay.Leaves())
	θ[0] = 2 // k.Rates views θ
	fmt.Println(k.Rates)

	θ2 := []float32{0.5, 0.5, 0.5, 0.5, 9, 9}
	if err := layout.Restructure(θ2, lay, &k); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Rates, k.Init)
	// Output:
	// [Rates [4] θ[0:4] Init [2] θ[4:6]]
	// [2 1 3 1]
	// [0.5 0.5 0.5 0.5] [9 9]
}

func ExampleLayout_PathAt() {
	lay, _ := layout.NewBuilder().Add("0.weight", 3, 2).Add("0.bias", 3).Build()
	path, idx, _ := lay.PathAt(7)
	fmt.Println(path, idx)
	// Output: 0.bias 1
}
