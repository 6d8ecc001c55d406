package ad_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// The float64 forms of MatMul, Gather, ScatterAdd, the reductions and the
// softmax family: each case is a scalar function of one flat parameter
// vector that runs the op on parts of it, checked in float64 against
// finite differences (gradient and Hessian columns), and against the same
// function in float32.

// opCase64 is a scalar function of a parameter vector of n numbers.
type opCase64 struct {
	name string
	n    int
	f    func(x ad.Var) ad.Var
}

// finish64 is a smooth nonlinear scalar of y, so that the op's second
// derivatives and its cross terms with a nonlinearity are exercised.
func finish64(y ad.Var) ad.Var { return ad.Sum(ad.Mul(ad.Sin(y), ad.Exp(ad.Scale(y, 0.3)))) }

// part is the piece of x at off of the given shape.
func part(x ad.Var, off int, shape ...int) ad.Var { return ad.View(x, off, shape...) }

func opCases64() []opCase64 {
	mm := func(name string, sa, sb []int, ta, tb bool) opCase64 {
		na, nb := sizeOfShape(sa), sizeOfShape(sb)
		return opCase64{name, na + nb, func(x ad.Var) ad.Var {
			return finish64(ad.MatMulT(part(x, 0, sa...), part(x, na, sb...), ta, tb))
		}}
	}
	idx := []int{3, 0, 3, 5, 1, 1, 4}
	return []opCase64{
		mm("MatMul", []int{3, 4}, []int{4, 2}, false, false),
		mm("MatMulTA", []int{4, 3}, []int{4, 2}, true, false),
		mm("MatMulTB", []int{3, 4}, []int{2, 4}, false, true),
		mm("MatMulTATB", []int{4, 3}, []int{2, 4}, true, true),
		mm("Batched", []int{2, 3, 4}, []int{2, 4, 2}, false, false),
		mm("BatchedTB", []int{2, 3, 4}, []int{2, 2, 4}, false, true),
		mm("SharedB", []int{2, 3, 4}, []int{4, 2}, false, false),
		mm("SharedA", []int{3, 4}, []int{2, 4, 2}, false, false),
		mm("Batch1A", []int{1, 4, 3}, []int{3, 4, 2}, true, false),
		mm("MatVec", []int{3, 4}, []int{4}, false, false),
		mm("MatTVec", []int{4, 3}, []int{4}, true, false),
		mm("BatchedMatVec", []int{2, 3, 4}, []int{4}, false, false),
		mm("VecMat", []int{4}, []int{4, 3}, false, false),
		mm("VecMatT", []int{4}, []int{3, 4}, false, true),
		mm("Dot", []int{5}, []int{5}, false, false),
		{"Gather", 6, func(x ad.Var) ad.Var { return finish64(ad.Gather(x, idx, 7)) }},
		{"GatherShaped", 6, func(x ad.Var) ad.Var {
			return finish64(ad.Gather(ad.Reshape(x, 2, 3), []int{5, 0, 2, 2}, 2, 2))
		}},
		{"ScatterAdd", 7, func(x ad.Var) ad.Var { return finish64(ad.ScatterAdd(x, idx, 2, 3)) }},
		{"SumAll", 24, func(x ad.Var) ad.Var { return ad.Square(ad.Sum(ad.Tanh(x))) }},
		{"Sum0", 24, func(x ad.Var) ad.Var { return finish64(ad.Sum(ad.Reshape(x, 2, 3, 4), 0)) }},
		{"Sum12", 24, func(x ad.Var) ad.Var { return finish64(ad.Sum(ad.Reshape(x, 2, 3, 4), 1, 2)) }},
		{"SumLast", 24, func(x ad.Var) ad.Var { return finish64(ad.Sum(ad.Reshape(x, 2, 3, 4), -1)) }},
		{"MeanAll", 24, func(x ad.Var) ad.Var { return ad.Square(ad.Mean(ad.Tanh(x))) }},
		{"Mean1", 24, func(x ad.Var) ad.Var { return finish64(ad.Mean(ad.Reshape(x, 2, 3, 4), 1)) }},
		{"Mean02", 24, func(x ad.Var) ad.Var { return finish64(ad.Mean(ad.Reshape(x, 2, 3, 4), 0, -1)) }},
		{"Max0", 24, func(x ad.Var) ad.Var { return finish64(ad.Max(ad.Reshape(x, 2, 3, 4), 0)) }},
		{"Max1", 24, func(x ad.Var) ad.Var { return finish64(ad.Max(ad.Reshape(x, 2, 3, 4), 1)) }},
		{"MinLast", 24, func(x ad.Var) ad.Var { return finish64(ad.Min(ad.Reshape(x, 2, 3, 4), -1)) }},
		{"Min0", 24, func(x ad.Var) ad.Var { return finish64(ad.Min(ad.Reshape(x, 4, 6), 0)) }},
		{"LogSumExp0", 24, func(x ad.Var) ad.Var { return finish64(ad.LogSumExp(ad.Reshape(x, 2, 3, 4), 0)) }},
		{"LogSumExp1", 24, func(x ad.Var) ad.Var { return finish64(ad.LogSumExp(ad.Reshape(x, 2, 3, 4), 1)) }},
		{"LogSumExpLast", 24, func(x ad.Var) ad.Var { return finish64(ad.LogSumExp(ad.Reshape(x, 2, 3, 4), -1)) }},
		{"Softmax", 24, func(x ad.Var) ad.Var { return finish64(ad.Softmax(ad.Reshape(x, 4, 6), -1)) }},
		{"Softmax0", 24, func(x ad.Var) ad.Var { return finish64(ad.Softmax(ad.Reshape(x, 4, 6), 0)) }},
		{"LogSoftmax", 24, func(x ad.Var) ad.Var { return finish64(ad.LogSoftmax(ad.Reshape(x, 2, 3, 4), 1)) }},
	}
}

func sizeOfShape(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// distinct64 returns n values in about [-1.2, 1.2], at least 0.09 apart
// (so that a finite-difference step never changes which element a Max
// picks), in a scrambled order.
func distinct64(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		k := (i*7 + 3) % n // a permutation: 7 and n are coprime below
		x[i] = 2.4*float64(k)/float64(n) - 1.2 + 0.01*math.Sin(float64(i))
	}
	return x
}

// grad64 returns f's gradient at x, recorded in float64.
func grad64(t *testing.T, f func(ad.Var) ad.Var, x []float64) []float64 {
	t.Helper()
	tp := ad.NewTape()
	g, err := tp.Grad64(f(tp.Param64(x)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fdVec64 is fd64 for a vector-valued function: the central difference of
// g along coordinate i, Richardson-extrapolated.
func fdVec64(g func([]float64) []float64, x []float64, i int) []float64 {
	d := func(h float64) []float64 {
		xp := slices.Clone(x)
		xm := slices.Clone(x)
		xp[i] += h
		xm[i] -= h
		gp, gm := g(xp), g(xm)
		for j := range gp {
			gp[j] = (gp[j] - gm[j]) / (2 * h)
		}
		return gp
	}
	h := 1e-3 * math.Max(1, math.Abs(x[i]))
	a, b := d(h/2), d(h)
	for j := range a {
		a[j] = (4*a[j] - b[j]) / 3
	}
	return a
}

func TestFloat64OpsGradients(t *testing.T) {
	for _, c := range opCases64() {
		t.Run(c.name, func(t *testing.T) {
			x := distinct64(c.n)
			g := checkSecondOrder64(t, c.f, x, allCoords(len(x)))
			nonzero := false
			for _, v := range g {
				nonzero = nonzero || v != 0
			}
			if !nonzero {
				t.Fatal("the gradient is zero: the case tests nothing")
			}
		})
	}
}

// TestFloat64OpsMatchFloat32 runs each case in both precisions on the same
// (float32-representable) inputs: values and gradients agree to float32
// accuracy.
func TestFloat64OpsMatchFloat32(t *testing.T) {
	for _, c := range opCases64() {
		t.Run(c.name, func(t *testing.T) {
			x := distinct64(c.n)
			x32 := make([]float32, len(x))
			for i, v := range x {
				x32[i] = float32(v)
				x[i] = float64(x32[i])
			}
			tp := ad.NewTape()
			y32 := c.f(tp.Param(x32))
			g32, err := tp.Grad(y32)
			if err != nil {
				t.Fatal(err)
			}
			tp64 := ad.NewTape()
			y64 := c.f(tp64.Param64(x))
			g64, err := tp64.Grad64(y64)
			if err != nil {
				t.Fatal(err)
			}
			const tol = 1e-5
			if v32, v64 := y32.Item64(), y64.Item64(); math.Abs(v32-v64) > tol*(1+math.Abs(v64)) {
				t.Errorf("float32 value %.9g, float64 value %.15g", v32, v64)
			}
			for i := range g64 {
				if d := math.Abs(float64(g32[i]) - g64[i]); d > tol*(1+math.Abs(g64[i])) {
					t.Errorf("∂f/∂x[%d]: float32 %.9g, float64 %.15g", i, g32[i], g64[i])
				}
			}
		})
	}
}

// TestFloat64OpsKeepPrecision: results finer than float32 resolves.
func TestFloat64OpsKeepPrecision(t *testing.T) {
	tp := ad.NewTape()
	a := tp.Param64([]float64{1, 1e-10, 1, 1e-10})
	b := tp.Const64(flat.Tensor64{Shape: []int{2, 2}, Data: []float64{1, 1, 1, 1}})
	got := ad.MatMul(ad.Reshape(a, 2, 2), b).Data64()
	if want := 1 + 1e-10; got[0] != want {
		t.Errorf("MatMul: (1 + 1e-10) came out %.17g, want %.17g", got[0], want)
	}
	x := tp.Param64([]float64{0, 1e-9})
	if got, want := ad.LogSumExp(x, 0).Item64(), math.Log(1+math.Exp(1e-9)); math.Abs(got-want) > 1e-15 {
		t.Errorf("LogSumExp = %.17g, want %.17g", got, want)
	}
	if got := ad.Max(x, 0).Item64(); got != 1e-9 {
		t.Errorf("Max = %g, want 1e-9", got)
	}
	if got := ad.Sum(ad.Gather(x, []int{1, 1}, 2)).Item64(); got != 2e-9 {
		t.Errorf("Sum of Gather = %g, want 2e-9", got)
	}
}

// TestFloat64MatMulMixingIsAnError: MatMul given a float32 and a float64 Var
// name themselves and both precisions.
func TestFloat64MatMulMixingIsAnError(t *testing.T) {
	tp := ad.NewTape()
	a := tp.Param([]float32{1, 2, 3, 4})
	b := tp.Param64([]float64{1, 2})
	ad.MatMul(ad.Reshape(a, 2, 2), b)
	err := tp.Err()
	if err == nil {
		t.Fatal("MatMul of a float32 and a float64 Var: no error")
	}
	for _, want := range []string{"MatMul", "float32", "float64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// mlp64 is a two-layer network on a batch of float64 inputs, its weights
// read from the float32 parameter buffer in float64.
func mlp64(tp *ad.Tape, θ []float32, x flat.Tensor64) (p, loss ad.Var) {
	p = tp.ParamFloat64(θ)
	w1 := ad.View(p, 0, 3, 8)
	b1 := ad.View(p, 24, 8)
	w2 := ad.View(p, 32, 8, 2)
	h := ad.Tanh(ad.Add(ad.MatMul(tp.Const64(x), w1), b1))
	y := ad.MatMul(h, w2)
	return p, ad.Sum(ad.Mul(y, y))
}

func mlpData64() ([]float32, flat.Tensor64) {
	θ := make([]float32, 48)
	for i := range θ {
		θ[i] = float32(math.Sin(float64(i)*1.3)) * 0.5
	}
	x := flat.Tensor64{Shape: []int{4, 3}, Data: make([]float64, 12)}
	for i := range x.Data {
		x.Data[i] = math.Cos(float64(i) * 0.7)
	}
	return θ, x
}

func TestFloat64MLPReusedTapeAllocatesNothing(t *testing.T) {
	θ, x := mlpData64()
	tp := ad.NewTape()
	var g []float64
	step := func() {
		tp.Reset()
		p, loss := mlp64(tp, θ, x)
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		g = tp.GradWrt64(p)
	}
	step()
	step()
	if a := testing.AllocsPerRun(50, step); a != 0 {
		t.Errorf("a float64 forward + gradient step allocates %v times, want 0", a)
	}
	// The gradient is right too.
	value := func(θ64 []float64) float64 {
		// Evaluate in float64 from float64 weights: Param64 in place of
		// ParamFloat64, the same network otherwise.
		tp := ad.NewTape()
		p := tp.Param64(θ64)
		h := ad.Tanh(ad.Add(ad.MatMul(tp.Const64(x), ad.View(p, 0, 3, 8)), ad.View(p, 24, 8)))
		y := ad.MatMul(h, ad.View(p, 32, 8, 2))
		return ad.Sum(ad.Mul(y, y)).Item64()
	}
	θ64 := make([]float64, len(θ))
	for i, v := range θ {
		θ64[i] = float64(v)
	}
	for i := range θ64 {
		if want := fd64(value, θ64, i); math.Abs(g[i]-want) > 1e-8*(1+math.Abs(want)) {
			t.Errorf("∂loss/∂θ[%d] = %.15g, finite differences %.15g", i, g[i], want)
		}
	}
}

// TestFloat64JacobianPattern: the structural sweep reads a float64
// recording as it reads a float32 one.
func TestFloat64JacobianPattern(t *testing.T) {
	f := func(x ad.Var) ad.Var {
		m := ad.Reshape(x, 3, 4)
		a := ad.MatMul(m, ad.View(x, 0, 4)) // (3)
		b := ad.Max(m, 0)                   // (4)
		c := ad.LogSumExp(m, 1)             // (3)
		d := ad.Gather(x, []int{11, 2}, 2)
		e := ad.ScatterAdd(ad.View(x, 4, 2), []int{1, 1}, 3)
		return ad.Concat(0, a, b, c, d, e, ad.Sum(m, 1))
	}
	x := distinct64(12)
	x32 := make([]float32, len(x))
	for i, v := range x {
		x32[i] = float32(v)
	}
	tp32 := ad.NewTape()
	p32 := tp32.Param(x32)
	rp32, ci32, err := tp32.JacobianPattern(f(p32), p32)
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	p := tp.Param64(x)
	y := f(p)
	rp, ci, err := tp.JacobianPattern(y, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rp, rp32) || !slices.Equal(ci, ci32) {
		t.Errorf("float64 pattern %v %v, float32 pattern %v %v", rp, ci, rp32, ci32)
	}
	if len(ci) == 0 {
		t.Fatal("empty pattern")
	}
	// Every nonzero of the float64 Jacobian (by forward sweeps) is in the
	// pattern.
	for j := range x {
		dir := make([]float64, len(x))
		dir[j] = 1
		col, err := tp.JVPOf(y, []ad.Var{p}, []ad.Var{tp.Const64(flat.Tensor64{Shape: []int{len(x)}, Data: dir})})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range col.Data64() {
			if v != 0 && !slices.Contains(ci[rp[i]:rp[i+1]], j) {
				t.Errorf("J[%d][%d] = %g is outside the pattern", i, j, v)
			}
		}
	}
}

// TestFloat64MatMulValues checks the float64 kernel against the product
// written out, for every pair of transposes and the batch layouts, to
// float64 rounding.
func TestFloat64MatMulValues(t *testing.T) {
	const m, k, n = 3, 5, 4
	for _, c := range []struct{ ba, bb int }{{0, 0}, {2, 2}, {2, 0}, {0, 2}, {1, 3}, {3, 1}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				sa, sb := []int{m, k}, []int{k, n}
				if ta {
					sa = []int{k, m}
				}
				if tb {
					sb = []int{n, k}
				}
				if c.ba > 0 {
					sa = append([]int{c.ba}, sa...)
				}
				if c.bb > 0 {
					sb = append([]int{c.bb}, sb...)
				}
				a := flat.Tensor64{Shape: sa, Data: distinct64(sizeOfShape(sa))}
				b := flat.Tensor64{Shape: sb, Data: distinct64(sizeOfShape(sb))}
				for i := range b.Data {
					b.Data[i] += 0.25 * float64(i%3)
				}
				tp := ad.NewTape()
				got := ad.MatMulT(tp.Const64(a), tp.Const64(b), ta, tb).Data64()
				if err := tp.Err(); err != nil {
					t.Fatal(err)
				}
				batch := max(c.ba, c.bb, 1)
				if len(got) != batch*m*n {
					t.Fatalf("%v·%v: %d elements, want %d", sa, sb, len(got), batch*m*n)
				}
				at := func(x flat.Tensor64, nb, s, r, cl int, tr bool) float64 {
					rows, cols := x.Shape[len(x.Shape)-2], x.Shape[len(x.Shape)-1]
					if nb <= 1 {
						s = 0
					}
					if tr {
						r, cl = cl, r
					}
					return x.Data[s*rows*cols+r*cols+cl]
				}
				for s := range batch {
					for i := range m {
						for j := range n {
							want := 0.0
							for p := range k {
								want += at(a, c.ba, s, i, p, ta) * at(b, c.bb, s, p, j, tb)
							}
							if g := got[(s*m+i)*n+j]; math.Abs(g-want) > 1e-14*(1+math.Abs(want)) {
								t.Errorf("%v%s·%v%s [%d][%d][%d] = %.17g, want %.17g", sa, transMark(ta), sb, transMark(tb), s, i, j, g, want)
							}
						}
					}
				}
			}
		}
	}
}

func transMark(t bool) string {
	if t {
		return "ᵀ"
	}
	return ""
}

// BenchmarkFloat64MLPStep is a forward + gradient step of mlp64 on a
// reused tape, and BenchmarkFloat32MLPStep the same network in float32.
func BenchmarkFloat64MLPStep(b *testing.B) {
	θ, x := mlpData64()
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		_, loss := mlp64(tp, θ, x)
		if err := tp.Backward(loss); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloat32MLPStep(b *testing.B) {
	θ, x64 := mlpData64()
	x := flat.Tensor{Shape: x64.Shape, Data: make([]float32, len(x64.Data))}
	for i, v := range x64.Data {
		x.Data[i] = float32(v)
	}
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		p := tp.Param(θ)
		h := ad.Tanh(ad.Add(ad.MatMul(tp.Const(x), ad.View(p, 0, 3, 8)), ad.View(p, 24, 8)))
		y := ad.MatMul(h, ad.View(p, 32, 8, 2))
		if err := tp.Backward(ad.Sum(ad.Mul(y, y))); err != nil {
			b.Fatal(err)
		}
	}
}
