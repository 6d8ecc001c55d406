package ad_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

var rsSoftmaxOps = []rsOp{
	{"LogSumExp", rsAlongAxis(ad.LogSumExp)},
	{"Softmax", rsAlongAxis(ad.Softmax)},
	{"LogSoftmax", rsAlongAxis(ad.LogSoftmax)},
	{"Softmax of LogSumExp", rsThen(ad.LogSumExp, func(y ad.Var) ad.Var { return ad.Softmax(ad.Scale(y, 2), 0) })},
	{"LogSumExp of Max", rsThen(ad.Max, func(y ad.Var) ad.Var { return ad.LogSumExp(ad.Mul(y, y), -1) })},
	{"Max of Softmax", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		// Over the same axis: the softmax keeps the order of a line, so
		// its maximum has no tie.
		ax := rsAxis(t, s)
		return func(x ad.Var) ad.Var { return ad.Max(ad.Softmax(x, ax), ax) }
	}},
	{"Softmax of Max", rsThen(ad.Min, func(y ad.Var) ad.Var { return ad.Softmax(y, -1) })},
}

// rsThen is the op that reduces x along a drawn axis by first and applies
// then to the result, or squares the result where the reduction leaves a
// scalar (then wants an axis).
func rsThen(first func(x ad.Var, axis int) ad.Var, then func(ad.Var) ad.Var) func(t *rapid.T, s []int) func(ad.Var) ad.Var {
	return func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		ax := rsAxis(t, s)
		return func(x ad.Var) ad.Var {
			y := first(x, ax)
			if len(y.Shape()) == 0 {
				return ad.Mul(y, y)
			}
			return then(y)
		}
	}
}

// TestSoftmaxProperties checks the softmax family and its compositions
// with Max: gradients by finite differences, the transpose identity, and
// both second-order modes.
func TestSoftmaxProperties(t *testing.T) {
	rsEachOp(t, rsSoftmaxOps, func(rt *rapid.T, _ rsOp, s []int, f func(ad.Var) ad.Var) {
		// No ties along any axis, for the compositions with Max.
		θ := rsAxisDistinct(rt, s)
		rsCheckGrad(rt, f, θ, 5e-3)
		rsCheckTranspose(rt, f, θ, false)
		rsCheckHVP(rt, rsWeighted(rt, f, θ), θ, 5e-3)
	})
}

// rsLSE64 is the float64 reference of LogSumExp over one line.
func rsLSE64(x []float32, line []int) float64 {
	m := math.Inf(-1)
	for _, i := range line {
		m = math.Max(m, float64(x[i]))
	}
	s := 0.0
	for _, i := range line {
		s += math.Exp(float64(x[i]) - m)
	}
	return m + math.Log(s)
}

// TestSoftmaxValues compares the softmax family with float64 references,
// for inputs around ±100 (where a naive exp overflows or underflows float32)
// and around 0, and checks that Softmax sums to 1.
func TestSoftmaxValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rsShape(rt, "shape")
		axis := rsAxis(rt, s)
		ax := rsNorm(axis, len(s))
		shift := rapid.SampledFrom([]float32{-100, 0, 100}).Draw(rt, "shift")
		x := rsSmooth(rt, rsSize(s), shift-20, shift+20, "x")
		tp := ad.NewTape()
		xv := tp.Const(flat.Tensor{Shape: s, Data: x})
		lse, sm, lsm := ad.LogSumExp(xv, axis), ad.Softmax(xv, axis), ad.LogSoftmax(xv, axis)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		for o, line := range rsAlong(s, ax) {
			want := rsLSE64(x, line)
			// Softmax is exp(x − lse) with lse rounded to float32: its
			// relative error grows with |lse|.
			rel := 4 * 0x1p-23 * (1 + math.Abs(want))
			if got := float64(lse.Data()[o]); math.Abs(got-want) > 1e-6*math.Abs(want)+1e-6 {
				rt.Fatalf("LogSumExp[%d] = %v, want %v", o, got, want)
			}
			sum := 0.0
			for _, i := range line {
				p := math.Exp(float64(x[i]) - want)
				sum += float64(sm.Data()[i])
				if got := float64(sm.Data()[i]); math.Abs(got-p) > rel*p+1e-7 {
					rt.Fatalf("Softmax[%d] = %v, want %v", i, got, p)
				}
				if got, lp := float64(lsm.Data()[i]), float64(x[i])-want; math.Abs(got-lp) > 1e-6*math.Abs(float64(x[i]))+1e-5 {
					rt.Fatalf("LogSoftmax[%d] = %v, want %v", i, got, lp)
				}
			}
			if math.Abs(sum-1) > rel*float64(len(line)) {
				rt.Fatalf("Softmax along line %d sums to %v", o, sum)
			}
		}
	})
}

func TestLogSumExpExtremes(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		x    []float32
		want float64
	}{
		{"large", []float32{1e4, 1e4}, 1e4 + math.Ln2},
		{"very negative", []float32{-1e4, -1e4 - 1}, -1e4 + math.Log1p(math.Exp(-1))},
		{"minus infinity", []float32{-inf, 0}, 0},
		{"all minus infinity", []float32{-inf, -inf}, math.Inf(-1)},
		{"plus infinity", []float32{inf, 0}, math.Inf(1)},
		{"NaN", []float32{float32(math.NaN()), 0}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			got := float64(ad.LogSumExp(tp.Const(flat.Tensor{Shape: []int{2}, Data: tc.x}), 0).Item())
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && got != float64(float32(tc.want)) {
				t.Errorf("LogSumExp(%v) = %v, want %v", tc.x, got, float32(tc.want))
			}
		})
	}
}

func TestSoftmaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(ad.Var, int) ad.Var
	}{{"LogSumExp", ad.LogSumExp}, {"Softmax", ad.Softmax}, {"LogSoftmax", ad.LogSoftmax}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			x := tp.Const(flat.Tensor{Shape: []int{2, 3}, Data: make([]float32, 6)})
			wantOpErr(t, tp, tc.op(x, 2), "LogSumExp", "axis 2", "[2 3]", "want -2 ≤ axis < 2")
		})
	}
}

// TestNewOpsStepAllocatesNothing pins the steady state of a forward and
// gradient step through every op of these files at zero allocations.
func TestNewOpsStepAllocatesNothing(t *testing.T) {
	θ := make([]float32, 2*3*4)
	for i := range θ {
		θ[i] = float32((i*7)%24) * 0.1
	}
	idx := []int{5, 0, 23, 7, 7, 1}
	pinGradAllocs(t, 1, 50, θ, func(p ad.Var) ad.Var {
		x := ad.Reshape(p, 2, 3, 4)
		a := ad.Max(x, 1)                                           // (2, 4)
		b := ad.Min(x, -1)                                          // (2, 3)
		c := ad.Concat(-1, ad.SliceAxis(x, 2, 1, 3), x)             // (2, 3, 6)
		d := ad.Pad(ad.Crop(c, 0, 1, 1, 0, 0, 2), 1, 0, 0, 1, 2, 2) // (2, 3, 8)
		e := ad.Gather(p, idx, 2, 3)
		f := ad.ScatterAdd(e, idx, 24)
		g := ad.Softmax(d, -1)
		h := ad.LogSoftmax(x, 0)
		l := ad.Add(ad.Add(ad.Sum(ad.Mul(a, a)), ad.Sum(ad.Mul(b, b))), ad.Sum(ad.Mul(g, d)))
		l = ad.Add(l, ad.Add(ad.Sum(ad.Mul(f, f)), ad.Sum(ad.Mul(h, h))))
		return ad.Add(l, ad.Sum(ad.LogSumExp(ad.Transpose(x, 2, 0, 1), 1)))
	})
}
