package ad_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// TestConvAndPoolGeomAgree checks that ConvGeom and PoolGeom read their
// per-axis fields by one rule: an empty field is the default, a single
// value is every axis, and an empty PadHi repeats PadLo. Each pair of
// geometries must give the same values bit for bit.
func TestConvAndPoolGeomAgree(t *testing.T) {
	data := make([]float32, 2*3*5*6)
	for i := range data {
		data[i] = float32((i*29)%31)/8 - 2
	}
	wData := make([]float32, 4*3*3*2)
	for i := range wData {
		wData[i] = float32((i*13)%17)/8 - 1
	}
	run := func(f func(x, w ad.Var) ad.Var) []float32 {
		tp := ad.NewTape()
		x := tp.Const(flat.Tensor{Shape: []int{2, 3, 5, 6}, Data: data})
		w := tp.Const(flat.Tensor{Shape: []int{4, 3, 3, 2}, Data: wData})
		y := f(x, w)
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(y.Data())
	}
	for _, tc := range []struct {
		name string
		a, b func(x, w ad.Var) ad.Var
	}{
		{"Conv PadHi empty = PadLo",
			func(x, w ad.Var) ad.Var { return ad.Conv(x, w, ad.ConvGeom{PadLo: []int{1, 2}}) },
			func(x, w ad.Var) ad.Var { return ad.Conv(x, w, ad.ConvGeom{PadLo: []int{1, 2}, PadHi: []int{1, 2}}) }},
		{"Conv single values",
			func(x, w ad.Var) ad.Var {
				return ad.Conv(x, w, ad.ConvGeom{Stride: []int{2}, PadLo: []int{1}, Dilation: []int{2}})
			},
			func(x, w ad.Var) ad.Var {
				return ad.Conv(x, w, ad.ConvGeom{Stride: []int{2, 2}, PadLo: []int{1, 1}, PadHi: []int{1, 1}, Dilation: []int{2, 2}})
			}},
		{"MaxPool single values",
			func(x, _ ad.Var) ad.Var {
				return ad.MaxPool(x, ad.PoolGeom{Kernel: []int{3, 2}, Stride: []int{1}, PadLo: []int{1}})
			},
			func(x, _ ad.Var) ad.Var {
				return ad.MaxPool(x, ad.PoolGeom{Kernel: []int{3, 2}, Stride: []int{1, 1}, PadLo: []int{1, 1}, PadHi: []int{1, 1}})
			}},
		{"MeanPool empty fields are the defaults",
			func(x, _ ad.Var) ad.Var {
				return ad.MeanPool(x, ad.PoolGeom{Kernel: []int{2, 3}, Stride: []int{}, PadLo: []int{}, PadHi: []int{}})
			},
			func(x, _ ad.Var) ad.Var { return ad.MeanPool(x, ad.PoolGeom{Kernel: []int{2, 3}, Stride: []int{2, 3}}) }},
		{"MeanPool PadHi given apart",
			func(x, _ ad.Var) ad.Var {
				return ad.MeanPool(x, ad.PoolGeom{Kernel: []int{3, 3}, PadLo: []int{1}, PadHi: []int{0}})
			},
			func(x, _ ad.Var) ad.Var {
				return ad.MeanPool(x, ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{3, 3}, PadLo: []int{1, 1}, PadHi: []int{0, 0}})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := run(tc.a), run(tc.b); !slices.Equal(a, b) {
				t.Errorf("the two geometries differ:\n%v\n%v", a, b)
			}
		})
	}
}

// TestConvAndPoolGeomPadding is the table of what an empty, a single and a
// per-axis padding mean, read the same way by ConvGeom and PoolGeom: the
// output sizes of a Conv and of a MaxPool and MeanPool with the same 3×3
// kernel, stride 1 and padding are those of the expected padding before
// and after each axis, and a field of the wrong length is an error naming
// it, in both.
func TestConvAndPoolGeomPadding(t *testing.T) {
	const h, w = 5, 6
	x := flat.Tensor{Shape: []int{1, 1, h, w}, Data: make([]float32, h*w)}
	k := flat.Tensor{Shape: []int{1, 1, 3, 3}, Data: make([]float32, 9)}
	for _, tc := range []struct {
		name         string
		padLo, padHi []int
		lo, hi       [2]int // the padding expected before and after each axis
		bad          string // the field named in the error, if one is wanted
	}{
		{name: "empty, empty: no padding", lo: [2]int{0, 0}, hi: [2]int{0, 0}},
		{name: "single, empty: every axis, both sides", padLo: []int{1}, lo: [2]int{1, 1}, hi: [2]int{1, 1}},
		{name: "per axis, empty: both sides", padLo: []int{2, 1}, lo: [2]int{2, 1}, hi: [2]int{2, 1}},
		{name: "single, single", padLo: []int{1}, padHi: []int{2}, lo: [2]int{1, 1}, hi: [2]int{2, 2}},
		{name: "per axis, per axis", padLo: []int{0, 2}, padHi: []int{1, 0}, lo: [2]int{0, 2}, hi: [2]int{1, 0}},
		{name: "empty, single: nothing before", padHi: []int{2}, lo: [2]int{0, 0}, hi: [2]int{2, 2}},
		{name: "per axis, single", padLo: []int{1, 0}, padHi: []int{2}, lo: [2]int{1, 0}, hi: [2]int{2, 2}},
		{name: "PadLo of 3 values", padLo: []int{1, 1, 1}, bad: "PadLo has 3 values"},
		{name: "PadHi of 3 values", padLo: []int{1}, padHi: []int{1, 1, 1}, bad: "PadHi has 3 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := []int{1, 1, h + tc.lo[0] + tc.hi[0] - 2, w + tc.lo[1] + tc.hi[1] - 2}
			pg := ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{1}, PadLo: tc.padLo, PadHi: tc.padHi}
			for _, op := range []struct {
				name, field string
				f           func(x, k ad.Var) ad.Var
			}{
				{"Conv", "ConvGeom.", func(x, k ad.Var) ad.Var { return ad.Conv(x, k, ad.ConvGeom{PadLo: tc.padLo, PadHi: tc.padHi}) }},
				{"MaxPool", "PoolGeom.", func(x, _ ad.Var) ad.Var { return ad.MaxPool(x, pg) }},
				{"MeanPool", "PoolGeom.", func(x, _ ad.Var) ad.Var { return ad.MeanPool(x, pg) }},
			} {
				tp := ad.NewTape()
				y := op.f(tp.Const(x), tp.Const(k))
				err := tp.Err()
				switch {
				case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), op.field+tc.bad)):
					t.Errorf("%s: error %v, want one containing %q", op.name, err, op.field+tc.bad)
				case tc.bad == "" && err != nil:
					t.Errorf("%s: %v", op.name, err)
				case tc.bad == "" && !slices.Equal(y.Shape(), want):
					t.Errorf("%s: output shape %v, want %v (padding %v before, %v after)", op.name, y.Shape(), want, tc.lo, tc.hi)
				}
			}
		})
	}
}
