package ode

import "math"

// AdjointTol sets the tolerances of an adjoint method's backward solve of
// λ (default: those of the forward solve). Adjoint states scale
// differently from the state (Robertson's λ reaches ~4e7), so an absolute
// tolerance chosen for u is often wrong for λ. It applies to gradients only
// (Gradient, NewGradientSolver, Ensemble.Gradient, GradientShard).
func AdjointTol(rel, abs float64) Option {
	return func(o *options) {
		o.markGradOnly("AdjointTol")
		if !(rel >= 0) || !(abs > 0) || math.IsInf(rel, 0) || math.IsInf(abs, 0) {
			o.fail("AdjointTol(%g, %g): want finite rel ≥ 0 and abs > 0", rel, abs)
			return
		}
		o.adjRtol, o.adjAtol = rel, abs
	}
}

// QuadTol sets the tolerances of the quadratures a gradient integrates
// beside the state: the running cost ∫g dt and, in the adjoint methods,
// the parameter gradient μ (default: those of the forward solve). An abs
// of +Inf leaves the quadratures out of the step-size control (CVODES's
// default); they are then as accurate as the steps chosen for the rest
// make them. It applies to gradients only (Gradient,
// NewGradientSolver, Ensemble.Gradient, GradientShard).
func QuadTol(rel, abs float64) Option {
	return func(o *options) {
		o.markGradOnly("QuadTol")
		if !(rel >= 0) || !(abs > 0) || math.IsInf(rel, 0) {
			o.fail("QuadTol(%g, %g): want a finite rel ≥ 0 and abs > 0", rel, abs)
			return
		}
		o.quadRtol, o.quadAtol = rel, abs
	}
}

// FiniteDiffDerivatives lets Gradient take the derivative products a
// sensitivity method needs (Problem.JVP, Problem.VJP) by finite
// differences where the Problem does not give them. Without it a missing
// product is an error naming it. See finiteDiffJVP for the steps and the
// accuracy. It applies to gradients only (Gradient,
// NewGradientSolver, Ensemble.Gradient, GradientShard).
func FiniteDiffDerivatives() Option {
	return func(o *options) {
		o.markGradOnly("FiniteDiffDerivatives")
		o.finiteDiff = true
	}
}

func (o *options) markGradOnly(name string) {
	if o.gradOnly == "" {
		o.gradOnly = name
	}
}

// adjointTols returns the backward solve's (rel, abs).
func (o *options) adjointTols() (float64, float64) {
	if o.adjAtol > 0 {
		return o.adjRtol, o.adjAtol
	}
	return o.rtol, o.atol
}

// quadTols returns the quadratures' (rel, abs).
func (o *options) quadTols() (float64, float64) {
	if o.quadAtol > 0 {
		return o.quadRtol, o.quadAtol
	}
	return o.rtol, o.atol
}
