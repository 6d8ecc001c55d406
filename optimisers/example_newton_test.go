package optimisers_test

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// A fit and its uncertainty: y = A·exp(−k·t) with noise of σ = 0.02.
// NewtonCG minimises the negative log-likelihood with its exact
// Hessian-vector product; HessianFromHv and NewLaplace turn the curvature
// at the optimum into standard errors by layout path. The gradient's
// scale, 1/σ², keeps it above the default threshold in float32, so the run
// ends Float32Converged.
func ExampleNewtonCG() {
	lay, err := layout.NewBuilder().Add("A", 1).Add("k", 1).Build()
	if err != nil {
		panic(err)
	}
	const σ = 0.02
	ts := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 5}
	noise := []float64{0.01, -0.02, 0.015, 0, -0.01, 0.02, -0.015, 0.005}
	ys := make([]float64, len(ts))
	for i, t := range ts {
		ys[i] = 2*math.Exp(-0.7*t) + noise[i]
	}
	fg := func(θ, grad []float32) (float64, error) {
		a, k := float64(θ[0]), float64(θ[1])
		f, ga, gk := 0.0, 0.0, 0.0
		for i, t := range ts {
			e := math.Exp(-k * t)
			r := ys[i] - a*e
			f += r * r / (2 * σ * σ)
			ga -= r * e / (σ * σ)
			gk += r * a * t * e / (σ * σ)
		}
		if grad != nil {
			grad[0], grad[1] = float32(ga), float32(gk)
		}
		return f, nil
	}
	hv := func(θ, v, out []float32) error {
		a, k := float64(θ[0]), float64(θ[1])
		var haa, hak, hkk float64
		for i, t := range ts {
			e := math.Exp(-k * t)
			r := ys[i] - a*e
			haa += e * e / (σ * σ)
			hak += (r*t*e - a*t*e*e) / (σ * σ)
			hkk += (a*a*t*t*e*e - r*a*t*t*e) / (σ * σ)
		}
		out[0] = float32(haa*float64(v[0]) + hak*float64(v[1]))
		out[1] = float32(hak*float64(v[0]) + hkk*float64(v[1]))
		return nil
	}
	θ := []float32{1, 1}
	res, err := optimisers.Minimize(fg, θ, &optimisers.NewtonCG{Hv: hv}, nil)
	if err != nil {
		panic(err)
	}
	h, _, err := optimisers.HessianFromHv(θ, hv)
	if err != nil {
		panic(err)
	}
	l, err := optimisers.NewLaplace(h, lay, 0)
	if err != nil {
		panic(err)
	}
	for _, path := range []string{"A", "k"} {
		lo, _, _ := lay.Range(path)
		se, _ := l.StdErrOf(path)
		fmt.Printf("%s = %.3f ± %.3f\n", path, θ[lo], se[0])
	}
	fmt.Println(res.Status, l.Warning() == "")
	// Output:
	// A = 2.002 ± 0.018
	// k = 0.701 ± 0.012
	// Float32Converged true
}

// Newton on a full Hessian, for few parameters: Rosenbrock's banana from
// (−1.2, 1), with its gradient and Hessian written out.
func ExampleNewton() {
	fg := func(θ, grad []float32) (float64, error) {
		x, y := float64(θ[0]), float64(θ[1])
		if grad != nil {
			grad[0] = float32(-2*(1-x) - 400*x*(y-x*x))
			grad[1] = float32(200 * (y - x*x))
		}
		return (1-x)*(1-x) + 100*(y-x*x)*(y-x*x), nil
	}
	hessian := func(θ []float32, h *mat.SymDense) error {
		x, y := float64(θ[0]), float64(θ[1])
		h.SetSym(0, 0, 2-400*y+1200*x*x)
		h.SetSym(0, 1, -400*x)
		h.SetSym(1, 1, 200)
		return nil
	}
	θ := []float32{-1.2, 1}
	res, err := optimisers.Minimize(fg, θ, &optimisers.Newton{Hessian: hessian}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("θ = (%.4f, %.4f), %v\n", θ[0], θ[1], res.Status)
	// Output:
	// θ = (1.0000, 1.0000), GradientThreshold
}
