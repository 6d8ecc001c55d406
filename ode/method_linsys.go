package ode

// linSys is the seam between a stiff method and its linear algebra: the
// Jacobian J = ∂F/∂u kept in the problem's Structure, and solves with
// W = I − c·J by the method's LinearSolver. BDF and the Rosenbrock
// methods use it alike; BDF calls jacobian and factor only when its
// reuse heuristics ask for them.
type linSys[T Float] interface {
	// jacobian evaluates J at t and u, where f0 = F(u, t): from
	// Problem.Jac, from coloured JVP sweeps, or from coloured differences
	// of F. It counts JacEvals and the FEvals it takes. h is the step the
	// Jacobian is for (the difference increments depend on it). It
	// reports false when J is not finite; failure then says where. A
	// matrix-free system records u and f0 for its products.
	jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool
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

// newLinSys builds the linear system of prob's structure for the linear
// solver ls; nil chooses from the structure.
func newLinSys[T Float](prob *Problem[T], ls LinearSolver) (linSys[T], error) {
	n := len(prob.U0)
	switch s := prob.JacStructure.(type) {
	case nil, DenseJacobian:
		switch ls.(type) {
		case nil, DenseLU:
			return newDenseSys[T](n), nil
		}
	default:
		_ = s
	}
	return nil, errorf("linear solver %v with a %v Jacobian is not implemented yet", ls, prob.JacStructure)
}

// denseSys is linSys for a dense Jacobian and a dense LU.
type denseSys[T Float] struct {
	w wSystem[T]
}

func newDenseSys[T Float](n int) *denseSys[T] { return &denseSys[T]{w: newWSystem[T](n)} }

func (d *denseSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	w := &d.w
	w.failK = wOK
	w.userJac = it.prob.Jac != nil
	w.je.jacobianAt(it, w.J, t, u, f0, h)
	w.hg = 0
	if i := firstNonFinite(w.J); i >= 0 {
		w.failK, w.failAt = wJacNaN, i
		return false
	}
	return true
}

func (d *denseSys[T]) factor(it *Integrator[T], c float64) bool {
	w := &d.w
	w.failK = wOK
	return w.factorW(it, c)
}

func (d *denseSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	d.w.solve(b)
	return true
}

func (d *denseSys[T]) failure() (Retcode, int, error) { return d.w.failure() }
