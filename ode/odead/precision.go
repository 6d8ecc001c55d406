package odead

import (
	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/ode"
)

// The bridge is written once for float32 and float64 states: a state of F
// goes on the tape in F (Param or Param64, Const or Const64), and the
// parameters, always the float32 buffer, go on in F too: as themselves
// for float32, converted by ad.ParamFloat64 for float64, so that f
// computes in the state's precision throughout. The helpers below pick
// the tape call by F; each asserts a pointer, which allocates nothing.

// stateConst records data, a state or a seed of F, as a constant.
func stateConst[F ode.Float](tp *ad.Tape, shape []int, data []F) ad.Var {
	if d, ok := any(&data).(*[]float64); ok {
		return tp.Const64(flat.Tensor64{Shape: shape, Data: *d})
	}
	return tp.Const(flat.Tensor{Shape: shape, Data: *any(&data).(*[]float32)})
}

// stateParam records u, a state of F, as a Param.
func stateParam[F ode.Float](tp *ad.Tape, u []F) ad.Var {
	if d, ok := any(&u).(*[]float64); ok {
		return tp.Param64(*d)
	}
	return tp.Param(*any(&u).(*[]float32))
}

// valuesOf returns v's values as []F; F must be v's precision.
func valuesOf[F ode.Float](v ad.Var) []F {
	var d []F
	if p, ok := any(&d).(*[]float64); ok {
		*p = v.Data64()
	} else {
		*any(&d).(*[]float32) = v.Data()
	}
	return d
}

// gradOf returns the gradient of the Param v of F after a Backward.
func gradOf[F ode.Float](tp *ad.Tape, v ad.Var) []F {
	var d []F
	if p, ok := any(&d).(*[]float64); ok {
		*p = tp.GradWrt64(v)
	} else {
		*any(&d).(*[]float32) = tp.GradWrt(v)
	}
	return d
}

// addValues adds v's values into dst (for float32 flat's Axpy with 1, the
// bits of dst + v); the zero Var adds nothing.
func addValues[F ode.Float](dst []F, v ad.Var) {
	if v.IsZero() {
		return
	}
	if d, ok := any(&dst).(*[]float32); ok {
		flat.Axpy(1, v.Data(), *d)
		return
	}
	for i, x := range valuesOf[F](v) {
		dst[i] += x
	}
}

// isFloat64 reports whether F is float64.
func isFloat64[F ode.Float](_ []F) bool {
	var z F
	_, ok := any(z).(float64)
	return ok
}

// RHS is the two forms of a right-hand side written with ad ops. In the
// first, t is a float64 that f may use as it likes; a recording of such
// an f cannot be known to hold at another t, so it is replayed only when
// declared Replayable. In the second, t is a scalar Var in the state's
// precision, like u: an f that computes with it records ops that a
// replay recomputes, and one that reads its value (Item64) to choose ops
// is found value-dependent by ad; so this form is replayed by default,
// safely (see Replayable).
type RHS interface {
	func(u, p ad.Var, t float64) ad.Var | func(u, p, t ad.Var) ad.Var
}

// rhsFunc is an RHS of either form.
type rhsFunc struct {
	f  func(u, p ad.Var, t float64) ad.Var
	fv func(u, p, t ad.Var) ad.Var
}

func rhsOf[R RHS](f R) rhsFunc {
	switch g := any(f).(type) {
	case func(u, p ad.Var, t float64) ad.Var:
		return rhsFunc{f: g}
	case func(u, p, t ad.Var) ad.Var:
		return rhsFunc{fv: g}
	}
	panic("odead: unreachable: an RHS of neither form")
}

// call applies the right-hand side: tv is t as a Var, for the second form.
func (r rhsFunc) call(u, p ad.Var, t float64, tv ad.Var) ad.Var {
	if r.fv != nil {
		return r.fv(u, p, tv)
	}
	return r.f(u, p, t)
}
