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
	// VJPJVP is VJP with its derivative along a direction, for
	// Hessian-vector products: it adds wᵀ∂F/∂u into gu and wᵀ∂F/∂p
	// into gp, and into hu and hp the derivative of those two along
	// (wd, ud, pd) in (w, u, p). pd is nil when the parameter direction
	// is zero. HvSolver needs it, or takes it by differences of VJPs.
	VJPJVP func(gu, gp, hu, hp, w, wd, u, ud []T, p []float32, pd []T, t float64)
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
	// Schedules change the state at known times, such as the doses of a
	// dosing schedule; see Schedule.
	Schedules []Schedule[T]

	// Err reports a failure that the problem's callbacks could not
	// return: F, Jac, JVP, VJP, ParamJac, U0From, U0FromVJP and the
	// conditions and effects of Events and Schedules. It is nil
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

// Event is a continuous condition watched during the solve. An event
// happens where the condition changes sign between two accepted steps.
// Root finding on the step's dense interpolant locates its time to a few
// ulps, and the step is cut there.
//
// The condition is Cond(u, p, t), or G(u, t) when it does not read the
// parameters; set one of the two. The effect is Effect(u, p, t), or
// Affect(u, t); set at most one. Cond and Effect see the problem's
// parameters p, so that a threshold or a dose can be fitted. Effect may
// change the state in place, as a function of the old state, p and t. It
// must not write into p: the parameters belong to the caller (an optimiser
// owns them during a fit), and a solve whose p changed under an effect
// ends with an error. A rate that switches at an event is a component of
// the state with zero derivative that the effect sets and F reads; see
// ExampleEvent_switch.
//
// Direction filters the crossings. 0 reports both; +1 only rising ones,
// the condition going from negative to non-negative; −1 only falling ones,
// from positive to non-positive.
//
// The effect is called with the state at the event time. It returns
// whether the solve ends there, with Retcode Terminated. No effect at all
// terminates. A terminating event's time and state (after its effect) are
// the last point of the solution whatever SaveAt asks. After a
// non-terminating event the integrator restarts from the state at the
// event time, as the effect left it. The method's first-same-as-last value
// is recomputed, never reused across the event, and a method with a
// history (BDF) starts anew.
//
// Events whose roots lie within the root finder's tolerance of each other,
// a few ulps of t, happen at the same time. Their effects, and those of
// schedule entries at that time, are then called twice on copies of the
// state, once in the problem's order and once in the reverse order. If the
// two results differ by more than the solve's tolerances, the order
// matters and the solve fails with an error naming the events; otherwise
// the first result is kept. Effects that fire together must therefore not
// count their calls.
//
// Conditions are evaluated at the ends of every accepted step and at 4
// evenly spaced interior points on the interpolant. Two crossings between
// two such points cancel out and are missed. Right after an event the
// condition is ≈0 by construction. So for the next step its "before" sign
// is taken a little after the event time, which keeps an event from firing
// twice.
//
// Problem.Err reports the failures of Cond and Effect, as of F.
//
// Gradient differentiates through events: the event time τ moves with
// the parameters and the initial state as the implicit function theorem
// says, dτ = −(∂g/∂u·du + ∂g/∂p·dp)/(∂g/∂u·F + ∂g/∂t), and the
// sensitivities jump there by the effect's derivatives. It needs CondGrad,
// EffectJVP and EffectVJP; odead builds them for conditions and effects
// written with ad ops, and a sensitivity method with FiniteDiff set takes
// the missing ones by central differences. A condition that touches zero
// without crossing it (∂g/∂u·F + ∂g/∂t = 0) has no derivative, and
// Gradient fails there. Effects that fire together are refused.
// HessianVector differentiates through events too, terminating or not,
// with the same fields (TestHvEventsMatchDifferences,
// TestHvTerminatingMatchDifferences).
type Event[T Float] struct {
	G         func(u []T, t float64) float64
	Direction int
	Affect    func(u []T, t float64) (terminate bool)

	// Cond is the condition with the parameters; it replaces G.
	Cond func(u []T, p []float32, t float64) float64
	// Effect is the effect with the parameters; it replaces Affect.
	Effect func(u []T, p []float32, t float64) (terminate bool)

	// CondGrad, EffectJVP and EffectVJP are the derivatives that Gradient
	// needs to differentiate through the event; see Gradient.
	// CondGrad adds ∂g/∂u into du (length n) and ∂g/∂p into dp (the
	// length of p; nil when not wanted), and returns ∂g/∂t, for the
	// condition g of Cond or G.
	CondGrad func(du, dp []T, u []T, p []float32, t float64) (dt float64)
	// EffectJVP writes jv = ∂a/∂u·v + ∂a/∂p·dp + ∂a/∂t·dt for the state
	// a(u, p, t) that Effect or Affect leaves; dp nil means zero.
	EffectJVP func(jv, u, v []T, p []float32, dp []T, t, dt float64)
	// EffectVJP adds wᵀ·∂a/∂u into du and wᵀ·∂a/∂p into dp (nil when not
	// wanted), and returns wᵀ·∂a/∂t.
	EffectVJP func(du, dp, w, u []T, p []float32, t float64) (dt float64)
}

// cond evaluates the event's condition.
func (ev *Event[T]) cond(u []T, p []float32, t float64) float64 {
	if ev.Cond != nil {
		return ev.Cond(u, p, t)
	}
	return ev.G(u, t)
}

// apply calls the event's effect; no effect terminates.
func (ev *Event[T]) apply(u []T, p []float32, t float64) (terminate bool) {
	switch {
	case ev.Effect != nil:
		return ev.Effect(u, p, t)
	case ev.Affect != nil:
		return ev.Affect(u, t)
	}
	return true
}

// Schedule changes the state at known times, such as the doses of a
// dosing schedule: at each time t in Times, u ← Effect(u, p, t). The
// integrator lands exactly on every time, as on a TStop, without root
// finding, calls Effect there and restarts the method from the new state,
// as after an event. Effect changes u in place, must not write into p, and
// reports whether the solve ends there, with Retcode Terminated.
//
// Times, or those TimesFrom computes, need not be sorted; times outside the span are ignored. A time at
// T0 changes the initial state after it is saved; a time at T1 changes the
// final state. A SaveAt time equal to a schedule time saves the state
// before the effect; Solution.At returns the state after it. Schedule
// entries and events at the same time fire together, as Event says.
type Schedule[T Float] struct {
	Times  []float64
	Effect func(u []T, p []float32, t float64) (terminate bool)

	// TimesFrom, if set, computes the times from the parameters into ts,
	// of len(Times), at the start of every solve; Times then gives only
	// their number. It makes a dosing time a parameter that can be
	// fitted. Problem.Err reports its failures.
	TimesFrom func(ts []float64, p []float32)

	// EffectJVP and EffectVJP are the derivatives of Effect, as for
	// Event's; TimesFromJac writes the Jacobian of TimesFrom,
	// J[i*len(p)+k] = ∂ts_i/∂p_k. Gradient needs them (see Gradient),
	// and so does HessianVector, which takes TimesFromJac's derivative
	// by differences.
	EffectJVP    func(jv, u, v []T, p []float32, dp []T, t, dt float64)
	EffectVJP    func(du, dp, w, u []T, p []float32, t float64) (dt float64)
	TimesFromJac func(J []float64, p []float32)
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
		if (ev.G == nil) == (ev.Cond == nil) {
			state := "nil"
			if ev.G != nil {
				state = "set"
			}
			return errorf("Problem.Events[%d].G and Cond are both %s, want exactly one of them", i, state)
		}
		if ev.Affect != nil && ev.Effect != nil {
			return errorf("Problem.Events[%d] has both Affect and Effect, want at most one", i)
		}
		if ev.Direction < -1 || ev.Direction > 1 {
			return errorf("Problem.Events[%d].Direction = %d, want -1, 0 or +1", i, ev.Direction)
		}
	}
	for i, s := range p.Schedules {
		if s.Effect == nil {
			return errorf("Problem.Schedules[%d].Effect is nil", i)
		}
		for j, t := range s.Times {
			if math.IsNaN(t) || math.IsInf(t, 0) {
				return errorf("Problem.Schedules[%d].Times[%d] = %g, want a finite time", i, j, t)
			}
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
