package ad_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// rsIndexOps draw an index op for an input of shape s: random indices,
// with repeats, for a random output shape.
var rsIndexOps = []rsOp{
	{"Gather", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		out := rsShape(t, "out shape")
		idx := rapid.SliceOfN(rapid.IntRange(0, rsSize(s)-1), rsSize(out), rsSize(out)).Draw(t, "idx")
		return func(x ad.Var) ad.Var { return ad.Gather(x, idx, out...) }
	}},
	{"ScatterAdd", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		out := rsShape(t, "out shape")
		idx := rapid.SliceOfN(rapid.IntRange(0, rsSize(out)-1), rsSize(s), rsSize(s)).Draw(t, "idx")
		return func(x ad.Var) ad.Var { return ad.ScatterAdd(x, idx, out...) }
	}},
	{"ScatterAdd of Gather", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		n := rsSize(s)
		idx := rapid.SliceOfN(rapid.IntRange(0, n-1), n, n).Draw(t, "idx")
		return func(x ad.Var) ad.Var { return ad.ScatterAdd(ad.Gather(x, idx, n), idx, s...) }
	}},
}

// TestIndexProperties checks Gather and ScatterAdd: exact transposition
// with dyadic numbers, gradients by finite differences, and second order
// on a quadratic built from them.
func TestIndexProperties(t *testing.T) { rsRunOps(t, rsIndexOps) }

// rsRunOps checks every op of a table as a rapid property: the transpose
// identity exactly on dyadic inputs, the gradient against finite
// differences, and the HVP both ways.
func rsRunOps(t *testing.T, ops []rsOp) {
	rsEachOp(t, ops, func(rt *rapid.T, _ rsOp, s []int, f func(ad.Var) ad.Var) {
		rsCheckTranspose(rt, f, rsDyadic(rt, rsSize(s), "θ"), true)
		θ := rsSmooth(rt, rsSize(s), -2, 2, "θ")
		rsCheckGrad(rt, f, θ, 3e-3)
		sq := func(p ad.Var) ad.Var { y := f(p); return ad.Mul(y, y) }
		rsCheckHVP(rt, rsWeighted(rt, sq, θ), θ, 3e-3)
	})
}

// TestGatherScatterValues compares both ops with direct loops.
func TestGatherScatterValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s, out := rsShape(rt, "in shape"), rsShape(rt, "out shape")
		x := rsDyadic(rt, rsSize(s), "x")
		gi := rapid.SliceOfN(rapid.IntRange(0, rsSize(s)-1), rsSize(out), rsSize(out)).Draw(rt, "gather idx")
		si := rapid.SliceOfN(rapid.IntRange(0, rsSize(out)-1), rsSize(s), rsSize(s)).Draw(rt, "scatter idx")
		tp := ad.NewTape()
		xv := tp.Const(flat.Tensor{Shape: s, Data: x})
		g := ad.Gather(xv, gi, out...)
		sc := ad.ScatterAdd(xv, si, out...)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		if !slices.Equal(g.Shape(), out) || !slices.Equal(sc.Shape(), out) {
			rt.Fatalf("shapes %v and %v, want %v", g.Shape(), sc.Shape(), out)
		}
		wantG := make([]float32, rsSize(out))
		for i, j := range gi {
			wantG[i] = x[j]
		}
		wantS := make([]float32, rsSize(out))
		for i, j := range si {
			wantS[j] += x[i]
		}
		if !slices.Equal(g.Data(), wantG) {
			rt.Fatalf("Gather %v, want %v", g.Data(), wantG)
		}
		if !slices.Equal(sc.Data(), wantS) {
			rt.Fatalf("ScatterAdd %v, want %v", sc.Data(), wantS)
		}
	})
}

func TestIndexErrors(t *testing.T) {
	x := flat.Tensor{Shape: []int{2, 3}, Data: make([]float32, 6)}
	for _, tc := range []struct {
		name  string
		op    func(ad.Var) ad.Var
		frags []string
	}{
		{"Gather index too large", func(v ad.Var) ad.Var { return ad.Gather(v, []int{0, 6}, 2) },
			[]string{"Gather", "index 6", "[0, 6)", "[2 3]"}},
		{"Gather negative index", func(v ad.Var) ad.Var { return ad.Gather(v, []int{-1}, 1) },
			[]string{"Gather", "index -1", "[0, 6)"}},
		{"Gather count", func(v ad.Var) ad.Var { return ad.Gather(v, []int{0, 1, 2}, 2, 2) },
			[]string{"Gather", "3 indices", "[2 2]", "want 4"}},
		{"Gather negative dimension", func(v ad.Var) ad.Var { return ad.Gather(v, nil, -1) },
			[]string{"Gather", "dimension 0 of shape [-1] is -1, want ≥ 0"}},
		{"ScatterAdd index too large", func(v ad.Var) ad.Var { return ad.ScatterAdd(v, []int{0, 1, 2, 3, 4, 5}, 5) },
			[]string{"ScatterAdd", "index 5", "[0, 5)", "[5]"}},
		{"ScatterAdd count", func(v ad.Var) ad.Var { return ad.ScatterAdd(v, []int{0}, 5) },
			[]string{"ScatterAdd", "1 indices", "[2 3]", "want 6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			wantOpErr(t, tp, tc.op(tp.Const(x)), tc.frags...)
		})
	}
}

// TestIndexOpsCopyTheirIndices checks that the caller may reuse its index
// slice after the op is recorded, before the backward sweep.
func TestIndexOpsCopyTheirIndices(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{1, 2, 3, 4})
	idx := []int{3, 3, 0}
	y := ad.Gather(p, idx, 3)
	idx[0], idx[1], idx[2] = 1, 1, 1
	g, err := tp.Grad(ad.Sum(y))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 0, 0, 2}; !slices.Equal(g, want) {
		t.Errorf("gradient %v, want %v", g, want)
	}
	if want := []float32{4, 4, 1}; !slices.Equal(y.Data(), want) {
		t.Errorf("value %v, want %v", y.Data(), want)
	}
}

// BenchmarkGatherScatter is the max-pooling pattern: gather 2×2 window
// maxima of a 64×64 map by index and scatter the cotangent back.
func BenchmarkGatherScatter(b *testing.B) {
	const n = 64
	x := make([]float32, n*n)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	idx := make([]int, n*n/4)
	for i := range idx {
		r, c := i/(n/2), i%(n/2)
		idx[i] = 2*r*n + 2*c + (i % 2)
	}
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		p := tp.Param(x)
		y := ad.Gather(p, idx, n/2, n/2)
		if _, err := tp.Grad(ad.Sum(ad.Mul(y, y))); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
}
