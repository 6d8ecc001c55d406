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
// solution so far with it. Invalid input is reported before any step.
//
// # Repeated solves
//
// Solve allocates its Solution. An Integrator (Init, then Reinit or
// ReinitProblem and Run, or Step by step) reuses all its buffers: a warm
// Reinit+Run allocates nothing, and reads its results through U, T, Saved
// and Stats.
package ode
