package ad_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// rsPads draws (before, after) pairs of 0–2 for each axis of s.
func rsPads(t *rapid.T, s []int) []int {
	return rapid.SliceOfN(rapid.IntRange(0, 2), 2*len(s), 2*len(s)).Draw(t, "pads")
}

// rsCrops draws (before, after) pairs that leave at least one element of
// each axis of s.
func rsCrops(t *rapid.T, s []int) []int {
	c := make([]int, 2*len(s))
	for i, d := range s {
		c[2*i] = rapid.IntRange(0, d-1).Draw(t, "crop before")
		c[2*i+1] = rapid.IntRange(0, d-1-c[2*i]).Draw(t, "crop after")
	}
	return c
}

var rsShapeOps = []rsOp{
	{"Concat", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		axis := rsAxis(t, s)
		k := rapid.IntRange(1, 3).Draw(t, "copies")
		ops := rapid.SliceOfN(rapid.IntRange(0, 3), k, k).Draw(t, "piece ops")
		return func(x ad.Var) ad.Var {
			// Pieces of different lengths along axis: x itself, x cropped
			// to its first element, x padded by one (all linear in x), and
			// a constant (no tangent: the rules fill in zeros).
			ax := rsNorm(axis, len(s))
			parts := make([]ad.Var, k)
			for i, o := range ops {
				switch o {
				case 0:
					parts[i] = x
				case 1:
					parts[i] = ad.SliceAxis(x, axis, 0, 1)
				case 2:
					parts[i] = ad.PadAxis(x, ax, 1, 0)
				case 3:
					parts[i] = x.Tape().Full(0.5, s...)
				}
			}
			return ad.Concat(axis, parts...)
		}
	}},
	{"SliceAxis", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		axis := rsAxis(t, s)
		d := s[rsNorm(axis, len(s))]
		lo := rapid.IntRange(0, d).Draw(t, "lo")
		hi := rapid.IntRange(lo, d).Draw(t, "hi")
		return func(x ad.Var) ad.Var { return ad.SliceAxis(x, axis, lo, hi) }
	}},
	{"PadAxis", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		axis := rsAxis(t, s)
		b, a := rapid.IntRange(0, 3).Draw(t, "before"), rapid.IntRange(0, 3).Draw(t, "after")
		return func(x ad.Var) ad.Var { return ad.PadAxis(x, axis, b, a) }
	}},
	{"Pad", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		pads := rsPads(t, s)
		return func(x ad.Var) ad.Var { return ad.Pad(x, pads...) }
	}},
	{"Crop", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		crops := rsCrops(t, s)
		return func(x ad.Var) ad.Var { return ad.Crop(x, crops...) }
	}},
	{"Transpose", func(t *rapid.T, s []int) func(ad.Var) ad.Var {
		perm := rapid.Permutation(rsIota(len(s))).Draw(t, "perm")
		return func(x ad.Var) ad.Var { return ad.Transpose(x, perm...) }
	}},
}

// TestShapeOpProperties checks the copying shape ops: exact transposition
// with dyadic numbers, gradients by finite differences, and both
// second-order modes on a quadratic of them.
func TestShapeOpProperties(t *testing.T) { rsRunOps(t, rsShapeOps) }

// TestShapeOpValues compares Concat, Pad and Crop with index arithmetic.
func TestShapeOpValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rsShape(rt, "shape")
		axis := rsAxis(rt, s)
		ax := rsNorm(axis, len(s))
		s2 := slices.Clone(s)
		s2[ax] = rapid.IntRange(0, 4).Draw(rt, "second length")
		x := rsDyadic(rt, rsSize(s), "x")
		x2 := rsDyadic(rt, rsSize(s2), "x2")
		pads := rsPads(rt, s)
		tp := ad.NewTape()
		xv := tp.Const(flat.Tensor{Shape: s, Data: x})
		x2v := tp.Const(flat.Tensor{Shape: s2, Data: x2})
		cat := ad.Concat(axis, xv, x2v)
		padded := ad.Pad(xv, pads...)
		back := ad.Crop(padded, pads...)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}

		cs := slices.Clone(s)
		cs[ax] += s2[ax]
		if !slices.Equal(cat.Shape(), cs) {
			rt.Fatalf("Concat shape %v, want %v", cat.Shape(), cs)
		}
		for i, got := range cat.Data() {
			idx := rsUnravel(i, cs)
			var want float32
			if idx[ax] < s[ax] {
				want = x[rsRavel(idx, s)]
			} else {
				idx[ax] -= s[ax]
				want = x2[rsRavel(idx, s2)]
			}
			if got != want {
				rt.Fatalf("Concat[%d] = %v, want %v", i, got, want)
			}
		}

		ps := slices.Clone(s)
		for i := range ps {
			ps[i] += pads[2*i] + pads[2*i+1]
		}
		if !slices.Equal(padded.Shape(), ps) {
			rt.Fatalf("Pad shape %v, want %v", padded.Shape(), ps)
		}
		for i, got := range padded.Data() {
			idx := rsUnravel(i, ps)
			var want float32
			inside := true
			for j := range idx {
				idx[j] -= pads[2*j]
				inside = inside && idx[j] >= 0 && idx[j] < s[j]
			}
			if inside {
				want = x[rsRavel(idx, s)]
			}
			if got != want {
				rt.Fatalf("Pad[%d] = %v, want %v", i, got, want)
			}
		}
		if !slices.Equal(back.Shape(), s) || !slices.Equal(back.Data(), x) {
			rt.Fatalf("Crop(Pad(x)) = %v %v, want %v %v", back.Shape(), back.Data(), s, x)
		}
	})
}

func TestShapeOpsOnScalarsAndEmpty(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{5})
	s := ad.Reshape(p, []int{}...)
	y := ad.Pad(s)
	z := ad.Crop(y)
	e := ad.SliceAxis(ad.Reshape(p, 1, 1), 1, 1, 1) // (1, 0)
	c := ad.Concat(-1, e, ad.Reshape(p, 1, 1), e)   // (1, 1)
	pe := ad.PadAxis(e, 1, 1, 1)                    // (1, 2) of zeros
	g, err := tp.Grad(ad.Sum(ad.Add(ad.Add(z, ad.Sum(c)), ad.Sum(pe))))
	if err != nil {
		t.Fatal(err)
	}
	if z.Item() != 5 || !slices.Equal(c.Shape(), []int{1, 1}) || !slices.Equal(pe.Data(), []float32{0, 0}) {
		t.Errorf("Crop(Pad(scalar)) = %v, Concat shape %v, PadAxis of empty %v", z.Item(), c.Shape(), pe.Data())
	}
	if g[0] != 2 {
		t.Errorf("gradient %v, want [2]", g)
	}
}

func TestShapeOpErrors(t *testing.T) {
	x := flat.Tensor{Shape: []int{2, 3}, Data: make([]float32, 6)}
	y := flat.Tensor{Shape: []int{2, 4}, Data: make([]float32, 8)}
	for _, tc := range []struct {
		name  string
		op    func(x, y ad.Var) ad.Var
		frags []string
	}{
		{"Concat mismatch", func(x, y ad.Var) ad.Var { return ad.Concat(-2, x, y) },
			[]string{"Concat", "input 1", "[2 4]"}},
		{"Concat axis 1 mismatch", func(x, y ad.Var) ad.Var { return ad.Concat(1, ad.Transpose(x, 1, 0), y) },
			[]string{"Concat", "input 1", "[2 4]", "[3 2]", "axis 1"}},
		{"Concat axis", func(x, y ad.Var) ad.Var { return ad.Concat(2, x, y) },
			[]string{"Concat", "axis 2", "[2 3]", "want -2 ≤ axis < 2"}},
		{"SliceAxis range", func(x, _ ad.Var) ad.Var { return ad.SliceAxis(x, 1, 2, 4) },
			[]string{"SliceAxis", "[2, 4)", "≤ 3", "[2 3]"}},
		{"SliceAxis axis", func(x, _ ad.Var) ad.Var { return ad.SliceAxis(x, -3, 0, 1) },
			[]string{"SliceAxis", "axis -3", "[2 3]", "want -2 ≤ axis < 2"}},
		{"PadAxis negative", func(x, _ ad.Var) ad.Var { return ad.PadAxis(x, 0, -1, 0) },
			[]string{"Pad", "axis 0", "(-1, 0)", "≥ 0"}},
		{"PadAxis axis", func(x, _ ad.Var) ad.Var { return ad.PadAxis(x, 2, 1, 1) },
			[]string{"PadAxis", "axis 2", "[2 3]", "want -2 ≤ axis < 2"}},
		{"Pad count", func(x, _ ad.Var) ad.Var { return ad.Pad(x, 1, 1) },
			[]string{"Pad", "[1 1]", "[2 3]", "want 2 per axis, 4"}},
		{"Crop too much", func(x, _ ad.Var) ad.Var { return ad.Crop(x, 0, 0, 2, 2) },
			[]string{"Crop", "axis 1", "2+2 of 3 elements, want at most 3 in all"}},
		{"Transpose repeated axis", func(x, _ ad.Var) ad.Var { return ad.Transpose(x, 0, 0) },
			[]string{"Transpose", "[0 0]", "[2 3]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			wantOpErr(t, tp, tc.op(tp.Const(x), tp.Const(y)), tc.frags...)
		})
	}
}
