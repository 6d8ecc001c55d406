package ad_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// ewOp is one elementwise op as drawn for a check: the function of the
// parameter vector and float64 references of its i-th output and of that
// output's derivative.
type ewOp struct {
	f      func(ad.Var) ad.Var
	ref, d func(i int, x float64) float64
}

type ewCase struct {
	name string
	// gen draws n inputs away from kinks, ties and the edges of the domain.
	gen func(t *rapid.T, n int) []float32
	// op draws the op's attributes (if any) for inputs of length n.
	op func(t *rapid.T, n int) ewOp
	// flat says the second derivative is structurally zero (piecewise linear).
	flat bool
}

// ewIn draws n values uniformly in [lo, hi].
func ewIn(lo, hi float64) func(*rapid.T, int) []float32 {
	return func(t *rapid.T, n int) []float32 {
		return ewSlice(t, n, lo, hi, "x")
	}
}

// ewAway draws n values with |x| in [lo, hi] and either sign.
func ewAway(lo, hi float64) func(*rapid.T, int) []float32 {
	return func(t *rapid.T, n int) []float32 {
		x := ewSlice(t, n, lo, hi, "|x|")
		neg := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "negative")
		for i := range x {
			if neg[i] {
				x[i] = -x[i]
			}
		}
		return x
	}
}

func ewSlice(t *rapid.T, n int, lo, hi float64, label string) []float32 {
	v := rapid.SliceOfN(rapid.Float64Range(lo, hi), n, n).Draw(t, label)
	x := make([]float32, n)
	for i := range v {
		x[i] = float32(v[i])
	}
	return x
}

// ewClampIn draws values at least 0.1 away from the bounds ±1 of the Clamp
// case, inside and outside the range.
func ewClampIn(t *rapid.T, n int) []float32 {
	x := ewAway(0.1, 0.8)(t, n)
	out := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "outside")
	for i := range x {
		if out[i] { // |x| in [1.1, 1.8]
			x[i] += float32(math.Copysign(1, float64(x[i])))
		}
	}
	return x
}

func ewFixed(f func(ad.Var) ad.Var, ref, d func(float64) float64) func(*rapid.T, int) ewOp {
	return func(*rapid.T, int) ewOp {
		return ewOp{
			f:   f,
			ref: func(_ int, x float64) float64 { return ref(x) },
			d:   func(_ int, x float64) float64 { return d(x) },
		}
	}
}

func ewConst(c float64) func(float64) float64 { return func(float64) float64 { return c } }

func ewStep(x float64) float64 { // [x > 0]
	if x > 0 {
		return 1
	}
	return 0
}

func ewSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func ewSign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

var ewCases = []ewCase{
	{name: "Exp", gen: ewIn(-2, 2), op: ewFixed(ad.Exp, math.Exp, math.Exp)},
	{name: "Log", gen: ewIn(0.2, 3), op: ewFixed(ad.Log, math.Log, func(x float64) float64 { return 1 / x })},
	{name: "Log1p", gen: ewIn(-0.5, 3), op: ewFixed(ad.Log1p, math.Log1p, func(x float64) float64 { return 1 / (1 + x) })},
	{name: "Sqrt", gen: ewIn(0.2, 3), op: ewFixed(ad.Sqrt, math.Sqrt, func(x float64) float64 { return 0.5 / math.Sqrt(x) })},
	{name: "Square", gen: ewIn(-2, 2), op: ewFixed(ad.Square, func(x float64) float64 { return x * x }, func(x float64) float64 { return 2 * x })},
	{name: "Pow", gen: ewIn(0.2, 3), op: func(t *rapid.T, _ int) ewOp {
		p := float32(rapid.SampledFrom([]float64{-1, -0.5, 0, 0.5, 1, 2, 3}).Draw(t, "p"))
		if rapid.Bool().Draw(t, "random p") {
			p = float32(rapid.Float64Range(-1, 3).Draw(t, "p"))
		}
		return ewOp{
			f:   func(x ad.Var) ad.Var { return ad.Pow(x, float64(p)) },
			ref: func(_ int, x float64) float64 { return math.Pow(x, float64(p)) },
			d:   func(_ int, x float64) float64 { return float64(p) * math.Pow(x, float64(p)-1) },
		}
	}},
	{name: "Abs", gen: ewAway(0.1, 2), op: ewFixed(ad.Abs, math.Abs, ewSign), flat: true},
	{name: "Sign", gen: ewAway(0.1, 2), op: ewFixed(ad.Sign, ewSign, ewConst(0)), flat: true},
	{name: "Sin", gen: ewIn(-3, 3), op: ewFixed(ad.Sin, math.Sin, math.Cos)},
	{name: "Cos", gen: ewIn(-3, 3), op: ewFixed(ad.Cos, math.Cos, func(x float64) float64 { return -math.Sin(x) })},
	{name: "Sigmoid", gen: ewIn(-4, 4), op: ewFixed(ad.Sigmoid, ewSigmoid, func(x float64) float64 { return ewSigmoid(x) * (1 - ewSigmoid(x)) })},
	{name: "Relu", gen: ewAway(0.1, 2), op: ewFixed(ad.Relu, func(x float64) float64 { return max(x, 0) }, ewStep), flat: true},
	{name: "LeakyRelu", gen: ewAway(0.1, 2), flat: true, op: func(t *rapid.T, _ int) ewOp {
		s := float32(rapid.Float64Range(0, 0.5).Draw(t, "slope"))
		return ewOp{
			f: func(x ad.Var) ad.Var { return ad.LeakyRelu(x, float64(s)) },
			ref: func(_ int, x float64) float64 {
				if x > 0 {
					return x
				}
				return float64(s) * x
			},
			d: func(_ int, x float64) float64 { return float64(s) + (1-float64(s))*ewStep(x) },
		}
	}},
	{name: "Elu", gen: ewAway(0.1, 2), op: func(t *rapid.T, _ int) ewOp {
		α := float32(rapid.Float64Range(0.5, 2).Draw(t, "alpha"))
		return ewOp{
			f: func(x ad.Var) ad.Var { return ad.Elu(x, float64(α)) },
			ref: func(_ int, x float64) float64 {
				if x > 0 {
					return x
				}
				return float64(α) * (math.Exp(x) - 1)
			},
			d: func(_ int, x float64) float64 {
				if x > 0 {
					return 1
				}
				return float64(α) * math.Exp(x)
			},
		}
	}},
	{name: "Gelu", gen: ewIn(-3, 3), op: ewFixed(ad.Gelu,
		func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		func(x float64) float64 {
			return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
		})},
	{name: "Erf", gen: ewIn(-2.5, 2.5), op: ewFixed(ad.Erf, math.Erf,
		func(x float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) })},
	{name: "Softplus", gen: ewIn(-4, 4), op: ewFixed(ad.Softplus,
		func(x float64) float64 { return math.Log1p(math.Exp(x)) }, ewSigmoid)},
	{name: "Swish", gen: ewIn(-4, 4), op: ewFixed(ad.Swish,
		func(x float64) float64 { return x * ewSigmoid(x) },
		func(x float64) float64 { s := ewSigmoid(x); return s + x*s*(1-s) })},
	{name: "Clamp", gen: ewClampIn, flat: true, op: ewFixed(
		func(x ad.Var) ad.Var { return ad.Clamp(x, -1, 1) },
		func(x float64) float64 { return min(max(x, -1), 1) },
		func(x float64) float64 { return ewStep(1 - math.Abs(x)) })},
	{name: "Indicator", gen: ewClampIn, flat: true, op: ewFixed(
		func(x ad.Var) ad.Var { return ad.Indicator(x, -1, 1) },
		func(x float64) float64 { return ewStep(1 - math.Abs(x)) },
		ewConst(0))},
	{name: "Where", gen: ewIn(-2, 2), op: func(t *rapid.T, n int) ewOp {
		c := ewAway(0.5, 1)(t, n)
		return ewOp{
			f: func(x ad.Var) ad.Var {
				cond := x.Tape().Const(flat.Tensor{Shape: []int{n}, Data: c})
				return ad.Where(cond, ad.Square(x), ad.Sin(x))
			},
			ref: func(i int, x float64) float64 {
				if c[i] > 0 {
					return x * x
				}
				return math.Sin(x)
			},
			d: func(i int, x float64) float64 {
				if c[i] > 0 {
					return 2 * x
				}
				return math.Cos(x)
			},
		}
	}},
}

func ewEval(t *rapid.T, f func(ad.Var) ad.Var, θ []float32) []float32 {
	t.Helper()
	tp := ad.NewTape()
	y := f(tp.Param(θ))
	if err := tp.Err(); err != nil {
		t.Fatalf("forward: %v", err)
	}
	return flat.Clone(y.Data())
}

func ewDot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// ewAbsDot is Σ|aᵢ bᵢ|, the scale of the rounding error of ewDot.
func ewAbsDot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

func ewMaxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// ewPerturb returns x ± h·d as float32 and the direction actually taken,
// (x₊ − x₋)/2h, so that the rounding of x ± h·d does not count as error.
func ewPerturb(x, d []float32, h float64) (plus, minus, dEff []float32) {
	plus, minus, dEff = make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
	for i := range x {
		plus[i] = float32(float64(x[i]) + h*float64(d[i]))
		minus[i] = float32(float64(x[i]) - h*float64(d[i]))
		dEff[i] = float32((float64(plus[i]) - float64(minus[i])) / (2 * h))
	}
	return plus, minus, dEff
}

const ewEps = 6e-8 // float32 rounding

func ewGrad(t *rapid.T, f func(ad.Var) ad.Var, x []float32) []float32 {
	t.Helper()
	_, g, err := ad.ValueAndGrad(f, x)
	if err != nil {
		t.Fatalf("gradient: %v", err)
	}
	return g
}

// ewCheckSecondOrder checks ad.HVP of the scalar F at x along d against
// ad.HVPReverse and against central differences of the gradient (d is the
// effective direction of plus and minus, with step h). It returns H·d.
func ewCheckSecondOrder(t *rapid.T, label string, F func(ad.Var) ad.Var, x, plus, minus, d []float32, h float64) []float32 {
	t.Helper()
	hv, err := ad.HVP(F, x, d)
	if err != nil {
		t.Fatalf("%s HVP: %v", label, err)
	}
	hv2, err := ad.HVPReverse(F, x, d)
	if err != nil {
		t.Fatalf("%s HVPReverse: %v", label, err)
	}
	scale := 1 + ewMaxAbs(hv)
	for i := range hv {
		if diff := math.Abs(float64(hv[i] - hv2[i])); diff > 1e-4*scale {
			t.Fatalf("%s: H·d[%d]: forward-over-reverse %v, reverse-over-reverse %v", label, i, hv[i], hv2[i])
		}
	}
	g := ewGrad(t, F, x)
	gp, gm := ewGrad(t, F, plus), ewGrad(t, F, minus)
	round := 8 * ewEps * (1 + ewMaxAbs(g)) / h
	for i := range hv {
		fd := (float64(gp[i]) - float64(gm[i])) / (2 * h)
		if diff := math.Abs(fd - float64(hv[i])); diff > 2e-2*(1+math.Abs(float64(hv[i])))+round {
			t.Fatalf("%s: H·d[%d] = %v, central difference of the gradient %v (step %v)", label, i, hv[i], fd, h)
		}
	}
	return hv
}

// TestElementwiseDerivatives checks every elementwise op, at random inputs
// away from its kinks and domain edges, for the value, the gradient against
// finite differences, JVP against the gradient, the transpose identity
// ⟨J v, u⟩ = ⟨v, Jᵀ u⟩, the Hessian-vector product by both nestings against
// finite differences of the gradient, and third derivatives likewise.
func TestElementwiseDerivatives(t *testing.T) {
	for _, c := range ewCases {
		t.Run(c.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { ewCheck(t, c) })
		})
	}
}

func ewCheck(t *rapid.T, c ewCase) {
	t.Helper()
	n := rapid.IntRange(1, 6).Draw(t, "n")
	x := c.gen(t, n)
	op := c.op(t, n)
	w := ewSlice(t, n, -1, 1, "w")
	d := ewSlice(t, n, -1, 1, "dir")
	u := ewSlice(t, n, -1, 1, "u")
	h := rapid.Float64Range(3e-3, 1e-2).Draw(t, "h")

	// Values against the float64 reference.
	y := ewEval(t, op.f, x)
	for i := range y {
		ref := op.ref(i, float64(x[i]))
		if diff := math.Abs(float64(y[i]) - ref); !(diff <= 1e-6*max(1, math.Abs(ref))) {
			t.Fatalf("%s(%v) = %v, want %v", c.name, x[i], y[i], ref)
		}
	}

	// (1) The gradient of F = Σ w ⊙ op(x) against central differences.
	F := func(p ad.Var) ad.Var {
		return ad.Sum(ad.Mul(p.Tape().Const(flat.Tensor{Shape: []int{n}, Data: w}), op.f(p)))
	}
	plus, minus, d := ewPerturb(x, d, h)
	g := ewGrad(t, F, x)
	for i := range g {
		want := float64(w[i]) * op.d(i, float64(x[i]))
		if diff := math.Abs(float64(g[i]) - want); !(diff <= 1e-5*max(1, math.Abs(want))) {
			t.Fatalf("∂F/∂x[%d] = %v at x = %v, want w·%s'(x) = %v", i, g[i], x[i], c.name, want)
		}
	}
	gd := ewDot(g, d)
	fp, fm := ewDot(w, ewEval(t, op.f, plus)), ewDot(w, ewEval(t, op.f, minus))
	fd := (fp - fm) / (2 * h)
	round := 4 * ewEps * (1 + ewAbsDot(w, y)) / h
	if diff := math.Abs(fd - gd); diff > 1e-2*(1+math.Abs(fd))+round {
		t.Fatalf("⟨∇F, d⟩ = %v, central difference %v (step %v, x %v, grad %v)", gd, fd, h, x, g)
	}

	// (2) Forward mode agrees with the gradient, and JVP and VJP of op
	// itself are transposes of each other.
	jF, err := ad.JVP(F, x, d)
	if err != nil {
		t.Fatalf("JVP: %v", err)
	}
	if diff := math.Abs(float64(jF[0]) - gd); diff > 1e-5*(1+ewAbsDot(g, d)) {
		t.Fatalf("JVP of F %v, ⟨∇F, d⟩ %v", jF[0], gd)
	}
	jv, err := ad.JVP(op.f, x, d)
	if err != nil {
		t.Fatalf("JVP: %v", err)
	}
	vj, err := ad.VJP(op.f, x, u)
	if err != nil {
		t.Fatalf("VJP: %v", err)
	}
	if l, r := ewDot(jv, u), ewDot(d, vj); math.Abs(l-r) > 1e-5*(1+ewAbsDot(jv, u)) {
		t.Fatalf("⟨J d, u⟩ = %v, ⟨d, Jᵀ u⟩ = %v", l, r)
	}

	// (3) Second order: both nestings and finite differences of the gradient;
	// piecewise-linear ops give exact (structural) zeros.
	hv := ewCheckSecondOrder(t, "F", F, x, plus, minus, d, h)
	if c.flat {
		for i, v := range hv {
			if v != 0 {
				t.Fatalf("H·d[%d] = %v for a piecewise-linear op; want exactly 0", i, v)
			}
		}
		return
	}

	// Third order: the HVP of F₃ = ⟨v, ∇F⟩ is ∇³F[v, d], built from the
	// rules' own rules.
	v := ewSlice(t, n, -1, 1, "v")
	F3 := func(p ad.Var) ad.Var {
		return ad.Sum(ad.Mul(p.Tape().Const(flat.Tensor{Shape: []int{n}, Data: v}), ad.GradVar(F, p)))
	}
	ewCheckSecondOrder(t, "⟨v, ∇F⟩", F3, x, plus, minus, d, h)
}
