package ode

import "math"

// rosLin is the linear algebra of a Rosenbrock step: the Jacobian and
// ∂F/∂t at the start of the step, evaluated once per step and kept across
// rejected attempts, and W = I − hγ·J, factored again whenever J or h
// changes. The Jacobian and the solves go through a linSys in the
// problem's structure. A dense system is also kept as its concrete type,
// so that the stages' solves, the only calls per stage, are direct calls:
// the small dense systems are where a call's overhead would show.
type rosLin[T Float] struct {
	ls    linSys[T]
	dense *denseSys[T] // ls, when it is dense
	td    jacEval[T]   // for ∂F/∂t
	dT    []T          // ∂F/∂t at the start of the step
	jacOK bool         // J and dT are those of the current (t, u)
	hg    float64      // hγ of the factored W; 0 when W is not valid
	h     float64      // the step of the last prepare
	perH  bool         // the stages are in F's units, the step's increment h times them
}

// rosKrylovTol is the weighted RMS residual at which GMRES stops in a
// Rosenbrock stage in the state's units (Rodas5P's, and the discrete
// adjoint's). The stages are combined with coefficients up to a few
// hundred, so the stage error must stay well below the error test's 1.
const rosKrylovTol = 1e-4

func newRosLin[T Float](prob *Problem[T], ls LinearSolver) (rosLin[T], error) {
	sys, err := newLinSys(prob, ls)
	if err != nil {
		return rosLin[T]{}, err
	}
	n := len(prob.U0)
	r := rosLin[T]{ls: sys, td: newJacEval[T](n), dT: padded[T](n)}
	r.dense, _ = sys.(*denseSys[T])
	return r, nil
}

// invalidate forgets J when the state changed: a new step or an event.
func (r *rosLin[T]) invalidate() { r.jacOK, r.hg = false, 0 }

// prepare makes J and ∂F/∂t current for it.t and it.u, whose F is f0, and
// factors W = I − hγJ. It returns false when W cannot be factored, because
// it is singular or J is not finite; the linSys's failure then says why.
func (r *rosLin[T]) prepare(it *Integrator[T], f0 []T, h, gamma float64) bool {
	if !r.jacOK {
		r.hg = 0
		ok := r.ls.jacobian(it, it.t, it.u, f0, h)
		r.td.timeDerivative(it, r.dT, f0, h)
		if !ok {
			return false
		}
		r.jacOK = true
	}
	r.h = h
	hg := h * gamma
	if hg == r.hg {
		return true
	}
	if !r.ls.factor(it, hg) {
		r.hg = 0
		return false
	}
	r.hg = hg
	return true
}

// solve overwrites b with W⁻¹b. f0 is F at the start of the step, for the
// products J·v of an iterative solver. It reports false when the solver
// did not converge. The steppers call it only when dense is nil and solve
// with dense.w directly otherwise: the call through linSys would cost the
// small dense systems a few per cent.
//
// An iterative solver stops at rosKrylovTol in the state's units. A
// stage in F's units (perH: Rosenbrock23's) moves the state by h times
// itself, so its residual may be 1/|h| times larger. Held at rosKrylovTol
// instead, it asked for a residual below the rounding of b, about
// ε·|F|·weights, when F is large and a component's atol small: GMRES
// then failed at every h, and the step shrank to nothing
// (TestRosenbrock23GMRESSmallAtol).
func (r *rosLin[T]) solve(it *Integrator[T], b, f0 []T) bool {
	tol := rosKrylovTol
	if r.perH {
		tol /= math.Abs(r.h)
	}
	return r.ls.solve(it, b, it.u, f0, tol)
}

// withLinear is a stiff method's name with its linear solver, if set:
// "Rodas5P(band LU)".
func withLinear(name string, ls LinearSolver) string {
	if ls == nil {
		return name
	}
	return name + "(" + ls.String() + ")"
}

// newRosStepper builds the stepper of a Rosenbrock method, a
// Rodas5PMethod or a Rosenbrock23Method or a pointer to one, with its
// linear system in prob's structure.
func newRosStepper[T Float](m Method, prob *Problem[T], adaptive bool) (stepper[T], error) {
	var ls LinearSolver
	r23 := false
	switch m := m.(type) {
	case Rodas5PMethod:
		ls = m.Linear
	case *Rodas5PMethod:
		ls = m.Linear
	case Rosenbrock23Method:
		ls, r23 = m.Linear, true
	case *Rosenbrock23Method:
		ls, r23 = m.Linear, true
	}
	lin, err := newRosLin(prob, ls)
	if err != nil {
		return nil, errorf("%s: %v", m.Name(), err)
	}
	n := len(prob.U0)
	if r23 {
		lin.perH = true
		return newRos23(n, adaptive, lin), nil
	}
	return newRosenbrock(rodas5pTab, n, adaptive, lin), nil
}
