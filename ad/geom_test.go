package ad_test

import (
	"slices"
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
