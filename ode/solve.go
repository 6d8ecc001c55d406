package ode

import "context"

// Solve integrates prob with method m and returns the saved solution.
//
// On success (or termination by an event) the error is nil and
// sol.Stats.Retcode says which. If the solve stops early — max steps, dt
// underflow, a non-finite state, a cancelled ctx — Solve returns the
// solution so far (by default with the last state reached as its end) and
// an *Error naming the return code, the time and, for NaN/Inf, the
// component. A callback that failed ends the solve with Failed and
// the callback's error as the cause (see Problem.Err). Invalid input
// returns a nil solution and an error.
//
// Solve allocates its result; the Integrator (NewIntegrator, Reinit, Run) is the
// allocation-free form for repeated solves.
func Solve[T Float](ctx context.Context, prob Problem[T], m Method, opts ...SolveOption) (*Solution[T], error) {
	it, err := NewIntegrator(prob, m, opts...)
	if err != nil {
		return nil, err
	}
	err = it.Run(ctx)
	return it.Solution(), err
}
