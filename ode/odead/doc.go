// Package odead is the bridge from package ad to package ode: right-hand
// sides and losses written with ad ops become ode.Problem and ode.Loss
// values with exact derivatives. The solver core, ode, imports neither ad
// nor model; this package sits beside it, as DiffEqFlux sits beside
// OrdinaryDiffEq.
//
//	robertson := func(u, p ad.Var, t float64) ad.Var { … }    // ad ops on u and p
//	prob, err := odead.Problem(robertson, u0, 0, 1e5, θ)      // F, Jac, JVP, VJP and Err
//	sol, err := ode.Solve(ctx, prob, ode.Rodas5P())
//
// Func gives F and its Jacobian, for the stiff methods; Derivs adds the
// products JVP and VJP that ode.Gradient's sensitivity methods need;
// Problem is Derivs with the initial state and the span, and checks every
// product once up front. Loss adapts a loss of the saved states. NeuralRHS
// and NeuralProblem run a model.Layer as the right-hand side of a neural
// or universal ODE. AddEvent and AddSchedule add events and schedules
// whose conditions and effects are written with ad ops, with the exact
// derivatives that ode.Gradient needs to differentiate through them.
//
// # Errors
//
// The callbacks of an ode.Problem cannot return errors. A failure on the
// tape, such as a shape mismatch or a missing derivative rule, travels
// through the problem's error hook, ode.Problem.Err, or ode.Loss.Err for
// a loss. The first failure is kept, as a tape keeps its first error, and
// the hook reports it from then on. Every solve and gradient that uses the
// problem then ends with that error as its cause, also when goroutines
// share the problem. Make a new problem to go on. A failed call leaves
// its outputs as they were; the solvers do not use them.
//
// # Sparse and band Jacobians
//
// A large right-hand side, such as a PDE on a grid, has a sparse
// Jacobian. Sparsity finds its pattern from one recording of f, exactly:
// from the ops, never from values, so a dependency whose derivative is 0
// at the recorded state is kept. With the option SparseJac, Problem
// detects it and sets JacStructure to ode.SparseJacobian; Jac then
// writes the pattern's values by one forward sweep per colour of
// linalg.Colour, a few sweeps instead of n. BandJac gives a band
// structure instead, and JacPattern a pattern of the user's, for Func and
// Derivs too.
//
// # Replay
//
// With the option Replayable, each product is recorded once per goroutine
// and then replayed with new inputs: the bits of a fresh recording without
// building the tape's nodes. A function declares it when what it records
// depends on the shapes of u and p alone; NeuralProblem does.
package odead
