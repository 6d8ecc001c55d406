package ode_test

import (
	"context"
	"fmt"

	"github.com/flatkit/flatkit/ode"
)

// Robertson's stiff chemical kinetics with Rodas5P and the analytic
// Jacobian (without Jac, finite differences are used).
func ExampleRodas5P() {
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
		du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
		du[2] = 3e7 * u[1] * u[1]
	}
	jac := func(J, u []float64, _ []float32, _ float64) {
		J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
		J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
		J[6], J[7], J[8] = 0, 6e7*u[1], 0
	}
	prob := ode.Problem[float64]{F: f, Jac: jac, U0: []float64{1, 0, 0}, T1: 1e5}
	sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-6, 1e-8))
	if err != nil {
		panic(err)
	}
	u := sol.U[1]
	fmt.Printf("y(1e5) = (%.6f, %.4e, %.6f)\n", u[0], u[1], u[2])
	fmt.Printf("one Jacobian per step: %v\n", sol.Stats.JacEvals == sol.Stats.Accepted)
	// Output:
	// y(1e5) = (0.017866, 7.2748e-08, 0.982134)
	// one Jacobian per step: true
}
