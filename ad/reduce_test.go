package ad_test

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/proptest"
)

// The harness shared by reduce_test.go, index_test.go, shape_test.go and
// softmax_test.go. Its names start with rs so they stay clear of the other
// test files of the package.

// rsOp is one row of a property table: gen draws the op's parameters
// (axes, indices, pads) for an input of shape s and returns the op.
type rsOp struct {
	name string
	gen  func(t *rapid.T, s []int) func(x ad.Var) ad.Var
}

// rsShape draws a shape of rank 1–4 with dimensions 1–5.
func rsShape(t *rapid.T, label string) []int {
	r := rapid.IntRange(1, 4).Draw(t, label+" rank")
	return rapid.SliceOfN(rapid.IntRange(1, 5), r, r).Draw(t, label)
}

func rsSize(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// rsStrides returns the row-major strides of s.
func rsStrides(s []int) []int {
	st := make([]int, len(s))
	k := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = k
		k *= s[i]
	}
	return st
}

// rsUnravel returns the multi-index of flat position i in shape s.
func rsUnravel(i int, s []int) []int {
	idx := make([]int, len(s))
	for j := len(s) - 1; j >= 0; j-- {
		idx[j] = i % s[j]
		i /= s[j]
	}
	return idx
}

func rsRavel(idx, s []int) int {
	k := 0
	for j := range s {
		k = k*s[j] + idx[j]
	}
	return k
}

// rsAxisDistinct draws values for shape s with no tie along any axis:
// elements that differ in one coordinate differ by at least 0.27. Each
// axis j maps its coordinates injectively into 0..4, the sum of the images
// mod 5 picks a level 0.37 apart, and a jitter below 0.1 is added.
func rsAxisDistinct(t *rapid.T, s []int) []float32 {
	maps := make([][]int, len(s))
	for j, d := range s {
		maps[j] = rapid.Permutation([]int{0, 1, 2, 3, 4}).Draw(t, "axis map")[:d]
	}
	levels := rapid.Permutation([]int{0, 1, 2, 3, 4}).Draw(t, "levels")
	n := rsSize(s)
	jitter := rapid.SliceOfN(rapid.Float32Range(0, 0.099), n, n).Draw(t, "jitter")
	x := make([]float32, n)
	for i := range x {
		k := 0
		for j, c := range rsUnravel(i, s) {
			k += maps[j][c]
		}
		x[i] = 0.37*float32(levels[k%5]) - 0.74 + jitter[i]
	}
	return x
}

// rsDistinct draws n values no two of which are within 0.27: a random
// permutation of (i − n/2)·0.37, plus a jitter below 0.1.
func rsDistinct(t *rapid.T, n int) []float32 {
	perm := rapid.Permutation(rsIota(n)).Draw(t, "order")
	jitter := rapid.SliceOfN(rapid.Float32Range(0, 0.099), n, n).Draw(t, "jitter")
	x := make([]float32, n)
	for i, p := range perm {
		x[i] = 0.37*float32(p-n/2) + jitter[i]
	}
	return x
}

func rsIota(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// rsSmooth draws n values in [lo, hi].
func rsSmooth(t *rapid.T, n int, lo, hi float32, label string) []float32 {
	return rapid.SliceOfN(rapid.Float32Range(lo, hi), n, n).Draw(t, label)
}

// rsDyadic draws n multiples of 1/8 in [−8, 8]: sums and products of a few
// of them are exact in float32 and float64.
func rsDyadic(t *rapid.T, n int, label string) []float32 { return rsDyadicUpTo(t, n, 8, label) }

// rsDyadicUpTo draws n multiples of 1/8 in [−bound, bound].
func rsDyadicUpTo(t *rapid.T, n, bound int, label string) []float32 {
	k := rapid.SliceOfN(rapid.IntRange(-8*bound, 8*bound), n, n).Draw(t, label)
	x := make([]float32, n)
	for i, v := range k {
		x[i] = float32(v) / 8
	}
	return x
}

// rsOnInput turns an op of a Var of shape s into a function of the flat
// parameter vector.
func rsOnInput(s []int, op func(ad.Var) ad.Var) func(ad.Var) ad.Var {
	return func(p ad.Var) ad.Var { return op(ad.Reshape(p, s...)) }
}

// rsEval records f at θ on a fresh tape and returns its output.
func rsEval(t rapid.TB, f func(ad.Var) ad.Var, θ []float32) flat.Tensor {
	t.Helper()
	tp := ad.NewTape()
	y := f(tp.Param(θ))
	if err := tp.Err(); err != nil {
		t.Fatalf("forward: %v", err)
	}
	return flat.Tensor{Shape: slices.Clone(y.Shape()), Data: flat.Clone(y.Data())}
}

// rsWeighted returns the scalar Σ w ⊙ f(p), with w drawn once for f's
// output shape at θ.
func rsWeighted(t *rapid.T, f func(ad.Var) ad.Var, θ []float32) func(ad.Var) ad.Var {
	t.Helper()
	y := rsEval(t, f, θ)
	w := flat.Tensor{Shape: y.Shape, Data: rsSmooth(t, len(y.Data), -1, 1, "w")}
	return func(p ad.Var) ad.Var { return ad.Sum(ad.Mul(f(p), p.Tape().Const(w))) }
}

// The derivative checks are proptest's, with the steps and tolerances this
// harness used when it had checkers of its own.

// rsCheckGrad checks the reverse-mode gradient of Σ w ⊙ f at θ (w drawn)
// against central differences of step h: proptest.CheckGrad, along every
// coordinate for a θ of up to 16 values, else along 4 random directions.
func rsCheckGrad(t *rapid.T, f func(ad.Var) ad.Var, θ []float32, h float32) {
	t.Helper()
	proptest.CheckGrad(t, rsWeighted(t, f, θ), θ, proptest.Steps(h), proptest.Tol(1e-2, 2e-3))
}

// rsCheckTranspose checks ⟨J v, u⟩ = ⟨v, Jᵀ u⟩ for f at θ: exactly when
// exact is set (linear ops that copy, gather and add dyadic numbers, θ
// dyadic), else to a relative 1e-5 of the terms.
func rsCheckTranspose(t *rapid.T, f func(ad.Var) ad.Var, θ []float32, exact bool) {
	t.Helper()
	if exact {
		proptest.CheckTranspose(t, f, θ, proptest.Exact())
		return
	}
	proptest.CheckTranspose(t, f, θ, proptest.TransposeTol(1e-5, 1e-5))
}

// rsCheckHVP checks the second derivatives of the scalar loss at θ with
// proptest.CheckHVP (its gradient first, then forward-over-reverse against
// reverse-over-reverse and against central differences of the gradient,
// and the Hessian's symmetry). The differences take steps 3h, h and h/3, a
// direction passing at any: one step alone failed now and then on a
// float32 gradient summed in another order (ConvBias under -tags noasm,
// one draw in thousands), while a wrong rule is wrong at every step.
func rsCheckHVP(t *rapid.T, loss func(ad.Var) ad.Var, θ []float32, h float32) {
	t.Helper()
	proptest.CheckHVP(t, loss, θ, proptest.Steps(3*h, h, h/3))
}

// rsAlong returns, for each position of x's shape s reduced over axis ax,
// the flat indices of x along the axis.
func rsAlong(s []int, ax int) [][]int {
	out := make([][]int, 0, rsSize(s)/s[ax])
	for i := 0; i < rsSize(s); i++ {
		idx := rsUnravel(i, s)
		if idx[ax] != 0 {
			continue
		}
		var line []int
		for k := 0; k < s[ax]; k++ {
			idx[ax] = k
			line = append(line, rsRavel(idx, s))
		}
		out = append(out, line)
	}
	return out
}

// rsEachOp runs check on every op of a table as a rapid property, in a
// subtest named by the op: a shape s is drawn, then the op's function f of
// an input of that shape.
func rsEachOp(t *testing.T, ops []rsOp, check func(rt *rapid.T, op rsOp, s []int, f func(ad.Var) ad.Var)) {
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				s := rsShape(rt, "shape")
				check(rt, op, s, rsOnInput(s, op.gen(rt, s)))
			})
		})
	}
}

// rsAlongAxis is the row of an op over one drawn axis.
func rsAlongAxis(op func(x ad.Var, axis int) ad.Var) func(t *rapid.T, s []int) func(ad.Var) ad.Var {
	return func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		ax := rsAxis(t, s)
		return func(x ad.Var) ad.Var { return op(x, ax) }
	}
}

func rsAxis(t *rapid.T, s []int) int {
	return rapid.IntRange(-len(s), len(s)-1).Draw(t, "axis")
}

func rsNorm(ax, r int) int {
	if ax < 0 {
		return ax + r
	}
	return ax
}

var rsExtremaOps = []rsOp{
	{"Max", rsAlongAxis(ad.Max)},
	{"Min", rsAlongAxis(ad.Min)},
	{"Max of a product", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		ax := rsAxis(t, s)
		return func(x ad.Var) ad.Var { return ad.Max(ad.Mul(x, ad.Scale(x, 0.5)), ax) }
	}},
}

// TestExtremaProperties checks Max and Min by finite differences, the
// transpose identity (exactly: their derivatives gather and scatter) and
// the agreement of both second-order modes on Max².
func TestExtremaProperties(t *testing.T) {
	rsEachOp(t, rsExtremaOps, func(rt *rapid.T, op rsOp, s []int, f func(ad.Var) ad.Var) {
		θ := rsAxisDistinct(rt, s)
		if op.name == "Max of a product" {
			// x² has ties at ±x: keep every value positive.
			for i := range θ {
				θ[i] += 1
			}
		}
		rsCheckGrad(rt, f, θ, 1e-2)
		rsCheckTranspose(rt, f, θ, op.name != "Max of a product")
		sq := func(p ad.Var) ad.Var { y := f(p); return ad.Mul(y, y) }
		rsCheckHVP(rt, rsWeighted(rt, sq, θ), θ, 1e-2)
	})
}

// TestExtremaAgainstReference compares Max and Min, their argmax and their
// exact gradients with a direct float64 computation.
func TestExtremaAgainstReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rsShape(rt, "shape")
		ax := rsAxis(rt, s)
		θ := rsAxisDistinct(rt, s)
		w := rsDyadic(rt, rsSize(s)/s[rsNorm(ax, len(s))], "w")
		for _, isMin := range []bool{false, true} {
			op := ad.Max
			if isMin {
				op = ad.Min
			}
			tp := ad.NewTape()
			p := tp.Param(θ)
			y := op(ad.Reshape(p, s...), ax)
			wv := tp.Const(flat.Tensor{Shape: y.Shape(), Data: w})
			g, err := tp.Grad(ad.Sum(ad.Mul(y, wv)))
			if err != nil {
				rt.Fatal(err)
			}
			want := make([]float32, len(θ))
			for o, line := range rsAlong(s, rsNorm(ax, len(s))) {
				best := line[0]
				for _, i := range line {
					if isMin && θ[i] < θ[best] || !isMin && θ[i] > θ[best] {
						best = i
					}
				}
				if y.Data()[o] != θ[best] {
					rt.Fatalf("min=%v output %d = %v, want %v", isMin, o, y.Data()[o], θ[best])
				}
				want[best] += w[o]
			}
			if !slices.Equal(g, want) {
				rt.Fatalf("min=%v gradient %v, want %v", isMin, g, want)
			}
		}
	})
}

func TestExtremaTiesAndNaN(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{1, 3, 3, 2, float32(math.NaN()), 0})
	x := ad.Reshape(p, 2, 3)
	mx := ad.Max(x, 1)
	mn := ad.Min(x, -1)
	g, err := tp.Grad(ad.Sum(ad.Add(mx, mn)))
	if err != nil {
		t.Fatal(err)
	}
	if d := mx.Data(); d[0] != 3 || !math.IsNaN(float64(d[1])) {
		t.Errorf("Max = %v, want [3 NaN]", d)
	}
	if d := mn.Data(); d[0] != 1 || !math.IsNaN(float64(d[1])) {
		t.Errorf("Min = %v, want [1 NaN]", d)
	}
	// The first maximal element takes the derivative; NaN takes both.
	if want := []float32{1, 1, 0, 0, 2, 0}; !slices.Equal(g, want) {
		t.Errorf("gradient %v, want %v", g, want)
	}
}

func TestExtremaErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
		axis  int
		frags []string
	}{
		{"axis too large", []int{2, 3}, 2, []string{"Max", "axis 2", "[2 3]", "want -2 ≤ axis < 2"}},
		{"axis too negative", []int{2, 3}, -3, []string{"Max", "axis -3", "[2 3]", "want -2 ≤ axis < 2"}},
		{"scalar", []int{}, 0, []string{"Max", "axis 0", "[]"}},
		{"empty axis", []int{2, 0}, 1, []string{"Max", "axis 1", "[2 0]", "empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			x := tp.Const(flat.Tensor{Shape: tc.shape, Data: make([]float32, rsSize(tc.shape))})
			y := ad.Max(x, tc.axis)
			wantErr(t, tp.Err(), tc.frags...)
			// Sticky: later ops are no-ops reporting the same error.
			ad.Min(ad.Neg(y), 0)
			if _, err := tp.Grad(ad.Sum(y)); err != tp.Err() || err == nil {
				t.Errorf("Grad after the error: %v, tape holds %v", err, tp.Err())
			}
		})
	}
}
