package ode

import (
	"errors"
	"fmt"
	"math"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// Retcode says how a solve ended.
type Retcode int

const (
	// Unfinished: the integrator has not reached the end of the span yet.
	Unfinished Retcode = iota
	// Success: the end of the span was reached.
	Success
	// Terminated: an event ended the solve early; Solution.T and U end
	// with the event's time and state, whatever SaveAt asks.
	Terminated
	// MaxStepsReached: the MaxSteps limit of step attempts was reached.
	// It is not called MaxSteps, the option that sets the limit.
	MaxStepsReached
	// DtUnderflow: the step size became negligible relative to t. The
	// solution blows up, or the tolerance cannot be met in this precision.
	DtUnderflow
	// NonFinite: the state or the right-hand side became NaN or ±Inf.
	NonFinite
	// Cancelled: the context was cancelled or its deadline passed.
	Cancelled
	// Singular: a stiff method's matrix W = I − γ·dt·J stayed singular
	// after the step size was reduced, or could not be under FixedStep.
	Singular
	// Failed: a callback of the problem or of the loss failed, and its
	// hook reported the error, which Error.Err holds. The hooks are
	// Problem.Err and Loss.Err.
	Failed
	// ErrorTestFailed: BDF's local error test failed 7 times on one step
	// (CVODE's limit); Error.Component names the component of the
	// largest weighted error. F may be discontinuous there, or the
	// solution blow up, or the tolerance be too tight.
	ErrorTestFailed
	// ConvergenceFailed: BDF's Newton iteration failed 10 times on one
	// step (CVODE's limit), most often because Problem.Jac or its
	// JacStructure does not match F.
	ConvergenceFailed
)

var retcodeNames = [...]string{"Unfinished", "Success", "Terminated", "MaxSteps", "DtUnderflow", "NonFinite", "Cancelled", "Singular", "Failed", "ErrorTestFailed", "ConvergenceFailed"}

func (r Retcode) String() string {
	if r >= 0 && int(r) < len(retcodeNames) {
		return retcodeNames[r]
	}
	return fmt.Sprintf("Retcode(%d)", int(r))
}

// ErrDone is returned by Integrator.Step once the integrator has finished:
// it reached T1 or an event terminated it. Reinit starts it again.
var ErrDone = errors.New("ode: integrator is done")

// Error is the error of a solve that stopped early. It names the return
// code, the time reached and, for NonFinite, the offending component.
type Error struct {
	Code      Retcode
	T         float64    // the time reached when the solve stopped
	Dt        float64    // the last step size tried (0 if none)
	Component int        // NonFinite: the first non-finite component of F(u, t+dt) or else of the trial state; ErrorTestFailed: the component of the largest weighted error; −1 if unknown or not applicable
	Err       error      // the context's error for Cancelled; the hook's error for Failed; the cause for Singular, ErrorTestFailed, ConvergenceFailed and a non-finite Jacobian; for MaxStepsReached, the linear solves that failed, if any; else nil
	P         ParamRange // the range of Problem.P's values in the solve that stopped
}

// ParamRange is how many parameters a problem has and the range of their
// values. An error names it because a solve that fails in a fit often
// does so after the optimiser has moved the parameters out of the region
// where the model is well behaved: a rate below zero, say.
type ParamRange struct {
	N        int     // the number of parameters; 0 if none
	Min, Max float32 // the least and the greatest value; NaN if any is NaN
}

// rangeOf returns the range of p's values.
func rangeOf(p []float32) ParamRange {
	r := ParamRange{N: len(p)}
	for i, v := range p {
		switch {
		case v != v:
			nan := float32(math.NaN())
			return ParamRange{N: len(p), Min: nan, Max: nan}
		case i == 0:
			r.Min, r.Max = v, v
		default:
			r.Min, r.Max = min(r.Min, v), max(r.Max, v)
		}
	}
	return r
}

// String reads "2 parameters in [-0.56, 0.95]".
func (r ParamRange) String() string {
	switch r.N {
	case 0:
		return "no parameters"
	case 1:
		return fmt.Sprintf("the parameter %g", r.Min)
	}
	return fmt.Sprintf("%d parameters in [%g, %g]", r.N, r.Min, r.Max)
}

func (e *Error) Error() string { return prefix + e.Unprefixed() }

// Unprefixed is the message without the "ode: " prefix, as it reads
// inside another error's message.
func (e *Error) Unprefixed() string {
	switch e.Code {
	case MaxStepsReached:
		msg := fmt.Sprintf("max steps reached at t=%.17g (dt=%g): ", e.T, e.Dt)
		if e.Err != nil {
			msg += bareText(e.Err) + "; or "
		}
		msg += "the problem may be stiff (use a stiff method, or raise MaxSteps)"
		if e.P.N > 0 {
			msg += fmt.Sprintf(", or its %v may have left the region where the model is well behaved", e.P)
		}
		return msg
	case DtUnderflow:
		msg := fmt.Sprintf("dt underflow at t=%.17g (dt=%g): the solution may blow up here, or the tolerance is too tight for the precision", e.T, e.Dt)
		if e.P.N > 0 {
			msg += fmt.Sprintf("; with %v", e.P)
		}
		return msg
	case NonFinite:
		if e.Err != nil {
			return fmt.Sprintf("%s at t=%.17g (dt=%g)", bareText(e.Err), e.T, e.Dt)
		}
		if e.Component >= 0 {
			return fmt.Sprintf("NaN or Inf in component %d (of F or of the state) at t=%.17g (dt=%g)", e.Component, e.T, e.Dt)
		}
		return fmt.Sprintf("non-finite value (NaN or Inf) at t=%.17g", e.T)
	case Cancelled:
		return fmt.Sprintf("cancelled at t=%.17g: %v", e.T, e.Err)
	case ErrorTestFailed:
		return fmt.Sprintf("%s at t=%.17g (dt=%g): F may be discontinuous or the solution blow up here, or the tolerance be too tight", bareText(e.Err), e.T, e.Dt)
	case ConvergenceFailed:
		return fmt.Sprintf("%s at t=%.17g (dt=%g): check Problem.Jac against F and the storage of its JacStructure, and F for a discontinuity", bareText(e.Err), e.T, e.Dt)
	case Singular:
		return fmt.Sprintf("%s at t=%.17g (dt=%g): check Problem.Jac, or the problem", bareText(e.Err), e.T, e.Dt)
	case Failed:
		return fmt.Sprintf("%s at t=%.17g", bareText(e.Err), e.T)
	}
	return fmt.Sprintf("%v at t=%.17g", e.Code, e.T)
}

func (e *Error) Unwrap() error { return e.Err }

// The package prefix. Every error of the package reads "ode: " once, then
// where it happened and what was wrong; internal/pkgerr does the work. An
// error made here can give its message without the prefix through
// Unprefixed: errorf's, *Error, TrajectoryError and EnsembleError do.
// errorf, TrajectoryError and the others format such a cause that way. So
// the message reads "ode: trajectory 3: max steps reached …", never
// "ode: trajectory 3: ode: …", and nothing is cut out of strings.
// errors.Is and errors.As reach every cause through %w.
//
// The package adopts other errors that can give their message without
// their prefix: ad's tape errors, and cluster's RemoteError carrying an
// ode error's message. So an ad-written right-hand side's failure reads
// "ode: the ad right-hand side: Slice …", never "… ad: …". Errors of other
// packages without an Unprefixed method keep their own prefix: a layout
// path error, or model's "model: 1.0: Dense …".
var errs = pkgerr.Package{Prefix: prefix, Adopt: true}

const prefix = "ode: "

// errorf is fmt.Errorf for the package's errors. format has no prefix.
// Arguments that can give their message without their package's prefix,
// such as this package's errors and ad's, are formatted that way.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }

// bareText is err's message as the package's messages show it: without
// the prefix if err is this package's or ad's.
func bareText(err error) string { return errs.Text(err) }
