package optimisers_test

import (
	"fmt"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// Adam on a small quadratic, f(θ) = Σ (θᵢ - cᵢ)², whose gradient is
// 2(θ - c).
func Example() {
	lay, err := layout.NewBuilder().Add("x", 3).Build()
	if err != nil {
		panic(err)
	}
	c := []float32{1, -2, 0.5}
	θ := make([]float32, lay.Len())
	g := make([]float32, lay.Len())

	opt, err := optimisers.Setup(optimisers.Adam(0.05), lay)
	if err != nil {
		panic(err)
	}
	for range 1000 {
		for i := range θ {
			g[i] = 2 * (θ[i] - c[i])
		}
		if err := opt.Update(θ, g); err != nil {
			panic(err)
		}
	}
	fmt.Printf("θ = %.3f after %d steps\n", θ, opt.Steps())
	// Output: θ = [1.000 -2.000 0.500] after 1000 steps
}

// A chain clips the gradient, adds weight decay and hands the result to Adam;
// frozen leaves are left alone.
func ExampleChain() {
	b := layout.NewBuilder()
	b.Add("weight", 2, 2).Add("bias", 2)
	b.Freeze("bias")
	lay, err := b.Build()
	if err != nil {
		panic(err)
	}
	rule := optimisers.Chain(
		optimisers.ClipGlobalNorm(1),
		optimisers.WeightDecay(1e-4),
		optimisers.Adam(1e-3),
	)
	opt, err := optimisers.Setup(rule, lay)
	if err != nil {
		panic(err)
	}
	θ := []float32{1, 2, 3, 4, 5, 6}
	g := []float32{10, -10, 10, -10, 1, 1}
	if err := opt.Update(θ, g); err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", θ)
	// Output: [0.9990 2.0010 2.9990 4.0010 5.0000 6.0000]
}

// Step is the functional form of Update: it returns new parameters and a new
// state and leaves its arguments alone.
func ExampleStep() {
	lay, err := layout.NewBuilder().Add("x", 2).Build()
	if err != nil {
		panic(err)
	}
	opt, err := optimisers.Setup(optimisers.Momentum(0.1, 0.9), lay)
	if err != nil {
		panic(err)
	}
	s0 := opt.State()
	θ0 := []float32{1, 1}
	g := []float32{1, -1}
	θ1, s1, err := optimisers.Step(s0, θ0, g)
	if err != nil {
		panic(err)
	}
	θ2, s2, err := optimisers.Step(s1, θ1, g)
	if err != nil {
		panic(err)
	}
	fmt.Println(θ0, s0.Step, s0.Slots[0])
	fmt.Println(θ1, s1.Step, s1.Slots[0])
	fmt.Println(θ2, s2.Step, s2.Slots[0])
	// Output:
	// [1 1] 0 [0 0]
	// [0.9 1.1] 1 [1 -1]
	// [0.71 1.29] 2 [1.9 -1.9]
}

// An EMA at the end of a chain keeps a moving average of the parameters in the
// same layout; Average reads it.
func ExampleEMA() {
	lay, err := layout.NewBuilder().Add("x", 1).Build()
	if err != nil {
		panic(err)
	}
	opt, err := optimisers.Setup(optimisers.Chain(optimisers.Descent(1), optimisers.EMA(0.5)), lay)
	if err != nil {
		panic(err)
	}
	θ := []float32{0}
	avg := make([]float32, 1)
	for _, g := range []float32{-4, -4, -4} {
		if err := opt.Update(θ, []float32{g}); err != nil {
			panic(err)
		}
		copy(avg, θ)
		if err := opt.Average(avg); err != nil {
			panic(err)
		}
		fmt.Println(θ, avg)
	}
	// Output:
	// [4] [2]
	// [8] [5]
	// [12] [8.5]
}

// Gradient accumulation: the rules after AccumGrad see the mean of every n
// gradients, and θ moves once per n updates.
func ExampleAccumGrad() {
	lay, err := layout.NewBuilder().Add("x", 1).Build()
	if err != nil {
		panic(err)
	}
	opt, err := optimisers.Setup(optimisers.Chain(optimisers.AccumGrad(2), optimisers.Descent(1)), lay)
	if err != nil {
		panic(err)
	}
	θ := []float32{0}
	for _, g := range []float32{1, 3, 5, 7} {
		if err := opt.Update(θ, []float32{g}); err != nil {
			panic(err)
		}
		fmt.Println(θ, opt.Steps())
	}
	// Output:
	// [0] 0
	// [-2] 1
	// [-2] 1
	// [-8] 2
}

// Setup reports a bad hyperparameter by rule, field and value.
func ExampleSetup_invalid() {
	lay, err := layout.NewBuilder().Add("x", 1).Build()
	if err != nil {
		panic(err)
	}
	r := optimisers.Adam(1e-3)
	r.Beta1 = 1.5
	_, err = optimisers.Setup(optimisers.Chain(optimisers.ClipNorm(1), r), lay)
	fmt.Println(err)
	// Output: optimisers: Chain: rule 1: Adam: Beta1 = 1.5, want 0 ≤ Beta1 < 1
}
