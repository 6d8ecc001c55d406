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

var inf = math.Inf(1)

const (
	invSqrt2   = 1 / math.Sqrt2
	invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	twoSqrtPi  = 2 / math.SqrtPi
)

// unaryPrim is an elementwise function of one input without attributes.
// Most are one generic function instantiated for each precision; float32
// has its own where it is an approximation made for speed (Tanh,
// Sigmoid).
type unaryPrim struct {
	name string
	f    func(x float32) float32
	f64  func(x float64) float64
	// kernel, if set, maps a whole float32 slice; it saves an indirect
	// call per element on hot activations.
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
func (p *unaryPrim) Forward64(f *Forward) {
	x, out := f.In64[0].Data, f.Out64.Data
	for i, v := range x {
		out[i] = p.f64(v)
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

// unaryAttrPrim is an elementwise function of one input with one or two
// float attributes (Attrs.Floats; a float32 kernel rounds them to float32
// first). deriv returns d out/d x as a Var, or the zero Var where the
// derivative is zero by construction; nil means always zero. The attributes
// it gets are those the kernel of x's precision used.
type unaryAttrPrim struct {
	name string
	f    func(x, a0, a1 float32) float32
	f64  func(x, a0, a1 float64) float64
	// kernel, if set, maps a whole float32 slice, with the same results as
	// f; it saves an indirect call per element on hot ops.
	kernel func(out, x []float32, a0, a1 float32)
	deriv  func(x, y Var, a0, a1 float64) Var
	check  func(a []float64) error // validates the attributes; may be nil
}

// attrs returns the first two attributes, 0 for those missing.
func attrs2(a []float64) (a0, a1 float64) {
	if len(a) > 0 {
		a0 = a[0]
	}
	if len(a) > 1 {
		a1 = a[1]
	}
	return a0, a1
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
	x, out := f.In[0].Data, f.Out.Data
	a0, a1 := attrs2(f.Attrs.Floats)
	b0, b1 := float32(a0), float32(a1)
	if p.kernel != nil {
		p.kernel(out, x, b0, b1)
		return
	}
	for i, v := range x {
		out[i] = p.f(v, b0, b1)
	}
}
func (p *unaryAttrPrim) Forward64(f *Forward) {
	x, out := f.In64[0].Data, f.Out64.Data
	a0, a1 := attrs2(f.Attrs.Floats)
	for i, v := range x {
		out[i] = p.f64(v, a0, a1)
	}
}
func (p *unaryAttrPrim) d(r *Rule) Var {
	if p.deriv == nil {
		return Var{}
	}
	a0, a1 := attrs2(r.Attrs.Floats)
	if r.In[0].Precision() == Float32 {
		a0, a1 = float64(float32(a0)), float64(float32(a1))
	}
	return p.deriv(r.In[0], r.Out, a0, a1)
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

// via returns f in x's precision: f is computed in float64, and a float32
// result is rounded once.
func via[T flat.Float](f func(float64) float64) func(T) T {
	return func(x T) T { return T(f(float64(x))) }
}

var negOp = &negPrim{}

type negPrim struct{}

// Neg returns −v.
func Neg(v Var) Var { return Apply(negOp, Attrs{}, v) }

func (*negPrim) Name() string { return "Neg" }
func (*negPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*negPrim) Forward(f *Forward)   { negate(f.Out.Data, f.In[0].Data) }
func (*negPrim) Forward64(f *Forward) { negate(f.Out64.Data, f.In64[0].Data) }

func negate[T flat.Float](out, x []T) {
	for i, v := range x {
		out[i] = -v
	}
}
func (*negPrim) JVP(r *Rule) Var    { return Neg(r.Tangent(0)) }
func (*negPrim) VJP(r *Rule, c Var) { r.AddGrad(0, Neg(c)) }

var tanhOp = &unaryPrim{
	name: "Tanh",
	// A float32 rational approximation; vmath.Tanh vectorises it (AVX-512,
	// AVX2) and agrees with vmath.TanhScalar bit for bit.
	f:      vmath.TanhScalar,
	f64:    math.Tanh,
	kernel: vmath.Tanh,
	// 1 − y²
	deriv: func(_, y Var) Var { return Sub(ScalarLike(y, 1), Mul(y, y)) },
}

// Tanh returns tanh(v) elementwise.
func Tanh(v Var) Var { return Apply(tanhOp, Attrs{}, v) }

// Primitives without attributes.
var (
	expOp = &unaryPrim{
		name: "Exp",
		f:    via[float32](math.Exp), f64: math.Exp,
		deriv: func(_, y Var) Var { return y },
	}
	logOp = &unaryPrim{
		name: "Log",
		f:    via[float32](math.Log), f64: math.Log,
		deriv: func(x, _ Var) Var { return Div(ScalarLike(x, 1), x) },
	}
	log1pOp = &unaryPrim{
		name: "Log1p",
		f:    via[float32](math.Log1p), f64: math.Log1p,
		deriv: func(x, _ Var) Var { one := ScalarLike(x, 1); return Div(one, Add(one, x)) },
	}
	sqrtOp = &unaryPrim{
		name: "Sqrt",
		f:    via[float32](math.Sqrt), f64: math.Sqrt,
		deriv: func(_, y Var) Var { return Div(ScalarLike(y, 0.5), y) },
	}
	squareOp = &unaryPrim{
		name: "Square",
		f:    square[float32], f64: square[float64],
		deriv: func(x, _ Var) Var { return Scale(x, 2) },
	}
	absOp = &unaryPrim{
		name: "Abs",
		f:    via[float32](math.Abs), f64: math.Abs,
		deriv: func(x, _ Var) Var { return Sign(x) },
	}
	sinOp     = &unaryPrim{name: "Sin", f: via[float32](math.Sin), f64: math.Sin}
	cosOp     = &unaryPrim{name: "Cos", f: via[float32](math.Cos), f64: math.Cos}
	sigmoidOp = &unaryPrim{
		name: "Sigmoid",
		// A float32 expf-based sigmoid, within 2.4 ulps and without cancellation
		// for negative x; vmath.Sigmoid vectorises it, bit for bit.
		f:      vmath.SigmoidScalar,
		f64:    sigmoid64,
		kernel: vmath.Sigmoid,
		// y (1 − y)
		deriv: func(_, y Var) Var { return Mul(y, Sub(ScalarLike(y, 1), y)) },
	}
	reluOp = &unaryPrim{
		name:   "Relu",
		f:      relu[float32],
		f64:    relu[float64],
		kernel: vmath.Relu, // the same as f, bit for bit, vectorised
		// t·[x > 0] in one pass (not Mul(t, Indicator(x, 0, +Inf)), two
		// passes and a buffer), and 0 where x ≤ 0 even for a NaN or
		// infinite t, as PyTorch. The mask tests the input x; y > 0 would
		// select the same elements, x is kept by the tape either way.
		scale: func(t, x, _ Var) Var { return maskPositive(t, x) },
	}
	geluOp = &unaryPrim{
		name: "Gelu",
		f:    via[float32](gelu64),
		f64:  gelu64,
		// Φ(x) + x φ(x), Φ(x) = (1 + erf(x/√2))/2, φ(x) = exp(−x²/2)/√(2π)
		deriv: func(x, _ Var) Var {
			cdf := Scale(Add(ScalarLike(x, 1), Erf(Scale(x, roundAs(x, invSqrt2)))), 0.5)
			pdf := Scale(Exp(Scale(Square(x), -0.5)), roundAs(x, invSqrt2Pi))
			return Add(cdf, Mul(x, pdf))
		},
	}
	erfOp = &unaryPrim{
		name: "Erf",
		f:    via[float32](math.Erf), f64: math.Erf,
		// 2/√π · exp(−x²)
		deriv: func(x, _ Var) Var { return Scale(Exp(Neg(Square(x))), roundAs(x, twoSqrtPi)) },
	}
	softplusOp = &unaryPrim{
		name:  "Softplus",
		f:     via[float32](softplus64),
		f64:   softplus64,
		deriv: func(x, _ Var) Var { return Sigmoid(x) },
	}
	swishOp = &unaryPrim{
		name: "Swish",
		f:    via[float32](swish64),
		f64:  swish64,
		// s + x s (1 − s) = s + y (1 − s), s = sigmoid(x)
		deriv: func(x, y Var) Var {
			s := Sigmoid(x)
			return Add(s, Mul(y, Sub(ScalarLike(x, 1), s)))
		},
	}
)

// The rules that refer back to their own primitive are set here, to break
// the initialization cycle.
func init() {
	sinOp.deriv = func(x, _ Var) Var { return Cos(x) }
	cosOp.deriv = func(x, _ Var) Var { return Neg(Sin(x)) }
	// p xᵖ⁻¹; zero by construction for p = 0
	powOp.deriv = func(x, _ Var, p, _ float64) Var {
		if p == 0 {
			return Var{}
		}
		return Scale(Pow(x, p-1), p)
	}
}

func square[T flat.Float](x T) T { return x * x }

func relu[T flat.Float](x T) T {
	if x > 0 {
		return x
	}
	return 0
}

func gelu64(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }

func softplus64(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

func swish64(v float64) float64 { return v * sigmoid64(v) }

// roundAs returns c rounded to x's precision: the constants of rules are
// float32 numbers in float32 code.
func roundAs(x Var, c float64) float64 {
	if x.Precision() == Float32 {
		return float64(float32(c))
	}
	return c
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
		f:    func(x, p, _ float32) float32 { return float32(math.Pow(float64(x), float64(p))) },
		f64:  func(x, p, _ float64) float64 { return math.Pow(x, p) },
	}
	signOp = &unaryAttrPrim{
		name: "Sign",
		f:    sign[float32],
		f64:  sign[float64],
	}
	indicatorOp = &unaryAttrPrim{
		name:   "Indicator",
		f:      indicator[float32],
		f64:    indicator[float64],
		kernel: indicatorKernel,
		check:  checkRange,
	}
	leakyReluOp = &unaryAttrPrim{
		name: "LeakyRelu",
		f:    leakyRelu[float32],
		f64:  leakyRelu[float64],
		// slope + (1 − slope)·[x > 0]
		deriv: func(x, _ Var, s, _ float64) Var {
			return Add(ScalarLike(x, s), Scale(Indicator(x, 0, inf), 1-s))
		},
	}
	eluOp = &unaryAttrPrim{
		name: "Elu",
		f:    elu[float32],
		f64:  elu[float64],
		// 1 for x > 0, α eˣ = y + α otherwise
		deriv: func(x, y Var, a, _ float64) Var {
			return Where(x, ScalarLike(x, 1), Add(y, ScalarLike(x, a)))
		},
	}
	clampOp = &unaryAttrPrim{
		name: "Clamp",
		f:    clamp[float32],
		f64:  clamp[float64],
		// [lo < x < hi]
		deriv: func(x, _ Var, lo, hi float64) Var { return Indicator(x, lo, hi) },
		check: checkRange,
	}
)

// indicatorKernel is Indicator's f over a slice, vectorised.
func indicatorKernel(out, x []float32, lo, hi float32) { vmath.Indicator(out[:len(x)], x, lo, hi) }

func sign[T flat.Float](x, _, _ T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 and NaN
}

func indicator[T flat.Float](x, lo, hi T) T {
	if lo < x && x < hi {
		return 1
	}
	return 0
}

func leakyRelu[T flat.Float](x, slope, _ T) T {
	if x > 0 {
		return x
	}
	return slope * x
}

func elu[T flat.Float](x, alpha, _ T) T {
	if x > 0 {
		return x
	}
	return alpha * T(math.Expm1(float64(x)))
}

func clamp[T flat.Float](x, lo, hi T) T { return min(max(x, lo), hi) }

func checkRange(a []float64) error {
	if !(a[0] <= a[1]) {
		return fmt.Errorf("range [%v, %v]: want lo ≤ hi", a[0], a[1])
	}
	return nil
}

// Pow returns xᵖ elementwise for a constant exponent p. For a non-integer p
// the input should be positive (NaN otherwise, as in math.Pow).
func Pow(x Var, p float64) Var {
	return Apply(powOp, Attrs{Floats: []float64{p}}, x)
}

// Sign returns 1, −1 or 0 by the sign of x, elementwise. Its derivative is
// zero, structurally, to every order.
func Sign(x Var) Var { return Apply(signOp, Attrs{}, x) }

// Indicator returns 1 where lo < x < hi and 0 elsewhere. Its derivative is
// zero, structurally, to every order. It is the mask that the derivative
// rules of piecewise ops such as Relu and Clamp are written with, and user
// rules may use it the same way. Either bound may be infinite; lo > hi is an error.
func Indicator(x Var, lo, hi float64) Var {
	return Apply(indicatorOp, Attrs{Floats: []float64{lo, hi}}, x)
}

// LeakyRelu returns x for x > 0 and slope·x otherwise, elementwise.
// PyTorch's default slope is 0.01.
func LeakyRelu(x Var, slope float64) Var {
	return Apply(leakyReluOp, Attrs{Floats: []float64{slope}}, x)
}

// Elu returns x for x > 0 and alpha·(eˣ − 1) otherwise, elementwise.
// PyTorch's default alpha is 1.
func Elu(x Var, alpha float64) Var {
	return Apply(eluOp, Attrs{Floats: []float64{alpha}}, x)
}

// Clamp returns x limited to [lo, hi], elementwise. Either bound may be
// infinite; lo > hi is an error. The derivative is 1 inside (lo, hi) and 0
// elsewhere, at the bounds too.
func Clamp(x Var, lo, hi float64) Var {
	return Apply(clampOp, Attrs{Floats: []float64{lo, hi}}, x)
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
func (*stopGradientPrim) Forward(*Forward)                              {}
func (*stopGradientPrim) Alias(in []flat.Tensor, _ Attrs) []float32     { return in[0].Data }
func (*stopGradientPrim) Alias64(in []flat.Tensor64, _ Attrs) []float64 { return in[0].Data }
func (*stopGradientPrim) JVP(*Rule) Var                                 { return Var{} }
func (*stopGradientPrim) VJP(*Rule, Var)                                {}
