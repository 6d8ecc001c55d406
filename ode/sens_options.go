package ode

import "math"

// Tolerance is a pair of error tolerances, as Tol takes them, for a part of
// the systems a gradient integrates. The zero Tolerance means the forward
// solve's tolerances. Otherwise Rel must be finite and ≥ 0 and Abs > 0.
//
// The sensitivity methods hold two as fields. AdjointTol, of the
// continuous adjoints, is for the backward solve of the adjoint λ. QuadTol,
// of every method, is for the quadratures integrated beside the state: the
// running cost ∫g dt and, in the adjoint methods, the parameter gradient μ.
// Adjoint states scale differently from the state, so an absolute
// tolerance chosen for u is often wrong for λ. On Robertson λ grows by
// orders of magnitude: see TestRobertsonGradientReference. A QuadTol.Abs
// of +Inf leaves the quadratures out of the step-size control, as CVODES
// does by default. They are then as accurate as the steps chosen for the
// rest make them.
type Tolerance struct {
	Rel, Abs float64
}

// sensSettings are the settings that several sensitivity methods share.
type sensSettings struct {
	adjTol, quadTol Tolerance
	finiteDiff      bool
}

// check returns an error naming the field name of method s when t is
// neither zero nor valid. infAbs allows an Abs of +Inf.
func (t Tolerance) check(s Sensitivity, name string, infAbs bool) error {
	if t == (Tolerance{}) {
		return nil
	}
	if !(t.Rel >= 0) || math.IsInf(t.Rel, 0) || !(t.Abs > 0) || (math.IsInf(t.Abs, 0) && !infAbs) {
		abs := "a finite Abs > 0"
		if infAbs {
			abs = "Abs > 0"
		}
		return errorf("Gradient: %s.%s = %+v, want a finite Rel ≥ 0 and %s, or the zero Tolerance (the forward solve's)", s.Name(), name, t, abs)
	}
	return nil
}

// setSensitivity checks the settings of s and copies them into o. A nil s,
// the default method, has none.
func (o *options) setSensitivity(s Sensitivity) error {
	if s == nil {
		return nil
	}
	st := s.settings()
	if err := st.adjTol.check(s, "AdjointTol", false); err != nil {
		return err
	}
	if err := st.quadTol.check(s, "QuadTol", true); err != nil {
		return err
	}
	o.adjTol, o.quadTol, o.finiteDiff = st.adjTol, st.quadTol, st.finiteDiff
	return nil
}

// adjointTols returns the backward solve's rel and abs.
func (o *options) adjointTols() (float64, float64) {
	if o.adjTol.Abs > 0 {
		return o.adjTol.Rel, o.adjTol.Abs
	}
	return o.rtol, o.atol
}

// quadTols returns the quadratures' rel and abs.
func (o *options) quadTols() (float64, float64) {
	if o.quadTol.Abs > 0 {
		return o.quadTol.Rel, o.quadTol.Abs
	}
	return o.rtol, o.atol
}
