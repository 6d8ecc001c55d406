package ad_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

func TestGeluAndErfMatchFloat64(t *testing.T) {
	xs := []float32{-6, -3.5, -2, -1, -0.5, -1e-3, 0, 1e-3, 0.25, 0.5, 1, 1.5, 2, 3.5, 6}
	cases := []struct {
		name string
		op   func(ad.Var) ad.Var
		ref  func(float64) float64
	}{
		{"Erf", ad.Erf, math.Erf},
		{"Gelu", ad.Gelu, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := ad.NewTape()
			y := c.op(tp.Const(flat.Tensor{Shape: []int{len(xs)}, Data: xs})).Data()
			if err := tp.Err(); err != nil {
				t.Fatal(err)
			}
			for i, x := range xs {
				ref := c.ref(float64(x))
				if diff := math.Abs(float64(y[i]) - ref); diff > 1e-7*max(1, math.Abs(ref)) {
					t.Errorf("%s(%v) = %v, want %v", c.name, x, y[i], ref)
				}
			}
		})
	}
}

func TestSaturatingOpsStayFinite(t *testing.T) {
	xs := []float32{-80, -30, 0, 30, 80}
	cases := []struct {
		name string
		op   func(ad.Var) ad.Var
		want []float64 // values at xs
	}{
		{"Softplus", ad.Softplus, []float64{math.Exp(-80), math.Exp(-30), math.Ln2, 30, 80}},
		{"Sigmoid", ad.Sigmoid, []float64{math.Exp(-80), math.Exp(-30), 0.5, 1, 1}},
		{"Swish", ad.Swish, []float64{-80 * math.Exp(-80), -30 * math.Exp(-30), 0, 30, 80}},
	}
	finite := func(t *testing.T, what string, v []float32) {
		t.Helper()
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Errorf("%s[%d] = %v at x = %v", what, i, x, xs[i])
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := ewEvalT(t, c.op, xs)
			for i := range xs {
				if diff := math.Abs(float64(y[i]) - c.want[i]); diff > 1e-6*max(1e-30, math.Abs(c.want[i])) {
					t.Errorf("%s(%v) = %v, want %v", c.name, xs[i], y[i], c.want[i])
				}
			}
			F := func(p ad.Var) ad.Var { return ad.Sum(c.op(p)) }
			_, g, err := ad.ValueAndGrad(F, xs)
			if err != nil {
				t.Fatal(err)
			}
			finite(t, "gradient", g)
			ones := []float32{1, 1, 1, 1, 1}
			hv, err := ad.HVP(F, xs, ones)
			if err != nil {
				t.Fatal(err)
			}
			finite(t, "H·1", hv)
			hv2, err := ad.HVPReverse(F, xs, ones)
			if err != nil {
				t.Fatal(err)
			}
			finite(t, "H·1 (reverse-over-reverse)", hv2)
		})
	}
	// Softplus' derivative is the sigmoid: exactly 1 and tiny at ±80.
	_, g, err := ad.ValueAndGrad(func(p ad.Var) ad.Var { return ad.Sum(ad.Softplus(p)) }, []float32{-80, 80})
	if err != nil {
		t.Fatal(err)
	}
	if g[1] != 1 || !(g[0] > 0 && g[0] < 1e-30) {
		t.Errorf("Softplus' at (−80, 80) = %v, want (e⁻⁸⁰, 1)", g)
	}
}

func ewEvalT(t *testing.T, f func(ad.Var) ad.Var, x []float32) []float32 {
	t.Helper()
	tp := ad.NewTape()
	y := f(tp.Const(flat.Tensor{Shape: []int{len(x)}, Data: x}))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	return y.Data()
}

func TestStopGradient(t *testing.T) {
	x := []float32{0.5, -1.5, 2}
	tp := ad.NewTape()
	p := tp.Param(x)
	s := ad.StopGradient(p)
	if &s.Data()[0] != &x[0] || s.Size() != len(x) {
		t.Errorf("StopGradient does not share its input's memory")
	}
	g, err := tp.Grad(ad.Sum(ad.Mul(ad.Exp(s), tp.Const(flat.Tensor{Shape: []int{3}, Data: []float32{1, 2, 3}}))))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range g {
		if v != 0 {
			t.Errorf("gradient through StopGradient [%d] = %v, want 0", i, v)
		}
	}

	// F = Σ sg(x)·x²: ∇F = 2 sg(x) x, H = diag(2 sg(x)), sg(x) taken as a
	// constant at every order.
	F := func(p ad.Var) ad.Var { return ad.Sum(ad.Mul(ad.StopGradient(p), ad.Square(p))) }
	_, g2, err := ad.ValueAndGrad(F, x)
	if err != nil {
		t.Fatal(err)
	}
	d := []float32{1, -2, 0.5}
	jv, err := ad.JVP(F, x, d)
	if err != nil {
		t.Fatal(err)
	}
	hv, err := ad.HVP(F, x, d)
	if err != nil {
		t.Fatal(err)
	}
	hv2, err := ad.HVPReverse(F, x, d)
	if err != nil {
		t.Fatal(err)
	}
	var wantJ float32
	for i := range x {
		wantG := 2 * x[i] * x[i]
		wantH := 2 * x[i] * d[i]
		wantJ += wantG * d[i]
		if !ewNear(g2[i], wantG) || !ewNear(hv[i], wantH) || !ewNear(hv2[i], wantH) {
			t.Errorf("[%d]: gradient %v, want %v; H·d %v and %v, want %v", i, g2[i], wantG, hv[i], hv2[i], wantH)
		}
	}
	if math.Abs(float64(jv[0]-wantJ)) > 1e-5 {
		t.Errorf("JVP %v, want %v", jv[0], wantJ)
	}
	// The JVP of StopGradient itself is zero.
	jv, err = ad.JVP(ad.StopGradient, x, d)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range jv {
		if v != 0 {
			t.Errorf("JVP of StopGradient [%d] = %v, want 0", i, v)
		}
	}
}

func TestWhereRoutesGradients(t *testing.T) {
	// Same shapes: the gradient is the chosen branch's.
	cond := []float32{1, -1, 0, 2}
	F := func(p ad.Var) ad.Var {
		c := p.Tape().Const(flat.Tensor{Shape: []int{4}, Data: cond})
		return ad.Sum(ad.Where(c, ad.Scale(p, 2), ad.Scale(p, 3)))
	}
	v, g, err := ad.ValueAndGrad(F, []float32{1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{2, 3, 3, 2}; v != 10 || !slices.Equal(g, want) {
		t.Errorf("value %v, gradient %v; want 10, %v", v, g, want)
	}

	// Broadcasting: cond (2, 3), a (3), b (1) → (2, 3). The gradient of a
	// counts the rows choosing it, b's counts the other entries.
	cond2 := []float32{1, -1, 1, 1, 1, -1}
	G := func(p ad.Var) ad.Var {
		c := p.Tape().Const(flat.Tensor{Shape: []int{2, 3}, Data: cond2})
		return ad.Where(c, ad.View(p, 0, 3), ad.View(p, 3, 1))
	}
	θ := []float32{10, 20, 30, -1}
	tp := ad.NewTape()
	y := G(tp.Param(θ))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []float32{10, -1, 30, 10, 20, -1}; !slices.Equal(y.Data(), want) || !slices.Equal(y.Shape(), []int{2, 3}) {
		t.Errorf("Where = %v %v, want [2 3] %v", y.Shape(), y.Data(), want)
	}
	_, g, err = ad.ValueAndGrad(func(p ad.Var) ad.Var { return ad.Sum(G(p)) }, θ)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{2, 1, 1, 2}; !slices.Equal(g, want) {
		t.Errorf("gradient %v, want %v", g, want)
	}
	// Forward mode, tangent of b only: it shows where b was chosen.
	jv, err := ad.JVP(G, θ, []float32{0, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 1, 0, 0, 0, 1}; !slices.Equal(jv, want) {
		t.Errorf("JVP along b %v, want %v", jv, want)
	}
	// The condition gets no derivative, even when it is computed from x.
	_, g, err = ad.ValueAndGrad(func(p ad.Var) ad.Var {
		return ad.Sum(ad.Where(ad.Sin(p), p.Tape().Full(1, 2), p.Tape().Scalar(-1)))
	}, []float32{1, -1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g, []float32{0, 0}) {
		t.Errorf("gradient through the condition %v, want 0", g)
	}
}

func ewNear(a, b float32) bool {
	return math.Abs(float64(a-b)) <= 1e-6*max(1, math.Abs(float64(b)))
}

func TestElementwiseErrors(t *testing.T) {
	checkTapeErrs(t, []tapeErrCase{
		{"Where shapes", func(tp *ad.Tape) ad.Var {
			return ad.Where(tp.Full(1, 2, 3), tp.Full(0, 4), tp.Full(0, 3))
		}, []string{"Where", "[2 3]", "[4]", "[3]"}},
		{"Clamp range", func(tp *ad.Tape) ad.Var {
			return ad.Clamp(tp.Full(0, 3), 1, -1)
		}, []string{"Clamp", "lo ≤ hi", "[1, -1]"}},
		{"Indicator NaN bound", func(tp *ad.Tape) ad.Var {
			return ad.Indicator(tp.Full(0, 3), float64(float32(math.NaN())), 1)
		}, []string{"Indicator", "NaN"}},
		{"sticky", func(tp *ad.Tape) ad.Var {
			bad := ad.Where(tp.Full(1, 2), tp.Full(0, 3), tp.Full(0, 2))
			return ad.Gelu(ad.Relu(bad))
		}, []string{"Where", "[2]", "[3]"}},
	})
}

func TestElementwiseStepAllocatesNothing(t *testing.T) {
	θ := []float32{0.5, -1.2, 2, 0.3, -0.7, 1.1}
	dir := []float32{1, -0.5, 0.25, 2, -1, 0.5}
	ct := flat.Tensor{Shape: []int{6}, Data: []float32{1, -1, 1, -1, 1, -1}} // made once: Const's error path keeps its shape
	loss := func(p ad.Var) ad.Var {
		c := p.Tape().Const(ct)
		a := ad.Add(ad.Gelu(p), ad.LeakyRelu(p, 0.01))
		b := ad.Mul(ad.Pow(ad.Softplus(p), 1.5), ad.Clamp(ad.Elu(p, 1), -0.5, 0.5))
		y := ad.Where(c, ad.Swish(a), ad.Log1p(ad.Square(b)))
		y = ad.Add(y, ad.Mul(ad.StopGradient(p), ad.Abs(ad.Sin(p))))
		return ad.Sum(ad.Relu(y))
	}
	pinStepAllocs(t, 50, θ, dir, loss)
}

func BenchmarkElementwiseGradStep(b *testing.B) {
	θ := make([]float32, 4096)
	for i := range θ {
		θ[i] = float32(i%17)/8 - 1
	}
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		p := tp.Param(θ)
		y := ad.Add(ad.Gelu(p), ad.Mul(ad.Sigmoid(p), ad.Relu(p)))
		if _, err := tp.Grad(ad.Sum(y)); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
}
