// Package ode solves initial value problems u' = F(u, p, t) for scientific
// code and neural ODEs. The state is generic: float32 or float64. Time is
// float64. The parameters p are the flat float32 buffer that the rest of
// flatkit shares, or a view of it, and reach F untouched.
//
//	lv := func(du, u []float64, p []float32, t float64) {
//		du[0] = 1.5*u[0] - u[0]*u[1]
//		du[1] = -3*u[1] + u[0]*u[1]
//	}
//	prob := ode.Problem[float64]{F: lv, U0: []float64{1, 1}, T0: 0, T1: 10}
//	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-6, 1e-8), ode.SaveAt(ts...))
//
// The package has four parts. The core holds Problem, Solve, Integrator,
// the options and the errors. Then come the methods, gradients through
// solves, and ensembles. The Files section maps each part to its files.
//
// # Methods
//
// The explicit Runge–Kutta methods need only F. Each is a Butcher tableau
// in its own file, over one generic loop:
//
//	Tsit5         order 5(4), the default choice
//	DP5           order 5(4), Dormand–Prince
//	BS3           order 3(2), for loose tolerances and float32 states
//	Vern7         order 7(6), for tight tolerances
//	RK4           order 4, fixed steps only: give FixedStep
//
// The stiff methods are two Rosenbrock–Wanner methods and BDF:
//
//	Rosenbrock23  order 2(3), for loose tolerances and float32 states
//	Rodas5P       order 5(4), the default stiff choice for small systems
//	BDF           orders 1–5, variable order, for large stiff systems
//
// Each Rosenbrock step evaluates the Jacobian once and factors
// W = I − γh·J. BDF is CVODE's variable-order BDF: Newton iterations on
// M = I − γJ, with the Jacobian and M's factors reused across many steps,
// and its own choice of step size and order. The Jacobian is kept in
// Problem.JacStructure, dense, band, sparse or matrix-free, and W is
// solved by the method's LinearSolver: dense, band or sparse LU, or
// GMRES with a preconditioner (see Structure and LinearSolver). The
// Jacobian comes from Problem.Jac if given, else from Problem.JVP, else
// from forward differences of F with CVODE's increments, by groups of
// columns for a band or sparse J. Package ode/odead supplies an exact
// Jacobian, and its pattern, for a right-hand side written with ad ops.
// Stats counts Jacobians, LU factorisations and GMRES iterations. A W
// that stays singular ends the solve with Singular.
//
// The three stiff methods take their settings alike: Rosenbrock23(),
// Rodas5P() and BDF() return the defaults, and the exported structs,
// whose zero values are the defaults, set them, as values or pointers:
//
//	ode.Rodas5PMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}
//	ode.BDFMethod{MaxOrder: 3, Linear: ode.BandLU{}}
//
// Adaptive methods control the local error in a weighted RMS norm, as Tol
// describes. The explicit and Rosenbrock methods pick the next step with
// the PI controller of Hairer and Wanner (Solving ODEs I, II.4, and II,
// IV.2), as OrdinaryDiffEq does: with e_n the error norm of the accepted
// step and e_{n−1} the previous one's,
//
//	h_new = h · clamp(0.9 · e_n^(−0.7/p) · e_{n−1}^(0.4/p), 0.2, 10)
//
// for a method of order p, with e_{n−1} = 1e-4 at the start. A rejected
// step retries with h·max(0.2, 0.9·e_n^(−0.7/p)), and the step after a
// rejection may not grow. A step with a NaN or Inf retries at h/5; ten in
// a row end the solve with NonFinite. The first step is Hairer's
// heuristic (Solving ODEs I, II.4), at one evaluation of F. BDF chooses
// its steps and orders itself, with CVODE's heuristics.
//
// # Output
//
// By default a Solution holds the start and the end. SaveAt saves at given
// times through each method's dense interpolant, without shortening steps.
// SaveEveryStep saves every step. Dense keeps the interpolant for
// Solution.At. TStops makes steps land exactly on given times. T1 < T0
// integrates backwards.
//
// An Event is a condition Cond(u, p, t), or G(u, t), whose sign changes
// are found by root finding on the interpolant. Its Effect(u, p, t), or
// Affect(u, t), may change the state or end the solve; it must not write
// into p. Direction filters rising or falling crossings. A Schedule
// changes the state at known times, such as doses, without root finding.
// A terminating event's time and state end the Solution whatever SaveAt
// asks. A rate that switches at an event is a component of the state that
// the effect sets (ExampleEvent_switch).
//
// Solve allocates its Solution. An Integrator is the reusable form: a warm
// Reinit and Run allocate nothing. Its results are read through U, T,
// Saved and Stats.
//
// # Options
//
// Every call takes functional options, the same values for float32 and
// float64 problems. Their types say where they apply, so an option that
// does not apply to a call does not compile: Workers given to Solve,
// SaveAt given to Gradient, Indices given to Ensemble.Solve. There are
// four kinds of option:
//
//	Option         Tol, TolPerComponent, MaxSteps, TStops, InitialStep, FixedStep: every call
//	SaveOption     SaveAt, Dense, SaveEveryStep: the solves; a gradient's save times are Loss.At
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
// default, as in gonum:
//
//	ode.InterpolatingAdjoint{Checkpoints: 100, QuadTol: ode.Tolerance{Rel: 1e-6, Abs: math.Inf(1)}}
//
// What an Ensemble computes is fields too: its trajectories, Seed and
// ShardSize, which fix the shards and so the bits of every sum. How one
// call runs is options: the tolerances, Workers, a minibatch of Indices.
//
// # Gradients through solves
//
// Gradient differentiates a Loss of the solution with respect to the
// parameters, the initial state and the ends of the span. The loss sees
// the states at its save times all at once, and may add a running cost
// ∫g dt. Five Sensitivity methods compute it:
//
//	ForwardSensitivity    the sensitivity equations with the state; few parameters
//	InterpolatingAdjoint  the adjoint backwards on the forward dense output; many parameters
//	GaussAdjoint          λ backwards, dL/dθ by quadrature on the forward steps; parameters ≫ states
//	BacksolveAdjoint      the state re-solved backwards with the adjoint; least memory, unstable on stiff problems
//	DiscreteAdjoint       reverse mode through the steps taken: the exact gradient of the computed solution
//
// ForwardSensitivity needs Problem.JVP, the adjoints need Problem.VJP.
// odead.Derivs and odead.Problem give exact ones for a right-hand side
// written with ad ops. Plain Go code can supply them by hand, or set the
// method's FiniteDiff field to take them by finite differences. The stiff
// methods work with ForwardSensitivity and the continuous adjoints;
// DiscreteAdjoint takes the explicit methods, Rosenbrock23 and Rodas5P,
// not BDF. Checkpoints bound the
// adjoints' memory. AdjointTol and QuadTol set the backward solve's and
// the quadratures' tolerances.
//
//	loss := ode.Loss[float64]{At: ts, Saved: func(ts []float64, us, dLdus [][]float64) float64 {…}}
//	g, err := ode.Gradient(ctx, prob, ode.Tsit5(), loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
//	// g.Value, g.P is dL/dθ, g.U0, g.T0, g.T1
//
// A GradientSolver is the reusable form: once warm, a gradient allocates
// nothing.
//
// Gradients go through events and schedules (all methods but
// BacksolveAdjoint): the event times move with θ by the implicit function
// theorem and the sensitivities or the adjoint jump at each firing. The
// conditions' and effects' derivatives are fields of Event and Schedule,
// which odead.AddEvent and odead.AddSchedule fill for ones written with ad
// ops.
//
// HessianVector, HvSolver and FullHessian give second derivatives: H·v of
// a loss through a solve by forward over adjoint (one sensitivity along
// v forwards, the adjoint and its tangent backwards), exact with
// Problem.VJPJVP (odead fills it), with explicit methods and with stiff
// ones in every structure, by direct solvers or GMRES, and
// Ensemble.HessianVector sums them over trajectories.
// InterpolatingAdjoint's Checkpoints bound their memory as they bound a
// gradient's: the state and its tangent are kept at the checkpoints, and
// each segment is solved again for the backward pass. They go through
// schedules, such as the doses of a pharmacokinetic model, at fixed times
// or at times computed from θ by TimesFrom, and through events at
// state-dependent times, whose time moves with θ (examples/dosing's
// threshold dose), so that a fit through them gets its standard errors
// from the Hessian, and through effects that end the solve, with a loss
// of the end time and state (Loss.End); effects that fire together are
// refused.
// HvLoss.GaussNewton gives the Gauss–Newton product instead, Jᵀ·∇²L·J,
// positive semi-definite for least squares (the Fisher information's
// form), at the same cost.
//
// # Ensembles
//
// An Ensemble solves N variants of one problem on Workers(n) goroutines,
// each reusing one Integrator. Modify sets trajectory i's U0, parameter
// view and span, with a random generator of its own. The trajectories are
// cut into shards of a fixed size, independent of n. The partial results
// are combined in shard order, so the outputs and the Reduce sums are the
// same bits for any n. A failing trajectory is reported with its index;
// the others finish. SolveShard and Merge split Solve at the shard, for
// runners that execute shards elsewhere. Ensemble.Gradient sums the
// trajectories' gradients the same way, and GradientShard and
// MergeGradients split it.
//
// # Errors
//
// A solve that stops early returns an *Error naming the Retcode, the time
// and, for a NaN or Inf, the component. It stops on reaching MaxSteps, on
// a step size that underflows, on a NaN or Inf in F or the state, and on a
// cancelled context. Solve returns the solution so far with the error.
// Invalid input is reported before any step, naming the field, the value
// that came and the value wanted: "ode: Problem.U0[0] = +Inf, want a
// finite value".
//
// A callback that cannot return an error, such as F or a loss, reports its
// failure through an error hook: Problem.Err or Loss.Err. The solvers
// consult the hook after every step attempt. A failure ends the call with
// Retcode Failed and the hook's error as the cause. That holds at every
// entry point: Solve, Integrator.Run, Ensemble.Solve, Gradient,
// GradientSolver and Ensemble.Gradient.
//
// Every error says "ode: " once, however deep the failure: "ode: ensemble:
// 2 of 4 trajectories failed; the first: trajectory 3: dt underflow at …".
// Callers branch with errors.As on *Error, TrajectoryError and
// *EnsembleError. errors.Is reaches any cause, such as an error that a
// right-hand side written with ad ops left on its tape. A cause from
// another package keeps its own words.
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
//	events.go               locating events: conditions and root finding
//	events_fire.go          firing events and schedule entries, the order check
//	events_schedule.go      schedules: their times as stops, which are due
//	events_derivs.go        the derivatives of conditions, effects and schedule times
//	events_jump.go          the jump of sensitivities and adjoints at a firing
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
//	method_bdf.go           BDF: the method, its attempts and dense output
//	method_bdf_control.go   BDF's choice of step size and order, its initial step
//	method_bdf_nordsieck.go BDF's Nordsieck array and its coefficients
//	method_bdf_newton.go    BDF's Newton iteration and the reuse of J and M
//	method_bdf_stagger.go   BDF's staggered corrector for forward sensitivities
//	dense_nord.go           BDF's dense output from its Nordsieck arrays
//	method_rosenbrock_lin.go the Rosenbrock steps' Jacobian, ∂F/∂t and W
//	method_jacobian.go      the dense Jacobian and W = I − γh·J
//	method_jacobian_colour.go coloured Jacobians: JVP sweeps, differences of F
//	method_linsys*.go       the linear systems of the structures: dense, band, sparse, GMRES
//	method_precond.go       GMRES's band and block-diagonal preconditioners
//	structure.go            the Jacobian's structures and the linear solvers' settings
//	structure_probe.go      ProbePattern and CheckStructure: a plain Go F's pattern by probing
//	method_lu.go            dense LU with partial pivoting
//
//	Sensitivities
//	sens.go                 Sensitivity and its four methods' settings
//	sens_gradient.go        Gradient, GradientSolver, Loss, GradientResult
//	objective.go            GradientSolver.Objective: a loss of θ for optimisers.Minimize
//	sens_options.go         Tolerance and the gradient's settings
//	sens_forward.go         ForwardSensitivity
//	sens_interpolating.go   InterpolatingAdjoint
//	sens_gauss.go           GaussAdjoint
//	sens_backsolve.go       BacksolveAdjoint
//	sens_*_struct.go        the methods' systems in band, sparse and matrix-free structures
//	sens_discrete*.go       DiscreteAdjoint: its tape, explicit and Rosenbrock steps, solves with Wᵀ, firings
//	sens_adjoint.go         the backward pass the continuous adjoints share
//	sens_*_hybrid.go        the forward and adjoint methods through events and schedules
//	sens_hessian*.go        HessianVector, HvSolver, FullHessian; VJPJVP by differences; checkpoints; schedules
//	sens_system.go          the forward system, its Jacobian and forward pass
//	sens_dense.go           reading a stored dense output
//	sens_checkpoints.go     checkpoints and the replay of their segments
//	sens_finitediff.go      JVP and VJP by finite differences
//	sens_jac.go             a band or sparse Problem.Jac expanded for the dense sensitivities
//	sens_rows2_*            ForwardSensitivity's row product: AVX2 assembly, portable
//
//	Ensembles
//	ensemble.go             Ensemble, its result and errors, Solve
//	ensemble_options.go     Workers, Indices, PerTrajectoryU0
//	ensemble_worker.go      the worker loop and the ordered sum of shards
//	ensemble_shard.go       Shard, SolveShard and Merge
//	ensemble_gradient.go    Ensemble.Gradient, its shards and their merge
//	ensemble_hv.go          Ensemble.HessianVector and the shard loop it shares
//
// Tests follow the same names; gen/ holds the generators of the
// assembly and unrolled files.
package ode
