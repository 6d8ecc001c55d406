package ode

import (
	"context"
	"math"
)

// Objective returns loss as a function of the parameters, in the form
// optimisers.Minimize takes (optimisers.Objective). Each call solves at θ,
// differentiates the loss by the solver's sensitivity method, writes dL/dθ
// into grad rounded to float32, and returns L. The solver's Problem.P is
// not used: θ is. ode does not import optimisers; the returned func is
// assignable to optimisers.Objective as it is.
//
// A failed solve or gradient returns its error: a step past where the
// model is well behaved, say. Minimize takes such a point as infeasible,
// shrinks its step and keeps the error as the cause if the run ends. A
// non-finite loss, or a gradient that float32 cannot hold, is an error
// too, naming θ's range.
//
// grad nil, as gradient-free methods pass, still runs the gradient and
// discards it. Like the GradientSolver, the objective is not safe for
// concurrent use; ctx is used by every call. The float64 gradient of the
// last call is the solver's: call Gradient directly for that path.
func (gs *GradientSolver[T]) Objective(ctx context.Context, loss Loss[T]) func(θ, grad []float32) (float64, error) {
	return func(θ, grad []float32) (float64, error) {
		if grad != nil && len(grad) != len(θ) {
			return 0, errorf("Objective: grad has length %d, want %d (len(θ))", len(grad), len(θ))
		}
		g, err := gs.Gradient(ctx, θ, loss)
		if err != nil {
			return 0, err
		}
		if math.IsNaN(g.Value) || math.IsInf(g.Value, 0) {
			return 0, errorf("Objective: the loss is %v with %v, want a number", g.Value, rangeOf(θ))
		}
		for i, v := range g.P[:len(grad)] {
			grad[i] = float32(v)
			if math.IsNaN(float64(v)) || math.IsInf(float64(grad[i]), 0) {
				return 0, errorf("Objective: dL/dθ[%d] is %v with %v, want a finite float32", i, v, rangeOf(θ))
			}
		}
		return g.Value, nil
	}
}
