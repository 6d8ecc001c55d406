package proptest

import (
	"fmt"
	"math"
	"reflect"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// The AD checkers run in the precision of θ. A float32 θ is recorded with
// Param and differentiated by ad's float32 helpers (ValueAndGrad, JVP,
// ...); a float64 θ with Param64 and ad's float64 helpers (ValueAndGrad64,
// JVP64, ...), and f must then return a float64 Var. Inside a check, θ,
// the directions and the derivatives are held in float64; in float32 they
// hold float32 numbers exactly, so nothing is rounded on the way to ad.

// numeric is how a check computes in one precision: its rounding, the
// derivatives of package ad, and how the finite differences evaluate f.
type numeric struct {
	round func(float64) float64 // to the nearest number of the precision
	ulp   func(float64) float64 // the spacing of numbers at |x|
	bits  func(float64) uint64  // x's bits, for hashing θ
	grad  func(f func(ad.Var) ad.Var, θ []float64) ([]float64, error)
	jvp   func(f func(ad.Var) ad.Var, θ, d []float64) ([]float64, error)
	vjp   func(f func(ad.Var) ad.Var, θ, u []float64) ([]float64, error)
	hvp   func(f func(ad.Var) ad.Var, θ, d []float64) ([]float64, error)
	hvpR  func(f func(ad.Var) ad.Var, θ, d []float64) ([]float64, error)
	eval  fdEvaluator // the default evaluation of the finite differences
	steps []float32   // the default steps

	// The tolerances of the comparisons of ad with itself, relative to
	// the terms compared and absolute: CheckHVP's two modes, and the
	// Hessian's symmetry.
	modesRel, modesAbs float64
	symRel, symAbs     float64
}

// numericOf returns the numeric of the element type F.
func numericOf[F flat.Float]() *numeric {
	if reflect.TypeFor[F]().Kind() == reflect.Float64 {
		return &num64
	}
	return &num32
}

// widen returns x in float64.
func widen[F flat.Float](x []F) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// narrow returns x in float32; x holds float32 numbers, so nothing is
// rounded.
func narrow(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

var num32 = numeric{
	round: func(x float64) float64 { return float64(float32(x)) },
	ulp:   func(x float64) float64 { return float64(ulp32(float32(x))) },
	bits:  func(x float64) uint64 { return uint64(math.Float32bits(float32(x))) },
	grad: func(f func(ad.Var) ad.Var, θ []float64) ([]float64, error) {
		_, g, err := ad.ValueAndGrad(f, narrow(θ))
		return float64s(g), err
	},
	jvp:   wrap32(ad.JVP),
	vjp:   wrap32(ad.VJP),
	hvp:   wrap32(ad.HVP),
	hvpR:  wrap32(ad.HVPReverse),
	eval:  eval32,
	steps: defaultSteps,

	modesRel: 1e-4, modesAbs: 1e-6,
	symRel: 1e-3, symAbs: 1e-5,
}

var num64 = numeric{
	round: func(x float64) float64 { return x },
	ulp:   ulp64,
	bits:  math.Float64bits,
	grad: func(f func(ad.Var) ad.Var, θ []float64) ([]float64, error) {
		_, g, err := ad.ValueAndGrad64(f, θ)
		return g, err
	},
	jvp:   ad.JVP64,
	vjp:   ad.VJP64,
	hvp:   ad.HVP64,
	hvpR:  ad.HVPReverse64,
	eval:  eval64,
	steps: defaultSteps64,

	modesRel: 1e-10, modesAbs: 1e-12,
	symRel: 1e-9, symAbs: 1e-11,
}

// wrap32 is a float32 product of package ad on float64 arguments that hold
// float32 numbers.
func wrap32(p func(f func(ad.Var) ad.Var, θ, d []float32) ([]float32, error)) func(f func(ad.Var) ad.Var, θ, d []float64) ([]float64, error) {
	return func(f func(ad.Var) ad.Var, θ, d []float64) ([]float64, error) {
		out, err := p(f, narrow(θ), narrow(d))
		return float64s(out), err
	}
}

// ulp32 is the spacing of float32 numbers at x.
func ulp32(x float32) float32 {
	x = float32(math.Abs(float64(x)))
	if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
		return x
	}
	return math.Nextafter32(x, float32(math.Inf(1))) - x
}

// ulp64 is the spacing of float64 numbers at x.
func ulp64(x float64) float64 {
	x = math.Abs(x)
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	return math.Nextafter(x, math.Inf(1)) - x
}

// eval64 evaluates f in float64 at θ + t·d, θ recorded with Param64.
var eval64 = fdEvaluator{at: evalLine64, unit: 0x1p-53}

func evalLine64(f func(ad.Var) ad.Var, θ, d []float64, t float64) ([]float64, error) {
	x := make([]float64, len(θ))
	for i := range x {
		x[i] = θ[i] + t*d[i]
	}
	tp := ad.NewTape()
	y := f(tp.Param64(x))
	if err := tp.Err(); err != nil {
		return nil, err
	}
	if p := y.Precision(); p != ad.Float64 {
		return nil, fmt.Errorf("f of a float64 θ returned a %v value; want float64 (make constants with ad.ScalarLike or ad.FullLike, or Convert the result)", p)
	}
	return append([]float64(nil), y.Data64()...), nil
}
