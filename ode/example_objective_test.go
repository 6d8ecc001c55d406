package ode_test

import (
	"context"
	"fmt"

	"github.com/flatkit/flatkit/internal/sir"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// Fitting β and γ of an SIR model to noisy observations of I with
// optimisers.Minimize. L-BFGS's first trial step takes γ below zero, where
// the solve fails: Minimize takes that point as infeasible and steps back.
// The problem, its data and loss are in internal/sir.
func ExampleGradientSolver_Objective() {
	obs, err := sir.Observations()
	if err != nil {
		fmt.Println(err)
		return
	}
	θ := []float32{0.3, 0.2} // β, γ
	gs, err := ode.NewGradientSolver(sir.Problem(θ), ode.Tsit5(), ode.ForwardSensitivity{}, ode.Tol(1e-8, 1e-10))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := optimisers.Minimize(gs.Objective(context.Background(), sir.Loss(obs)), θ, nil, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("β = %.3f, γ = %.3f (true 0.5, 0.1)\n", θ[0], θ[1])
	// Output:
	// β = 0.501, γ = 0.101 (true 0.5, 0.1)
}
