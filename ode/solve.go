package ode

import "context"

// Solve integrates prob with method m and returns the saved solution.
//
// On success, or on termination by an event, the error is nil and
// sol.Stats.Retcode says which. A solve can stop early: at MaxSteps, on a
// dt underflow, on a non-finite state or on a cancelled ctx. Solve then
// returns the solution so far and an *Error naming the return code, the
// time and, for a NaN or Inf, the component. By default that solution ends
// with the last state reached. A callback that failed ends the solve with
// Failed and the callback's error as the cause: see Problem.Err. Invalid
// input returns a nil solution and an error.
//
// Solve allocates its result. An Integrator is the allocation-free form
// for repeated solves.
func Solve[T Float](ctx context.Context, prob Problem[T], m Method, opts ...SolveOption) (*Solution[T], error) {
	it, err := NewIntegrator(prob, m, opts...)
	if err != nil {
		return nil, err
	}
	err = it.Run(ctx)
	return it.Solution(), err
}
