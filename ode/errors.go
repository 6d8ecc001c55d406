package ode

import (
	"errors"
	"fmt"
)

// Retcode says how a solve ended.
type Retcode int

const (
	// Unfinished: the integrator has not reached the end of the span yet.
	Unfinished Retcode = iota
	// Success: the end of the span was reached.
	Success
	// Terminated: an event ended the solve early (Solution.T ends at the event).
	Terminated
	// MaxStepsReached: the MaxSteps limit of step attempts was reached. (Not
	// called MaxSteps, which is the option that sets the limit.)
	MaxStepsReached
	// DtUnderflow: the step size became negligible relative to t (the
	// solution blows up, or the tolerance cannot be met in this precision).
	DtUnderflow
	// NonFinite: the state or the right-hand side became NaN or ±Inf.
	NonFinite
	// Cancelled: the context was cancelled or its deadline passed.
	Cancelled
	// Singular: a stiff method's matrix W = I − γ·dt·J stayed singular
	// after the step size was reduced (or could not be, under FixedStep).
	Singular
)

var retcodeNames = [...]string{"Unfinished", "Success", "Terminated", "MaxSteps", "DtUnderflow", "NonFinite", "Cancelled", "Singular"}

func (r Retcode) String() string {
	if r >= 0 && int(r) < len(retcodeNames) {
		return retcodeNames[r]
	}
	return fmt.Sprintf("Retcode(%d)", int(r))
}

// ErrDone is returned by Integrator.Step once the integrator has finished
// (reached T1 or was terminated by an event). Reinit starts it again.
var ErrDone = errors.New("ode: integrator is done")

// Error is the error of a solve that stopped early. It names the return
// code, the time reached and, for NonFinite, the offending component.
type Error struct {
	Code      Retcode
	T         float64 // the time reached when the solve stopped
	Dt        float64 // the last step size tried (0 if none)
	Component int     // NonFinite: the first non-finite component of F(u, t+dt) or else of the trial state; −1 if unknown or not applicable
	Err       error   // the context's error for Cancelled; the cause for Singular and for a non-finite Jacobian; else nil
}

func (e *Error) Error() string {
	switch e.Code {
	case MaxStepsReached:
		return fmt.Sprintf("ode: max steps reached at t=%.17g (dt=%g): raise MaxSteps or check the problem for stiffness", e.T, e.Dt)
	case DtUnderflow:
		return fmt.Sprintf("ode: dt underflow at t=%.17g (dt=%g): the solution may blow up here, or the tolerance is too tight for the precision", e.T, e.Dt)
	case NonFinite:
		if e.Err != nil {
			return fmt.Sprintf("ode: %v at t=%.17g (dt=%g)", e.Err, e.T, e.Dt)
		}
		if e.Component >= 0 {
			return fmt.Sprintf("ode: NaN or Inf in component %d (of F or of the state) at t=%.17g (dt=%g)", e.Component, e.T, e.Dt)
		}
		return fmt.Sprintf("ode: non-finite value (NaN or Inf) at t=%.17g", e.T)
	case Cancelled:
		return fmt.Sprintf("ode: cancelled at t=%.17g: %v", e.T, e.Err)
	case Singular:
		return fmt.Sprintf("ode: %v at t=%.17g (dt=%g): check Problem.Jac, or the problem", e.Err, e.T, e.Dt)
	}
	return fmt.Sprintf("ode: %v at t=%.17g", e.Code, e.T)
}

func (e *Error) Unwrap() error { return e.Err }
