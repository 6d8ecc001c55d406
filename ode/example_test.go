package ode_test

import (
	"context"
	"fmt"

	"github.com/flatkit/flatkit/ode"
)

// Lotka–Volterra predator–prey dynamics with Tsit5, parameters read from a
// flat float32 buffer.
func Example() {
	lv := func(du, u []float64, p []float32, _ float64) {
		α, β, γ, δ := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
		du[0] = α*u[0] - β*u[0]*u[1]
		du[1] = -γ*u[1] + δ*u[0]*u[1]
	}
	θ := []float32{1.5, 1, 3, 1}
	prob := ode.Problem[float64]{F: lv, U0: []float64{1, 1}, T0: 0, T1: 10, P: θ}
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-8, 1e-10), ode.SaveAt(0, 2.5, 5, 10), ode.Dense())
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, t := range sol.T {
		fmt.Printf("t=%-4g prey %.6f  predators %.6f\n", t, sol.U[i][0], sol.U[i][1])
	}
	u, _ := sol.At(7.5)
	fmt.Printf("t=7.5  prey %.6f  predators %.6f (dense)\n", u[0], u[1])
	fmt.Println(sol.Stats.Retcode)
	// Output:
	// t=0    prey 1.000000  predators 1.000000
	// t=2.5  prey 2.178345  predators 4.369232
	// t=5    prey 6.098495  predators 0.628138
	// t=10   prey 1.026345  predators 0.909691
	// t=7.5  prey 2.347402  predators 0.274765 (dense)
	// Success
}

// The allocation-free form: one Integrator, many initial conditions.
func ExampleIntegrator() {
	lv := func(du, u []float64, _ []float32, _ float64) {
		du[0] = 1.5*u[0] - u[0]*u[1]
		du[1] = -3*u[1] + u[0]*u[1]
	}
	it, err := ode.NewIntegrator(ode.Problem[float64]{F: lv, U0: []float64{1, 1}, T1: 10}, ode.Tsit5())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, x := range []float64{1, 1.5, 2} {
		if err := it.Reinit([]float64{x, 1}, 0, 10, nil); err != nil {
			fmt.Println(err)
			return
		}
		if err := it.Run(context.Background()); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("u0=(%g, 1): u(10) = (%.4f, %.4f)\n", x, it.U()[0], it.U()[1])
	}
	// Output:
	// u0=(1, 1): u(10) = (1.0263, 0.9097)
	// u0=(1.5, 1): u(10) = (2.4248, 0.5120)
	// u0=(2, 1): u(10) = (3.7229, 0.7927)
}
