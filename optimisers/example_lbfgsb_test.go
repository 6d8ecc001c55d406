package optimisers_test

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// Bounds by layout path: the loss (a − 3)² + (b + 1)² has its minimum at
// (3, −1), outside the box a ∈ [0, 2], b ∈ [0, 1]. LBFGSB stops at the
// corner (2, 0), where the projected gradient is zero although the
// gradient is not.
func ExampleLBFGSB() {
	lay, err := layout.NewBuilder().Add("a", 1).Add("b", 1).Build()
	if err != nil {
		panic(err)
	}
	b, err := optimisers.BoundsByPath(lay, map[string]optimisers.Interval{
		"a": {Lo: 0, Hi: 2},
		"b": {Lo: 0, Hi: 1},
	})
	if err != nil {
		panic(err)
	}
	fg := func(θ, grad []float32) (float64, error) {
		a, b := float64(θ[0]), float64(θ[1])
		if grad != nil {
			grad[0], grad[1] = float32(2*(a-3)), float32(2*(b+1))
		}
		return (a-3)*(a-3) + (b+1)*(b+1), nil
	}
	θ := []float32{0.5, 0.5}
	res, err := optimisers.Minimize(fg, θ, &optimisers.LBFGSB{Bounds: b}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("a = %v, b = %v, gradient %v, %v\n", θ[0], θ[1], res.Gradient, res.Status)
	// Output:
	// a = 2, b = 0, gradient [-2 2], GradientThreshold
}

// Transforms by layout path: the rate k of y = exp(−k·t) must stay
// positive, so the fit runs on z = log k with plain LBFGS. FromUser gives
// the start in z, Wrap the objective in z, ToUser the fitted rate.
func ExampleTransforms() {
	lay, err := layout.NewBuilder().Add("k", 1).Build()
	if err != nil {
		panic(err)
	}
	tr, err := optimisers.TransformsByPath(lay, map[string]optimisers.Transform{"k": optimisers.Positive()})
	if err != nil {
		panic(err)
	}
	ts := []float64{0, 0.5, 1, 2, 4}
	ys := make([]float64, len(ts))
	for i, t := range ts {
		ys[i] = math.Exp(-0.7 * t)
	}
	fg := func(θ, grad []float32) (float64, error) { // in the user's units: θ[0] is k
		k := float64(θ[0])
		f, g := 0.0, 0.0
		for i, t := range ts {
			r := math.Exp(-k*t) - ys[i]
			f += r * r
			g += -2 * r * t * math.Exp(-k*t)
		}
		if grad != nil {
			grad[0] = float32(g)
		}
		return f, nil
	}
	θ := []float32{3} // the start, k = 3
	z := make([]float32, 1)
	if err := tr.FromUser(z, θ); err != nil {
		panic(err)
	}
	if _, err := optimisers.Minimize(tr.Wrap(fg), z, nil, nil); err != nil {
		panic(err)
	}
	if err := tr.ToUser(θ, z); err != nil {
		panic(err)
	}
	fmt.Printf("k = %.4f (z = log k = %.4f)\n", θ[0], z[0])
	// Output:
	// k = 0.7000 (z = log k = -0.3567)
}
