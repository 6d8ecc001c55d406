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
