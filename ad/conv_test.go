package ad_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
)

// convCase is a random convolution: geometry and the shapes of x, w, y.
type convCase struct {
	g          ad.ConvGeom
	xs, ws, ys []int
}

// drawConv draws a small convolution of rank 1 to 3 with stride 1–2, pads
// 0–2 per side, dilation 1–2 and groups 1–2 or depthwise.
func drawConv(t *rapid.T) convCase {
	r := rapid.IntRange(1, 3).Draw(t, "rank")
	var c convCase
	n := rapid.IntRange(1, 2).Draw(t, "N")
	switch rapid.IntRange(0, 2).Draw(t, "group kind") {
	case 0:
		c.g.Groups = rapid.IntRange(0, 1).Draw(t, "groups (0 = default)")
	case 1:
		c.g.Groups = 2
	}
	var cin, cout int
	if c.g.Groups == 0 && rapid.Bool().Draw(t, "depthwise") {
		c.g.Groups = rapid.IntRange(1, 3).Draw(t, "depthwise channels")
		cin, cout = c.g.Groups, c.g.Groups
	} else {
		gr := max(c.g.Groups, 1)
		cin = gr * rapid.IntRange(1, 4).Draw(t, "cin/g")
		cout = gr * rapid.IntRange(1, 2).Draw(t, "cout/g")
	}
	c.xs = []int{n, cin}
	c.ws = []int{cout, cin / max(c.g.Groups, 1)}
	c.ys = []int{n, cout}
	maxIn := []int{0, 7, 5, 4}[r]
	for j := 0; j < r; j++ {
		k := rapid.IntRange(1, 3).Draw(t, "k")
		st := rapid.IntRange(1, 2).Draw(t, "stride")
		d := rapid.IntRange(1, 2).Draw(t, "dilation")
		lo := rapid.IntRange(0, 2).Draw(t, "pad lo")
		hi := rapid.IntRange(0, 2).Draw(t, "pad hi")
		span := d*(k-1) + 1
		s := rapid.IntRange(max(1, span-lo-hi), max(1, span-lo-hi, maxIn)).Draw(t, "size")
		c.g.Stride = append(c.g.Stride, st)
		c.g.Dilation = append(c.g.Dilation, d)
		c.g.PadLo = append(c.g.PadLo, lo)
		c.g.PadHi = append(c.g.PadHi, hi)
		c.xs = append(c.xs, s)
		c.ws = append(c.ws, k)
		c.ys = append(c.ys, (s+lo+hi-span)/st+1)
	}
	return c
}

// dyadicSmall draws n multiples of 1/8 in [−1, 1].
func dyadicSmall(t *rapid.T, n int, label string) []float32 { return rsDyadicUpTo(t, n, 1, label) }

func dot64(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// TestConvExactAdjoint checks ⟨conv(x,w), u⟩ = ⟨x, convT(u,w)⟩ =
// ⟨w, convFilter(x,u)⟩ with == on dyadic inputs (multiples of 1/8 in
// [−1, 1]: every product and partial sum is exact in float32).
func TestConvExactAdjoint(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { checkConvAdjoint(rt, drawConv(rt)) })
}

// TestConvExactAdjointGemm repeats the adjoint check on fixed geometries
// large enough (Cin/groups·prod(k) ≥ 32) to take the im2col + GEMM path.
func TestConvExactAdjointGemm(t *testing.T) {
	cases := []convCase{
		{ad.ConvGeom{Stride: []int{2}, PadLo: []int{1}, PadHi: []int{0, 2}}, []int{2, 8, 7, 6}, []int{3, 8, 3, 3}, []int{2, 3, 3, 4}},
		{ad.ConvGeom{Groups: 2, Dilation: []int{1, 2, 1}, PadLo: []int{1}, PadHi: []int{1}}, []int{1, 4, 4, 5, 4}, []int{4, 2, 2, 3, 3}, []int{1, 4, 5, 3, 4}},
		{ad.ConvGeom{Groups: 3}, []int{2, 3, 6, 6, 6}, []int{3, 1, 3, 3, 4}, []int{2, 3, 4, 4, 3}},
		{ad.ConvGeom{Stride: []int{2}, Dilation: []int{2}, PadLo: []int{2}, PadHi: []int{0}}, []int{1, 40, 9}, []int{2, 40, 2}, []int{1, 2, 5}},
	}
	for _, c := range cases {
		rapid.Check(t, func(rt *rapid.T) { checkConvAdjoint(rt, c) })
	}
}

func checkConvAdjoint(rt *rapid.T, c convCase) {
	x := dyadicSmall(rt, rsSize(c.xs), "x")
	w := dyadicSmall(rt, rsSize(c.ws), "w")
	u := dyadicSmall(rt, rsSize(c.ys), "u")
	tp := ad.NewTape()
	xv := tp.Const(flat.Tensor{Shape: c.xs, Data: x})
	wv := tp.Const(flat.Tensor{Shape: c.ws, Data: w})
	uv := tp.Const(flat.Tensor{Shape: c.ys, Data: u})
	y := ad.Conv(xv, wv, c.g)
	dx := ad.ConvTranspose(uv, wv, c.g, c.xs...)
	dw := ad.ConvFilter(xv, uv, c.g, c.ws...)
	if err := tp.Err(); err != nil {
		rt.Fatalf("%+v: %v", c, err)
	}
	if !slices.Equal(y.Shape(), c.ys) || !slices.Equal(dx.Shape(), c.xs) || !slices.Equal(dw.Shape(), c.ws) {
		rt.Fatalf("shapes %v %v %v, want %v %v %v", y.Shape(), dx.Shape(), dw.Shape(), c.ys, c.xs, c.ws)
	}
	a, b, d := dot64(y.Data(), u), dot64(x, dx.Data()), dot64(w, dw.Data())
	if a != b || a != d {
		rt.Fatalf("⟨conv(x,w),u⟩ = %v, ⟨x,convT(u,w)⟩ = %v, ⟨w,convFilter(x,u)⟩ = %v", a, b, d)
	}
}

// convFuncs are the three ops as functions of one flat vector holding both
// of their arguments, with the shapes of the two arguments.
func convFuncs(c convCase) []struct {
	name   string
	s0, s1 []int
	f      func(p ad.Var) ad.Var
} {
	split := func(s0, s1 []int, op func(a, b ad.Var) ad.Var) func(p ad.Var) ad.Var {
		return func(p ad.Var) ad.Var {
			return op(ad.View(p, 0, s0...), ad.View(p, rsSize(s0), s1...))
		}
	}
	return []struct {
		name   string
		s0, s1 []int
		f      func(p ad.Var) ad.Var
	}{
		{"Conv", c.xs, c.ws, split(c.xs, c.ws, func(a, b ad.Var) ad.Var { return ad.Conv(a, b, c.g) })},
		{"ConvTranspose", c.ys, c.ws, split(c.ys, c.ws, func(a, b ad.Var) ad.Var { return ad.ConvTranspose(a, b, c.g, c.xs...) })},
		{"ConvFilter", c.xs, c.ys, split(c.xs, c.ys, func(a, b ad.Var) ad.Var { return ad.ConvFilter(a, b, c.g, c.ws...) })},
	}
}

// TestConvDerivatives checks, for each op of the family on random
// geometry: the transpose identity of its JVP and VJP exactly, the gradient
// against finite differences, and the HVP of Σ tanh(op) forward-over-reverse
// against reverse-over-reverse and finite differences.
func TestConvDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConv(rt)
		for _, op := range convFuncs(c) {
			n := rsSize(op.s0) + rsSize(op.s1)
			rsCheckTranspose(rt, op.f, dyadicSmall(rt, n, op.name+" θ"), true)
			θ := rsSmooth(rt, n, -0.7, 0.7, op.name+" θ")
			rsCheckGrad(rt, op.f, θ, 3e-3)
			loss := func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(op.f(p))) }
			rsCheckHVP(rt, loss, θ, 3e-3)
		}
	})
}

// TestConvValues checks small cases by hand.
func TestConvValues(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Const(flat.Tensor{Shape: []int{1, 1, 4}, Data: []float32{1, 2, 3, 4}})
	w := tp.Const(flat.Tensor{Shape: []int{1, 1, 2}, Data: []float32{1, 10}})
	y := ad.Conv(x, w, ad.ConvGeom{PadLo: []int{1}, PadHi: []int{0}, Stride: []int{2}})
	// padded: 0 1 2 3 4 → taps at 0, 2: 0+10, 2+30
	if got, want := y.Data(), []float32{10, 32}; !slices.Equal(got, want) {
		t.Errorf("Conv = %v, want %v", got, want)
	}
	d := ad.ConvTranspose(y, w, ad.ConvGeom{PadLo: []int{1}, PadHi: []int{0}, Stride: []int{2}}, 1, 1, 4)
	// x̄[i] = Σ_o y[o] w[i+1−2o]: x̄0 = 10·10, x̄1 = 32·1, x̄2 = 32·10, x̄3 = 0
	if got, want := d.Data(), []float32{100, 32, 320, 0}; !slices.Equal(got, want) {
		t.Errorf("ConvTranspose = %v, want %v", got, want)
	}
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestConvShapeErrors checks that bad shapes and geometry are sticky tape
// errors naming what was expected and what came.
func TestConvShapeErrors(t *testing.T) {
	checkTapeErrs(t, []tapeErrCase{
		{"channels", func(tp *ad.Tape) ad.Var {
			return ad.Conv(tp.Full(0, 1, 3, 5, 5), tp.Full(0, 2, 2, 3, 3), ad.ConvGeom{})
		}, []string{"Conv", "want 3 input channels", "got 2"}},
		{"rank", func(tp *ad.Tape) ad.Var {
			return ad.Conv(tp.Full(0, 1, 3, 5, 5), tp.Full(0, 2, 3, 3), ad.ConvGeom{})
		}, []string{"filter shape [2 3 3] has rank 3, want 4"}},
		{"kernel too big", func(tp *ad.Tape) ad.Var {
			return ad.Conv(tp.Full(0, 1, 1, 2), tp.Full(0, 1, 1, 3), ad.ConvGeom{})
		}, []string{"smaller than the dilated kernel 3"}},
		{"geometry length", func(tp *ad.Tape) ad.Var {
			return ad.Conv(tp.Full(0, 1, 1, 5, 5), tp.Full(0, 1, 1, 3, 3), ad.ConvGeom{Stride: []int{1, 2, 3}})
		}, []string{"Stride has 3 values", "want 1 or 2"}},
		{"groups", func(tp *ad.Tape) ad.Var {
			return ad.Conv(tp.Full(0, 1, 3, 5), tp.Full(0, 2, 1, 3), ad.ConvGeom{Groups: 2})
		}, []string{"groups = 2 must divide Cin = 3"}},
		{"transpose input", func(tp *ad.Tape) ad.Var {
			return ad.ConvTranspose(tp.Full(0, 1, 2, 4), tp.Full(0, 2, 1, 3), ad.ConvGeom{}, 1, 1, 5)
		}, []string{"ConvTranspose", "input shape [1 2 4]", "want [1 2 3]"}},
		{"filter cotangent", func(tp *ad.Tape) ad.Var {
			return ad.ConvFilter(tp.Full(0, 1, 1, 5), tp.Full(0, 1, 2, 3), ad.ConvGeom{}, 2, 1, 2)
		}, []string{"ConvFilter", "[1 2 3]", "want [1 2 4]"}},
	})
}

// TestConvHVPThroughChain checks forward-over-reverse against
// reverse-over-reverse on Σ tanh(conv(tanh(conv(x, w1)), w2)) with respect
// to all of x, w1 and w2, 2-D with stride, padding and groups.
func TestConvHVPThroughChain(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g1 := ad.ConvGeom{PadLo: []int{1}, PadHi: []int{1}, Stride: []int{1, 2}}
		g2 := ad.ConvGeom{Groups: 2, Dilation: []int{2}, PadLo: []int{2, 0}, PadHi: []int{0}}
		xs, w1s, w2s := []int{2, 2, 5, 6}, []int{4, 2, 3, 3}, []int{2, 2, 2, 2}
		nx, n1 := rsSize(xs), rsSize(w1s)
		f := func(p ad.Var) ad.Var {
			x := ad.View(p, 0, xs...)
			w1 := ad.View(p, nx, w1s...)
			w2 := ad.View(p, nx+n1, w2s...)
			return ad.Sum(ad.Tanh(ad.Conv(ad.Tanh(ad.Conv(x, w1, g1)), w2, g2)))
		}
		θ := rsSmooth(rt, nx+n1+rsSize(w2s), -0.5, 0.5, "θ")
		rsCheckHVP(rt, f, θ, 3e-3)
	})
}

// TestConvStepAllocatesNothing pins a reused tape's gradient and HVP steps
// through Conv at zero allocations, on the direct and the GEMM paths.
func TestConvStepAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	for _, c := range []struct {
		name   string
		g      ad.ConvGeom
		xs, ws []int
	}{
		{"direct", ad.ConvGeom{PadLo: []int{1}, PadHi: []int{1}, Stride: []int{2}}, []int{2, 2, 6, 6}, []int{3, 2, 3, 3}},
		{"gemm", ad.ConvGeom{PadLo: []int{1}, PadHi: []int{1}, Groups: 2}, []int{2, 8, 6, 6}, []int{4, 4, 3, 3}},
	} {
		nx := rsSize(c.xs)
		θ, dir := stepPoint(nx + rsSize(c.ws))
		loss := func(p ad.Var) ad.Var {
			x, w := ad.View(p, 0, c.xs...), ad.View(p, nx, c.ws...)
			return ad.Sum(ad.Tanh(ad.Conv(x, w, c.g)))
		}
		t.Run(c.name, func(t *testing.T) { pinStepAllocs(t, 20, θ, dir, loss) })
	}
}
