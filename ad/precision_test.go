package ad_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// fd64 is the central difference of f along coordinate i at x, in float64
// with Richardson extrapolation (two steps), accurate to ~1e-10 for the
// smooth functions below.
func fd64(f func([]float64) float64, x []float64, i int) float64 {
	d := func(h float64) float64 {
		xp := append([]float64(nil), x...)
		xm := append([]float64(nil), x...)
		xp[i] += h
		xm[i] -= h
		return (f(xp) - f(xm)) / (2 * h)
	}
	h := 1e-3 * math.Max(1, math.Abs(x[i]))
	return (4*d(h/2) - d(h)) / 3
}

func TestFloat64UnaryGradients(t *testing.T) {
	ops := []struct {
		name string
		f    func(ad.Var) ad.Var
	}{
		{"Exp", ad.Exp}, {"Log", ad.Log}, {"Log1p", ad.Log1p}, {"Sqrt", ad.Sqrt},
		{"Square", ad.Square}, {"Sin", ad.Sin}, {"Cos", ad.Cos}, {"Tanh", ad.Tanh},
		{"Sigmoid", ad.Sigmoid}, {"Gelu", ad.Gelu}, {"Erf", ad.Erf},
		{"Softplus", ad.Softplus}, {"Swish", ad.Swish}, {"Neg", ad.Neg},
		{"Pow", func(v ad.Var) ad.Var { return ad.Pow(v, 2.7) }},
		{"LeakyRelu", func(v ad.Var) ad.Var { return ad.LeakyRelu(ad.Neg(v), 0.1) }},
		{"Elu", func(v ad.Var) ad.Var { return ad.Elu(ad.Add(v, ad.ScalarLike(v, -1)), 1.3) }},
		{"Scale", func(v ad.Var) ad.Var { return ad.Scale(v, 1.0/3) }},
	}
	x := []float64{0.3, 1.7, 0.9, 2.2}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			// f(x) = Σ op(x)², second derivatives through the op's rule.
			loss := func(p ad.Var) ad.Var { y := op.f(p); return ad.Sum(ad.Mul(y, y)) }
			checkSecondOrder64(t, loss, x, allCoords(len(x)))
		})
	}
}

// checkSecondOrder64 checks the float64 gradient of loss at x against
// fd64 in every coordinate (to 1e-8 relative), and, for each coordinate
// i in cols, the Hessian's column i by forward over reverse against
// fdVec64 of the gradient (to 1e-7). It returns the gradient.
func checkSecondOrder64(t *testing.T, loss func(ad.Var) ad.Var, x []float64, cols []int) []float64 {
	t.Helper()
	value := func(x []float64) float64 {
		tp := ad.NewTape()
		y := loss(tp.Param64(x))
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		return y.Item64()
	}
	tp := ad.NewTape()
	y := loss(tp.Param64(x))
	if p := y.Precision(); p != ad.Float64 {
		t.Fatalf("loss precision %v, want float64", p)
	}
	g, err := tp.Grad64(y)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if want := fd64(value, x, i); math.Abs(g[i]-want) > 1e-8*(1+math.Abs(want)) {
			t.Errorf("∂f/∂x[%d] = %.15g, finite differences %.15g", i, g[i], want)
		}
	}
	gradAt := func(x []float64) []float64 { return grad64(t, loss, x) }
	for _, i := range cols {
		tp := ad.NewTape()
		p := tp.Param64(x)
		dir := make([]float64, len(x))
		dir[i] = 1
		hv, err := tp.JVPOf(ad.GradVar(loss, p), []ad.Var{p}, []ad.Var{tp.Const64(flat.Tensor64{Shape: []int{len(x)}, Data: dir})})
		if err != nil {
			t.Fatal(err)
		}
		if hv.Precision() != ad.Float64 {
			t.Fatalf("Hessian column in %v, want float64", hv.Precision())
		}
		want := fdVec64(gradAt, x, i)
		for j, got := range hv.Data64() {
			if math.Abs(got-want[j]) > 1e-7*(1+math.Abs(want[j])) {
				t.Errorf("H[%d][%d] = %.15g, finite differences of the gradient %.15g", j, i, got, want[j])
			}
		}
	}
	return g
}

// allCoords returns 0, …, n−1.
func allCoords(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = i
	}
	return c
}

func TestFloat64IsNotRoundedToFloat32(t *testing.T) {
	// 1 + 1e-10 is 1 in float32; a float64 computation must keep it.
	tp := ad.NewTape()
	x := tp.Param64([]float64{1e-10})
	y := ad.Sum(ad.Add(ad.Exp(x), ad.ScalarLike(x, -1)))
	if got := y.Item64(); math.Abs(got-1e-10) > 1e-15 {
		t.Errorf("exp(1e-10) − 1 = %g in float64, want 1e-10", got)
	}
	// ParamFloat64 converts the float32 buffer: its gradient is float64.
	tp = ad.NewTape()
	θ := []float32{0.1, 0.2}
	p := tp.ParamFloat64(θ)
	loss := ad.Sum(ad.Mul(p, p))
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	g64 := tp.GradWrt64(p)
	g32 := tp.GradWrt(p)
	for i, v := range θ {
		if want := 2 * float64(v); g64[i] != want {
			t.Errorf("GradWrt64[%d] = %.17g, want exactly %.17g", i, g64[i], want)
		}
		if g32[i] != float32(g64[i]) {
			t.Errorf("GradWrt[%d] = %v, want the float64 gradient rounded, %v", i, g32[i], float32(g64[i]))
		}
	}
}

func TestMixedPrecisionIsAnError(t *testing.T) {
	tp := ad.NewTape()
	a := tp.Param([]float32{1, 2})
	b := tp.Param64([]float64{1, 2})
	ad.Add(a, b)
	err := tp.Err()
	if err == nil {
		t.Fatal("Add of a float32 and a float64 value: no error")
	}
	for _, want := range []string{"Add", "float32", "float64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// Convert makes it explicit, and its derivative converts back.
	tp = ad.NewTape()
	a = tp.Param([]float32{1, 2})
	b = tp.Param64([]float64{3, 4})
	loss := ad.Sum(ad.Mul(ad.Convert(a, ad.Float64), b))
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if ga, gb := tp.GradWrt(a), tp.GradWrt64(b); ga[0] != 3 || ga[1] != 4 || gb[0] != 1 || gb[1] != 2 {
		t.Errorf("gradients %v and %v, want [3 4] and [1 2]", ga, gb)
	}
}

func TestFloat32OnlyKernelSaysSo(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Full64(1, 1, 1, 4, 4)
	w := tp.Full64(1, 1, 1, 3, 3)
	ad.Conv(x, w, ad.ConvGeom{})
	err := tp.Err()
	if err == nil {
		t.Fatal("Conv of float64 values: no error")
	}
	for _, want := range []string{"Conv", "float32", "float64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestRebindFloat64(t *testing.T) {
	tp := ad.NewTape()
	u := tp.Param64([]float64{1, 2})
	y := ad.Exp(u)
	if err := tp.Rebind64(u, []float64{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := tp.ReplayFor(y); err != nil {
		t.Fatal(err)
	}
	if got := y.Data64(); got[0] != 1 || got[1] != math.E {
		t.Errorf("replayed exp([0 1]) = %v", got)
	}
	if err := tp.Rebind(u, []float32{0, 1}); err == nil {
		t.Error("Rebind of float32 values to a float64 Param: no error")
	}
	// A ParamFloat64 converts again on Rebind.
	tp = ad.NewTape()
	p := tp.ParamFloat64([]float32{1, 2})
	y = ad.Exp(p)
	if err := tp.Rebind(p, []float32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := tp.ReplayFor(y); err != nil {
		t.Fatal(err)
	}
	if got := y.Data64(); got[0] != 1 || got[1] != math.E {
		t.Errorf("replayed exp([0 1]) = %v", got)
	}
	if err := tp.Rebind64(p, []float64{0, 1}); !errors.Is(err, tp.Err()) || err == nil {
		t.Errorf("Rebind64 of a ParamFloat64: %v, want an error", err)
	}
}

func TestFunctional64(t *testing.T) {
	// f(x) = Σ x_i² x_{i+1} (cyclic), its gradient and Hessian by hand.
	f := func(x ad.Var) ad.Var {
		n := x.Size()
		next := ad.Concat(0, ad.Slice(x, 1, n), ad.Slice(x, 0, 1))
		return ad.Sum(ad.Mul(ad.Square(x), next))
	}
	x := []float64{0.3, -1.1, 2.5, 0.7}
	n := len(x)
	grad := make([]float64, n)
	hess := make([]float64, n*n)
	for i := range x {
		j, k := (i+1)%n, (i+n-1)%n
		grad[i] = 2*x[i]*x[j] + x[k]*x[k]
		hess[i*n+i] += 2 * x[j]
		hess[i*n+j] += 2 * x[i]
		hess[i*n+k] += 2 * x[k]
	}
	v, g, err := ad.ValueAndGrad64(f, x)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for i := range x {
		want += x[i] * x[i] * x[(i+1)%n]
	}
	if math.Abs(v-want) > 1e-15 {
		t.Errorf("value %.17g, want %.17g", v, want)
	}
	dir := []float64{0.5, -2, 1.25, 3}
	hv, err := ad.HVP64(f, x, dir)
	if err != nil {
		t.Fatal(err)
	}
	hvr, err := ad.HVPReverse64(f, x, dir)
	if err != nil {
		t.Fatal(err)
	}
	jv, err := ad.JVP64(func(x ad.Var) ad.Var { return ad.GradVar(f, x) }, x, dir)
	if err != nil {
		t.Fatal(err)
	}
	vj, err := ad.VJP64(func(x ad.Var) ad.Var { return ad.GradVar(f, x) }, x, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Abs(g[i]-grad[i]) > 1e-14 {
			t.Errorf("grad[%d] = %.17g, want %.17g", i, g[i], grad[i])
		}
		var w float64
		for j := range x {
			w += hess[i*n+j] * dir[j]
		}
		for name, got := range map[string]float64{"HVP64": hv[i], "HVPReverse64": hvr[i], "JVP64 of the gradient": jv[i], "VJP64 of the gradient": vj[i]} {
			if math.Abs(got-w) > 1e-13 {
				t.Errorf("%s[%d] = %.17g, want %.17g", name, i, got, w)
			}
		}
	}
	if _, _, err := ad.ValueAndGrad64(func(x ad.Var) ad.Var { return ad.Convert(ad.Sum(x), ad.Float32) }, x); err == nil {
		t.Error("ValueAndGrad64 of a float32 result: no error")
	}
}
