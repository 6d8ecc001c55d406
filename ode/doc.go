// Package ode solves initial value problems u' = F(u, p, t) for scientific
// code and neural ODEs. The state is generic (float32 or float64), time is
// float64, and the parameters p are the flat float32 buffer (or a view of
// it) that the rest of flatkit shares, passed to F untouched.
//
//	lv := func(du, u []float64, p []float32, t float64) {
//		du[0] = 1.5*u[0] - u[0]*u[1]
//		du[1] = -3*u[1] + u[0]*u[1]
//	}
//	prob := ode.Problem[float64]{F: lv, U0: []float64{1, 1}, T0: 0, T1: 10}
//	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-6, 1e-8), ode.SaveAt(ts...))
//
// # Methods
//
// Explicit Runge–Kutta methods, each a Butcher tableau in its own file over
// one generic loop: Tsit5 (the default choice), DP5, BS3 (loose tolerances,
// float32), Vern7 (tight tolerances) and RK4 (fixed step). Adaptive methods
// control the local error in the weighted RMS norm with the scale
// abs + rel·max(|u_prev|, |u_new|), with a PI step-size controller,
// Hairer's initial step and first-same-as-last reuse; see Tol and the
// comment in control.go for the constants.
//
// Stiff methods, Rosenbrock–Wanner methods over the same seam: Rosenbrock23
// (order 2 with a third-order estimate, loose tolerances, float32) and
// Rodas5P (order 5(4), the default stiff choice). Each step evaluates the
// Jacobian once, from Problem.Jac if given, else by forward differences of
// F (CVODE's increments), and factors W = I − γh·J (dense LU with partial
// pivoting). Package ode/odead supplies an exact Jacobian for a
// right-hand side written with ad ops. Stats counts Jacobians and LU
// factorisations; a W that stays singular ends the solve with Singular.
//
// # Output
//
// By default a Solution holds the start and the end. SaveAt saves at given
// times through each method's dense interpolant (Tsit5, DP5: free 4th
// order; Vern7: 7th order with lazily computed extra stages; BS3, RK4: cubic
// Hermite), without shortening steps; SaveEveryStep saves every step; Dense
// keeps the interpolant for Solution.At; TStops makes steps land exactly on
// given times. T1 < T0 integrates backwards.
//
// # Events
//
// An Event is a condition G(u, t) whose sign changes are located by root
// finding on the interpolant; its Affect may change the state or end the
// solve, and Direction filters rising or falling crossings.
//
// # Errors
//
// Reaching MaxSteps, a step size that underflows, NaN or Inf in F or the
// state, and a cancelled context end the solve with an *Error naming the
// Retcode, the time and, for NaN/Inf, the component; Solve returns the
// solution so far with it. A callback that cannot return an error (F,
// a loss) reports its failure through an error hook, Problem.Err or
// Loss.Err: the solvers consult it after every step attempt, and the
// solve ends with Failed and that error as the cause. Invalid input is
// reported before any step,
// naming the field, the value that came and the value wanted
// ("ode: Problem.U0[0] = +Inf, want a finite value").
//
// Every error says "ode: " once, however deep the failure: "ode: ensemble:
// 2 of 4 trajectories failed; the first: trajectory 3: dt underflow at …",
// "ode: Gradient: the forward solve: …". Callers branch with errors.As on
// *Error (the solve that stopped), TrajectoryError and *EnsembleError, and
// errors.Is reaches any cause, such as an error a right-hand side written
// with ad ops left on its tape; a cause from another package keeps its own
// words.
//
// # Ensembles
//
// An Ensemble solves N variants of one problem (Modify sets trajectory
// i's U0, parameter view and span from a per-trajectory generator) on
// Workers(n) goroutines, each reusing one Integrator. The trajectories
// are cut into shards of a fixed size, independent of n, and the partial
// results are combined in shard order, so the outputs and the Reduce sums
// are identical, bit for bit, for any n. A failing trajectory is reported
// with its index; the others finish. SolveShard and Merge split Solve at
// the shard, for runners that execute shards elsewhere.
//
// # Gradients through solves
//
// Gradient differentiates a Loss of the solution (a function of the states
// at save times, seeing them all at once, plus an optional running cost
// ∫g dt) with respect to the parameters, the initial state and the ends of
// the span, by one of four Sensitivity methods:
//
//	ForwardSensitivity    the sensitivity equations with the state; few parameters
//	InterpolatingAdjoint  the adjoint backwards on the forward dense output; many parameters
//	BacksolveAdjoint      the state re-solved backwards with the adjoint; least memory, unstable on stiff problems
//	DiscreteAdjoint       reverse mode through the steps taken: the exact gradient of the computed solution
//
// They need derivative products of F: Problem.JVP (forward) or Problem.VJP
// (adjoints), exact from odead.Derivs or odead.Problem for a right-hand
// side written with ad ops, written by hand for plain Go code, or by finite
// differences when the method's FiniteDiff field is set. Checkpoints bound
// the adjoints' memory; the fields AdjointTol and QuadTol set the backward
// solve's and the quadratures' tolerances; TolPerComponent sets a vector absolute
// tolerance. The stiff methods work with ForwardSensitivity and the
// continuous adjoints; DiscreteAdjoint needs an explicit method.
//
//	loss := ode.Loss[float64]{At: ts, Saved: func(ts []float64, us, dLdus [][]float64) float64 {…}}
//	g, err := ode.Gradient(ctx, prob, ode.Tsit5(), loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
//	// g.Value, g.P (dL/dθ), g.U0, g.T0, g.T1
//
// A GradientSolver (NewGradientSolver, then Gradient or GradientFor) is the
// reusable form: once warm a gradient allocates nothing.
//
// # Repeated solves
//
// Solve allocates its Solution. An Integrator (NewIntegrator, then Reinit or
// ReinitProblem and Run, or Step by step) reuses all its buffers: a warm
// Reinit+Run allocates nothing, and reads its results through U, T, Saved
// and Stats.
//
// # Options
//
// Every call takes functional options (Tol, SaveAt, Workers, …), the same
// values for float32 and float64 problems. Their types say where they
// apply, so an option that does not apply to a call does not compile:
// Workers given to Solve, SaveAt given to Gradient, Indices given to
// Ensemble.Solve. There are four kinds of option:
//
//	Option         Tol, TolPerComponent, MaxSteps, TStops, InitialStep, FixedStep: every call
//	SaveOption     SaveAt, Dense, SaveEveryStep: the solves (a gradient's save times are Loss.At)
//	WorkersOption  Workers: the two calls that run shards on goroutines
//	BatchOption    Indices, PerTrajectoryU0: the ensemble gradients
//
// Each call takes an interface that the kinds it accepts satisfy:
//
//	SolveOption             Solve, NewIntegrator, SolveShard  Option, SaveOption
//	EnsembleSolveOption     Ensemble.Solve                    Option, SaveOption, WorkersOption
//	GradientOption          Gradient, NewGradientSolver       Option
//	GradientShardOption     GradientShard                     Option, BatchOption
//	EnsembleGradientOption  Ensemble.Gradient                 Option, WorkersOption, BatchOption
//
// A stored list of Options passes to any call through OptionsFor.
//
// A method's settings are fields of its value, zero meaning a documented
// default, as in gonum: InterpolatingAdjoint{Checkpoints: 100,
// QuadTol: ode.Tolerance{Rel: 1e-6, Abs: math.Inf(1)}}. What an Ensemble
// computes (its trajectories, Seed, ShardSize, which fix the shards and so
// the bits of every sum) are fields too; how one call runs (tolerances,
// Workers, a minibatch of Indices) are options.
//
// # Files
//
// The files group by concern; a file's prefix names its group.
//
//	Core
//	problem.go              Problem, Event, Float and input checks
//	solve.go                Solve
//	solution.go             Solution and its dense output
//	integrator.go           Integrator, Stats: set-up, Reinit, Run, Step
//	integrator_step.go      one step attempt, its acceptance, replay, interpolation
//	control.go              the error norm, the initial step, the PI controller
//	events.go               locating and firing events
//	errors.go               Retcode, Error and the package's error prefix
//	options.go              the option kinds, the common and the solve options
//	fastmath.go             the controller's fast log2 and exp2
//	alloc.go, assert.go     padded buffers; compile-time interface checks
//
//	Methods
//	method.go               Method and the stepper seam between methods and Integrator
//	method_tableau.go       Butcher tableaus and their checks
//	method_erk.go           the explicit Runge–Kutta loop and its dense output
//	method_combine_*        the ERK stage sums: unrolled, AVX2 assembly, portable
//	method_tsit5.go …       one file per explicit method: Tsit5, DP5, BS3, Vern7, RK4
//	method_rosenbrock.go    the Rosenbrock–Wanner loop over a W-transformed tableau
//	method_rosenbrock23.go  Rosenbrock23
//	method_rodas5p.go       Rodas5P's tableau
//	method_jacobian.go      the stiff methods' Jacobian and W = I − γh·J
//	method_lu.go            dense LU with partial pivoting
//
//	Sensitivities
//	sens.go                 Sensitivity and its four methods' settings
//	sens_gradient.go        Gradient, GradientSolver, Loss, GradientResult
//	sens_options.go         Tolerance and the gradient's settings
//	sens_forward.go         ForwardSensitivity
//	sens_interpolating.go   InterpolatingAdjoint
//	sens_backsolve.go       BacksolveAdjoint
//	sens_discrete.go        DiscreteAdjoint
//	sens_adjoint.go         the backward pass the continuous adjoints share
//	sens_system.go          the forward system, its Jacobian and forward pass
//	sens_dense.go           reading a stored dense output
//	sens_checkpoints.go     checkpoints and the replay of their segments
//	sens_finitediff.go      JVP and VJP by finite differences
//	sens_rows2_*            ForwardSensitivity's row product: AVX2 assembly, portable
//
//	Ensembles
//	ensemble.go             Ensemble, its result and errors, Solve
//	ensemble_options.go     Workers, Indices, PerTrajectoryU0
//	ensemble_worker.go      the worker loop and the ordered sum of shards
//	ensemble_shard.go       Shard, SolveShard and Merge
//	ensemble_gradient.go    Ensemble.Gradient, its shards and their merge
//
// Tests follow the same names; gen/ holds the generators of the
// assembly and unrolled files.
package ode
