package ode

// linSys is the seam between a stiff method and its linear algebra: the
// Jacobian J = ∂F/∂u kept in the problem's Structure, and solves with
// W = I − c·J by the method's LinearSolver. BDF and the Rosenbrock
// methods use it alike; BDF calls jacobian and factor only when its
// reuse heuristics ask for them.
type linSys[T Float] interface {
	// jacobian evaluates J at it.t and u, where f0 = F(u, t): from
	// Problem.Jac, from coloured JVP sweeps, or from coloured differences
	// of F. It counts JacEvals and the FEvals it takes. h is the step the
	// Jacobian is for (the difference increments depend on it). It
	// reports false when J is not finite; failure then says where. A
	// matrix-free system records u and f0 for its products.
	jacobian(it *Integrator[T], u, f0 []T, h float64) bool
	// factor forms W = I − c·J from the last J and factors it, or sets up
	// the preconditioner. It counts LUs. It reports false when W is
	// singular; failure then says where.
	factor(it *Integrator[T], c float64) bool
	// solve overwrites b with W⁻¹b. A direct solver ignores the rest. An
	// iterative one computes J·v at u, where fu = F(u, t), and stops when
	// the residual's weighted RMS norm (the integrator's weights) is below
	// tol; it counts LinearIters and reports false when it did not
	// converge.
	solve(it *Integrator[T], b, u, fu []T, tol float64) bool
	// failure reports why the last jacobian, factor or solve failed.
	failure() (Retcode, int, error)
}
