package ode

import (
	"math"
)

// Float is the element type of an ODE state: float32, float64 or a type
// defined on one of them. Time is always float64.
type Float interface{ ~float32 | ~float64 }

// Problem is an initial value problem u' = F(u, p, t) with u(T0) = U0 on
// the span from T0 to T1.
//
// F writes du in place and must not keep du, u or p after it returns. p is
// the flat float32 parameter buffer or a view of it, passed through
// unchanged. T1 < T0 integrates backwards in time; T1 == T0 is a valid,
// empty span. Jac is optional and used only by stiff methods: it writes the
// Jacobian in the storage of JacStructure, by default the row-major n×n
// J[i*n+j] = ∂F_i/∂u_j. Events are optional.
//
// JVP and VJP are the derivative products that Gradient needs; Sensitivity
// says which method uses which. odead.Derivs and odead.Problem fill them
// exactly for a right-hand side written with ad ops. U0From makes the
// initial state a function of the parameters.
type Problem[T Float] struct {
	F      func(du, u []T, p []float32, t float64)
	U0     []T
	T0, T1 float64
	P      []float32
	Jac    func(J []T, u []T, p []float32, t float64)

	// JacStructure is the structure of ∂F/∂u: DenseJacobian (nil),
	// BandJacobian, SparseJacobian or MatrixFreeJacobian. The stiff
	// methods keep J in it, and Jac writes J in its storage; Structure
	// says how.
	JacStructure Structure

	// JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp at u, p and t; dp has the
	// length of p. dp is nil when the parameter direction is zero: then
	// only ∂F/∂u·v is wanted. ForwardSensitivity needs it; a stiff method
	// in any sensitivity method uses it for Jacobians when Jac is nil.
	JVP func(jv, u, v []T, p []float32, dp []T, t float64)
	// VJP adds wᵀ·∂F/∂u into du, of length n, and wᵀ·∂F/∂p into dp, of
	// the length of p. dp is nil when only the first product is wanted.
	// The adjoint methods need it.
	VJP func(du, dp, w, u []T, p []float32, t float64)
	// ParamJac, with Jac, writes the row-major Jacobian with respect to
	// the parameters, Jp[i*np+k] = ∂F_i/∂p_k for np parameters. It is
	// DifferentialEquations.jl's paramjac. When both are set,
	// ForwardSensitivity forms the sensitivities' right-hand side
	// S' = J·S + [Jp 0] from them and needs no JVP, as CVODES does with a
	// whole-sensitivity fS. Each evaluation then costs two calls and a
	// dense product of n·n·(np+n) multiply-adds: give them for small n.
	ParamJac func(Jp []T, u []T, p []float32, t float64)

	// U0From, if set, computes the initial state from the parameters
	// into u0, for fitting initial conditions by name. Solve,
	// NewIntegrator, ReinitProblem and Gradient start from it instead of
	// U0's values; U0 still gives the dimension. U0FromVJP adds
	// wᵀ·∂u0/∂p into dp. Gradient needs it when U0From is set, so that
	// dL/du0 flows into dL/dθ.
	U0From    func(u0 []T, p []float32)
	U0FromVJP func(dp, w []T, p []float32)

	Events []Event[T]

	// Err reports a failure that the problem's callbacks could not
	// return: F, Jac, JVP, VJP, ParamJac, U0From and U0FromVJP. It is nil
	// when they cannot fail. It returns nil until a callback fails, and
	// that failure's error from then on. The error is sticky: a problem
	// that has failed stays failed, so make a new one to go on.
	//
	// The solvers call it after every step attempt and once more at the
	// end. A non-nil error ends the solve with Retcode Failed and the
	// error as Error.Err, so errors.Is and errors.As reach it. The failed
	// step attempt is neither accepted nor saved. Err must be safe for
	// concurrent use when the callbacks are. The ad bridge, package
	// ode/odead, sets it.
	Err func() error
}

// Event is a continuous condition G(u, t) watched during the solve. An event
// happens where G changes sign between two accepted steps. Root finding on
// the step's dense interpolant locates its time to a few ulps, and the step
// is cut there.
//
// Direction filters the crossings. 0 reports both; +1 only rising ones, G
// going from negative to non-negative; −1 only falling ones, from positive
// to non-positive.
//
// Affect is called with the state at the event time and may modify it in
// place. It returns whether the solve ends there, with Retcode Terminated.
// A nil Affect terminates. After a non-terminating event the integrator
// restarts from the state at the event time, as Affect left it. The
// method's first-same-as-last value is recomputed, never reused across the
// event.
//
// Conditions are evaluated at the ends of every accepted step and at 4
// evenly spaced interior points on the interpolant. Two crossings between
// two such points cancel out and are missed. Right after an event the
// condition is ≈0 by construction. So for the next step its "before" sign
// is taken a little after the event time, which keeps an event from firing
// twice.
type Event[T Float] struct {
	G         func(u []T, t float64) float64
	Direction int
	Affect    func(u []T, t float64) (terminate bool)
}

func (p *Problem[T]) validate() error {
	if p.F == nil {
		return errorf("Problem.F is nil")
	}
	if len(p.U0) == 0 {
		return errorf("Problem.U0 is empty, want at least one component")
	}
	if err := checkSpan(p.T0, p.T1); err != nil {
		return err
	}
	if err := checkState(p.U0, "Problem.U0"); err != nil {
		return err
	}
	for i, ev := range p.Events {
		if ev.G == nil {
			return errorf("Problem.Events[%d].G is nil", i)
		}
		if ev.Direction < -1 || ev.Direction > 1 {
			return errorf("Problem.Events[%d].Direction = %d, want -1, 0 or +1", i, ev.Direction)
		}
	}
	return nil
}

func checkSpan(t0, t1 float64) error {
	if math.IsNaN(t0) || math.IsInf(t0, 0) || math.IsNaN(t1) || math.IsInf(t1, 0) {
		return errorf("time span [%g, %g] is not finite, want finite T0 and T1", t0, t1)
	}
	return nil
}

func checkState[T Float](u []T, name string) error {
	for i, v := range u {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errorf("%s[%d] = %g, want a finite value", name, i, f)
		}
	}
	return nil
}
