// Fitlv fits a mechanistic model to data by gradients through its ODE
// solves. It fits the four rates and the two initial populations of a
// Lotka-Volterra model to 20 noisy observations of both species. The
// observations are generated from a seed. The fit is by L-BFGS on the flat
// parameter vector.
//
//	go run ./examples/fitlv
//
// The model is a Go struct whose fields are views of one []float32, made
// by layout.Destructure. Problem.U0From reads the initial state from θ by
// name, so its gradient lands in θ's layout beside the rates'. The
// objective is the GradientSolver's Objective: each evaluation is one
// gradient, which allocates nothing once warm. The rates are kept positive
// by optimisers.Positive on their path: L-BFGS works on their logarithms.
// A solve that fails at a trial point anyway is an infeasible point to
// Minimize, which shrinks its step. The gradients are forward
// sensitivities by default, the adjoint with -sens adjoint, or -sens
// discrete. The program prints the fitted values by name with their
// standard errors beside the true ones, the final loss, and the number and
// cost of the gradients. The standard errors are the Laplace
// approximation's (optimisers.NewLaplace) from the Hessian of the loss at
// the fit, by ode.FullHessian: one Hessian-vector product through the
// solve per parameter (HvSolver), with σ² estimated from the residuals.
package main
