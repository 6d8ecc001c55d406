// Fitlv fits a mechanistic model to data by gradients through its ODE
// solves: the four rates and the two initial populations of a
// Lotka-Volterra model, from 20 noisy observations of both species
// (generated, seeded), by L-BFGS on the flat parameter vector.
//
//	go run ./examples/fitlv
//
// The model is a Go struct whose fields are views of one []float32
// (layout.Destructure); the initial state is read from θ by name
// (Problem.U0From), so its gradient lands in θ's layout beside the
// rates'. Each objective evaluation is one ode.GradientSolver call
// (forward sensitivities by default, -sens adjoint for the adjoint),
// which allocates nothing once warm. It prints the fitted values by name
// beside the true ones, the final loss, and the number and cost of the
// gradients.
package main
