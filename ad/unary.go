package ad

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/vmath"
)

// Elementwise functions of one input: exponentials and powers,
// trigonometric functions, activations, clamp and stop-gradient. Every
// derivative is written with ops of the set, so it composes to any order.
// Data-dependent choices (the ReLU mask, the clamp range, the sign of Abs)
// go through maskPositive, Indicator, Sign or the condition of Where, whose
// derivatives with respect to the data they test are structurally zero:
// ReLU'' = 0 away from 0 comes out exactly 0.
//
// At a kink the derivative is PyTorch's where PyTorch has one: Relu'(0) = 0,
// LeakyRelu'(0) = slope, Elu'(0) = alpha, Abs'(0) = Sign(0) = 0. Clamp's
// range is open: its derivative is 0 at x = lo and x = hi.

var (
	inf32 = float32(math.Inf(1))

	invSqrt2   = float32(1 / math.Sqrt2)
	invSqrt2Pi = float32(1 / math.Sqrt(2*math.Pi))
	twoSqrtPi  = float32(2 / math.Sqrt(math.Pi))
)

// unaryPrim is an elementwise function of one input without attributes.
type unaryPrim struct {
	name string
	f    func(x float32) float32
	// kernel, if set, maps a whole slice; it saves an indirect call per
	// element on hot activations.
	kernel func(out, x []float32)
	// deriv returns d out/d x as a Var, from the input x and the output y.
	deriv func(x, y Var) Var
	// scale, if set, returns t·d out/d x for a tangent or cotangent t. It
	// stands in for Mul(t, deriv(x, y)). The Jacobian is diagonal, so one
	// map serves both modes. It lets Relu mask t in one pass, without
	// materialising its 0/1 derivative.
	scale func(t, x, y Var) Var
}

func (p *unaryPrim) Name() string { return p.name }
func (p *unaryPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (p *unaryPrim) Forward(f *Forward) {
	x, out := f.In[0].Data, f.Out.Data
	if p.kernel != nil {
		splitElems(elemJob{kind: elemUnary, unary: p.kernel, out: out, a: x})
		return
	}
	for i, v := range x {
		out[i] = p.f(v)
	}
}
func (p *unaryPrim) times(t Var, r *Rule) Var {
	if p.scale != nil {
		return p.scale(t, r.In[0], r.Out)
	}
	return Mul(t, p.deriv(r.In[0], r.Out))
}
func (p *unaryPrim) JVP(r *Rule) Var    { return p.times(r.Tangent(0), r) }
func (p *unaryPrim) VJP(r *Rule, c Var) { r.AddGrad(0, p.times(c, r)) }

// unaryAttrPrim is an elementwise function of one input with float
// attributes (Attrs.Floats). deriv returns d out/d x as a Var, or the zero
// Var where the derivative is zero by construction; nil means always zero.
type unaryAttrPrim struct {
	name string
	f    func(x float32, a []float32) float32
	// kernel, if set, maps a whole slice, with the same results as f; it
	// saves an indirect call per element on hot ops.
	kernel func(out, x, a []float32)
	deriv  func(x, y Var, a []float32) Var
	check  func(a []float32) error // validates the attributes; may be nil
}

func (p *unaryAttrPrim) Name() string { return p.name }
func (p *unaryAttrPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if p.check != nil {
		if err := p.check(a.Floats); err != nil {
			return dst, err
		}
	}
	return append(dst, in[0]...), nil
}
func (p *unaryAttrPrim) Forward(f *Forward) {
	x, out, a := f.In[0].Data, f.Out.Data, f.Attrs.Floats
	if p.kernel != nil {
		p.kernel(out, x, a)
		return
	}
	for i, v := range x {
		out[i] = p.f(v, a)
	}
}
func (p *unaryAttrPrim) d(r *Rule) Var {
	if p.deriv == nil {
		return Var{}
	}
	return p.deriv(r.In[0], r.Out, r.Attrs.Floats)
}
func (p *unaryAttrPrim) JVP(r *Rule) Var {
	d := p.d(r)
	if d.IsZero() {
		return Var{}
	}
	return Mul(r.Tangent(0), d)
}
func (p *unaryAttrPrim) VJP(r *Rule, c Var) {
	if d := p.d(r); !d.IsZero() {
		r.AddGrad(0, Mul(c, d))
	}
}

func f64(x float32, f func(float64) float64) float32 { return float32(f(float64(x))) }

var negOp = &negPrim{}

type negPrim struct{}

// Neg returns −v.
func Neg(v Var) Var { return Apply(negOp, Attrs{}, v) }

func (*negPrim) Name() string { return "Neg" }
func (*negPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*negPrim) Forward(f *Forward) {
	for i, v := range f.In[0].Data {
		f.Out.Data[i] = -v
	}
}
func (*negPrim) JVP(r *Rule) Var    { return Neg(r.Tangent(0)) }
func (*negPrim) VJP(r *Rule, c Var) { r.AddGrad(0, Neg(c)) }

var tanhOp = &unaryPrim{
	name: "Tanh",
	// A float32 rational approximation; vmath.Tanh vectorises it (AVX-512,
	// AVX2) and agrees with vmath.TanhScalar bit for bit.
	f:      vmath.TanhScalar,
	kernel: vmath.Tanh,
	// 1 − y²
	deriv: func(_, y Var) Var { return Sub(y.t.Scalar(1), Mul(y, y)) },
}

// Tanh returns tanh(v) elementwise.
func Tanh(v Var) Var { return Apply(tanhOp, Attrs{}, v) }

// Primitives without attributes.
var (
	expOp = &unaryPrim{
		name:  "Exp",
		f:     func(x float32) float32 { return f64(x, math.Exp) },
		deriv: func(_, y Var) Var { return y },
	}
	logOp = &unaryPrim{
		name:  "Log",
		f:     func(x float32) float32 { return f64(x, math.Log) },
		deriv: func(x, _ Var) Var { return Div(x.t.Scalar(1), x) },
	}
	log1pOp = &unaryPrim{
		name:  "Log1p",
		f:     func(x float32) float32 { return f64(x, math.Log1p) },
		deriv: func(x, _ Var) Var { t := x.t; return Div(t.Scalar(1), Add(t.Scalar(1), x)) },
	}
	sqrtOp = &unaryPrim{
		name:  "Sqrt",
		f:     func(x float32) float32 { return f64(x, math.Sqrt) },
		deriv: func(_, y Var) Var { return Div(y.t.Scalar(0.5), y) },
	}
	squareOp = &unaryPrim{
		name:  "Square",
		f:     func(x float32) float32 { return x * x },
		deriv: func(x, _ Var) Var { return Scale(x, 2) },
	}
	absOp = &unaryPrim{
		name: "Abs",
		f: func(x float32) float32 {
			return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
		},
		deriv: func(x, _ Var) Var { return Sign(x) },
	}
	sinOp     = &unaryPrim{name: "Sin", f: func(x float32) float32 { return f64(x, math.Sin) }}
	cosOp     = &unaryPrim{name: "Cos", f: func(x float32) float32 { return f64(x, math.Cos) }}
	sigmoidOp = &unaryPrim{
		name: "Sigmoid",
		// A float32 expf-based sigmoid, within 2.4 ulps and without cancellation
		// for negative x; vmath.Sigmoid vectorises it, bit for bit.
		f:      vmath.SigmoidScalar,
		kernel: vmath.Sigmoid,
		// y (1 − y)
		deriv: func(_, y Var) Var { return Mul(y, Sub(y.t.Scalar(1), y)) },
	}
	reluOp = &unaryPrim{
		name: "Relu",
		f: func(x float32) float32 {
			if x > 0 {
				return x
			}
			return 0
		},
		kernel: vmath.Relu, // the same as f, bit for bit, vectorised
		// t·[x > 0] in one pass (not Mul(t, Indicator(x, 0, +Inf)), two
		// passes and a buffer), and 0 where x ≤ 0 even for a NaN or
		// infinite t, as PyTorch. The mask tests the input x; y > 0 would
		// select the same elements, x is kept by the tape either way.
		scale: func(t, x, _ Var) Var { return maskPositive(t, x) },
	}
	geluOp = &unaryPrim{
		name: "Gelu",
		f: func(x float32) float32 {
			v := float64(x)
			return float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
		},
		// Φ(x) + x φ(x), Φ(x) = (1 + erf(x/√2))/2, φ(x) = exp(−x²/2)/√(2π)
		deriv: func(x, _ Var) Var {
			t := x.t
			cdf := Scale(Add(t.Scalar(1), Erf(Scale(x, invSqrt2))), 0.5)
			pdf := Scale(Exp(Scale(Square(x), -0.5)), invSqrt2Pi)
			return Add(cdf, Mul(x, pdf))
		},
	}
	erfOp = &unaryPrim{
		name: "Erf",
		f:    func(x float32) float32 { return f64(x, math.Erf) },
		// 2/√π · exp(−x²)
		deriv: func(x, _ Var) Var { return Scale(Exp(Neg(Square(x))), twoSqrtPi) },
	}
	softplusOp = &unaryPrim{
		name: "Softplus",
		f: func(x float32) float32 {
			v := float64(x)
			return float32(math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))))
		},
		deriv: func(x, _ Var) Var { return Sigmoid(x) },
	}
	swishOp = &unaryPrim{
		name: "Swish",
		f: func(x float32) float32 {
			return float32(float64(x) * sigmoid64(float64(x)))
		},
		// s + x s (1 − s) = s + y (1 − s), s = sigmoid(x)
		deriv: func(x, y Var) Var {
			s := Sigmoid(x)
			return Add(s, Mul(y, Sub(x.t.Scalar(1), s)))
		},
	}
)

// The rules that refer back to their own primitive are set here, to break
// the initialization cycle.
func init() {
	sinOp.deriv = func(x, _ Var) Var { return Cos(x) }
	cosOp.deriv = func(x, _ Var) Var { return Neg(Sin(x)) }
	// p xᵖ⁻¹; zero by construction for p = 0
	powOp.deriv = func(x, _ Var, a []float32) Var {
		p := a[0]
		if p == 0 {
			return Var{}
		}
		return Scale(Pow(x, p-1), p)
	}
}

func sigmoid64(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

// Exp returns eˣ elementwise.
func Exp(x Var) Var { return Apply(expOp, Attrs{}, x) }

// Log returns the natural logarithm elementwise.
func Log(x Var) Var { return Apply(logOp, Attrs{}, x) }

// Log1p returns log(1 + x) elementwise, accurate for small x.
func Log1p(x Var) Var { return Apply(log1pOp, Attrs{}, x) }

// Sqrt returns √x elementwise.
func Sqrt(x Var) Var { return Apply(sqrtOp, Attrs{}, x) }

// Square returns x² elementwise.
func Square(x Var) Var { return Apply(squareOp, Attrs{}, x) }

// Abs returns |x| elementwise. Its derivative is Sign(x), which is 0 at 0.
func Abs(x Var) Var { return Apply(absOp, Attrs{}, x) }

// Sin returns sin(x) elementwise.
func Sin(x Var) Var { return Apply(sinOp, Attrs{}, x) }

// Cos returns cos(x) elementwise.
func Cos(x Var) Var { return Apply(cosOp, Attrs{}, x) }

// Sigmoid returns 1/(1 + e⁻ˣ) elementwise, without overflow for large |x|.
func Sigmoid(x Var) Var { return Apply(sigmoidOp, Attrs{}, x) }

// Relu returns max(x, 0) elementwise. Its derivative at 0 is 0, and where
// x ≤ 0 its rules give 0 whatever tangent or cotangent comes (NaN and ±Inf
// included), as PyTorch's do.
func Relu(x Var) Var { return Apply(reluOp, Attrs{}, x) }

// Gelu returns the exact GELU, PyTorch's default rather than the tanh
// approximation:
//
//	x·Φ(x) = 0.5·x·(1 + erf(x/√2))
func Gelu(x Var) Var { return Apply(geluOp, Attrs{}, x) }

// Erf returns the error function elementwise.
func Erf(x Var) Var { return Apply(erfOp, Attrs{}, x) }

// Softplus returns log(1 + eˣ) elementwise. It is computed as
//
//	max(x, 0) + log1p(e^−|x|)
//
// so that it neither overflows nor loses the small values of large
// negative x. Its derivative is Sigmoid(x).
func Softplus(x Var) Var { return Apply(softplusOp, Attrs{}, x) }

// Swish returns x·sigmoid(x) elementwise. It is also called SiLU, as in
// PyTorch's nn.SiLU.
func Swish(x Var) Var { return Apply(swishOp, Attrs{}, x) }

// Primitives with float attributes.
var (
	powOp = &unaryAttrPrim{
		name: "Pow",
		f: func(x float32, a []float32) float32 {
			return float32(math.Pow(float64(x), float64(a[0])))
		},
	}
	signOp = &unaryAttrPrim{
		name: "Sign",
		f: func(x float32, _ []float32) float32 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return x // ±0 and NaN
		},
	}
	indicatorOp = &unaryAttrPrim{
		name: "Indicator",
		f: func(x float32, a []float32) float32 {
			if a[0] < x && x < a[1] {
				return 1
			}
			return 0
		},
		kernel: indicatorKernel,
		check:  checkRange,
	}
	leakyReluOp = &unaryAttrPrim{
		name: "LeakyRelu",
		f: func(x float32, a []float32) float32 {
			if x > 0 {
				return x
			}
			return a[0] * x
		},
		// slope + (1 − slope)·[x > 0]
		deriv: func(x, _ Var, a []float32) Var {
			s := a[0]
			return Add(x.t.Scalar(s), Scale(Indicator(x, 0, inf32), 1-s))
		},
	}
	eluOp = &unaryAttrPrim{
		name: "Elu",
		f: func(x float32, a []float32) float32 {
			if x > 0 {
				return x
			}
			return a[0] * f64(x, math.Expm1)
		},
		// 1 for x > 0, α eˣ = y + α otherwise
		deriv: func(x, y Var, a []float32) Var {
			t := x.t
			return Where(x, t.Scalar(1), Add(y, t.Scalar(a[0])))
		},
	}
	clampOp = &unaryAttrPrim{
		name: "Clamp",
		f: func(x float32, a []float32) float32 {
			return min(max(x, a[0]), a[1])
		},
		// [lo < x < hi]
		deriv: func(x, _ Var, a []float32) Var { return Indicator(x, a[0], a[1]) },
		check: checkRange,
	}
)

// indicatorKernel is Indicator's f over a slice, vectorised.
func indicatorKernel(out, x, a []float32) { vmath.Indicator(out[:len(x)], x, a[0], a[1]) }

func checkRange(a []float32) error {
	if !(a[0] <= a[1]) {
		return fmt.Errorf("range [%v, %v]: want lo ≤ hi", a[0], a[1])
	}
	return nil
}

// Pow returns xᵖ elementwise for a constant exponent p. For a non-integer p
// the input should be positive (NaN otherwise, as in math.Pow).
func Pow(x Var, p float32) Var {
	return Apply(powOp, Attrs{Floats: []float32{p}}, x)
}

// Sign returns 1, −1 or 0 by the sign of x, elementwise. Its derivative is
// zero, structurally, to every order.
func Sign(x Var) Var { return Apply(signOp, Attrs{}, x) }

// Indicator returns 1 where lo < x < hi and 0 elsewhere. Its derivative is
// zero, structurally, to every order. It is the mask that the derivative
// rules of piecewise ops such as Relu and Clamp are written with, and user
// rules may use it the same way. Either bound may be infinite; lo > hi is an error.
func Indicator(x Var, lo, hi float32) Var {
	return Apply(indicatorOp, Attrs{Floats: []float32{lo, hi}}, x)
}

// LeakyRelu returns x for x > 0 and slope·x otherwise, elementwise.
// PyTorch's default slope is 0.01.
func LeakyRelu(x Var, slope float32) Var {
	return Apply(leakyReluOp, Attrs{Floats: []float32{slope}}, x)
}

// Elu returns x for x > 0 and alpha·(eˣ − 1) otherwise, elementwise.
// PyTorch's default alpha is 1.
func Elu(x Var, alpha float32) Var {
	return Apply(eluOp, Attrs{Floats: []float32{alpha}}, x)
}

// Clamp returns x limited to [lo, hi], elementwise. Either bound may be
// infinite; lo > hi is an error. The derivative is 1 inside (lo, hi) and 0
// elsewhere, at the bounds too.
func Clamp(x Var, lo, hi float32) Var {
	return Apply(clampOp, Attrs{Floats: []float32{lo, hi}}, x)
}

// StopGradient returns x's value, sharing its memory, as a value whose
// derivative is zero in both modes and at every order: a constant of the
// computation that does not have to be recomputed.
func StopGradient(x Var) Var { return Apply(stopGradientOp, Attrs{}, x) }

type stopGradientPrim struct{}

var stopGradientOp = &stopGradientPrim{}

func (*stopGradientPrim) Name() string { return "StopGradient" }
func (*stopGradientPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*stopGradientPrim) Forward(*Forward)                          {}
func (*stopGradientPrim) Alias(in []flat.Tensor, _ Attrs) []float32 { return in[0].Data }
func (*stopGradientPrim) JVP(*Rule) Var                             { return Var{} }
func (*stopGradientPrim) VJP(*Rule, Var)                            {}
