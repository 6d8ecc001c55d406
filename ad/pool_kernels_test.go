package ad_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
)

// refMaxPool2D is max-pooling of x (planes × h × w) by the documented rule,
// cell by cell: the first largest value of the window in row-major order,
// a NaN over any number, padded cells never winning. It returns the
// values and the winners' flat positions.
func refMaxPool2D(x []float32, planes, h, w, k1, k2, s1, s2, lo1, lo2, hi1, hi2 int) (out []float32, arg []int) {
	oh, ow := (h+lo1+hi1-k1)/s1+1, (w+lo2+hi2-k2)/s2+1
	for pl := range planes {
		for o1 := range oh {
			for o2 := range ow {
				best, pos := float32(0), -1
				for i1 := o1*s1 - lo1; i1 < o1*s1-lo1+k1; i1++ {
					for i2 := o2*s2 - lo2; i2 < o2*s2-lo2+k2; i2++ {
						if i1 < 0 || i1 >= h || i2 < 0 || i2 >= w {
							continue
						}
						j := (pl*h+i1)*w + i2
						if v := x[j]; pos < 0 || v > best || v != v && best == best {
							best, pos = v, j
						}
					}
				}
				out, arg = append(out, best), append(arg, pos)
			}
		}
	}
	return out, arg
}

// TestMaxPoolMatchesReference compares MaxPool's values and the cells its
// gradient reaches with refMaxPool2D, bit for bit, on inputs full of ties
// (small integers, ±0) and with NaNs and infinities, for kernels 1 to 4
// wide with strides and padding, on rows up to 40 wide (so that the
// 2-D kernel's blocks of sixteen windows and their tails are both met).
func TestMaxPoolMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k1, k2 := rapid.IntRange(1, 4).Draw(rt, "k1"), rapid.IntRange(1, 4).Draw(rt, "k2")
		s1, s2 := rapid.IntRange(1, 3).Draw(rt, "s1"), rapid.IntRange(1, 3).Draw(rt, "s2")
		lo1, lo2 := rapid.IntRange(0, k1-1).Draw(rt, "lo1"), rapid.IntRange(0, k2-1).Draw(rt, "lo2")
		hi1, hi2 := rapid.IntRange(0, k1-1).Draw(rt, "hi1"), rapid.IntRange(0, k2-1).Draw(rt, "hi2")
		h, w := rapid.IntRange(max(1, k1-lo1-hi1), 9).Draw(rt, "h"), rapid.IntRange(max(1, k2-lo2-hi2), 40).Draw(rt, "w")
		n, c := rapid.IntRange(1, 2).Draw(rt, "n"), rapid.IntRange(1, 3).Draw(rt, "c")
		specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0}
		x := make([]float32, n*c*h*w)
		for i := range x {
			if rapid.IntRange(0, 9).Draw(rt, "special?") == 0 {
				x[i] = specials[rapid.IntRange(0, len(specials)-1).Draw(rt, "special")]
			} else {
				x[i] = float32(rapid.IntRange(-3, 3).Draw(rt, "v"))
			}
		}
		g := ad.PoolGeom{Kernel: []int{k1, k2}, Stride: []int{s1, s2}, PadLo: []int{lo1, lo2}, PadHi: []int{hi1, hi2}}
		want, arg := refMaxPool2D(x, n*c, h, w, k1, k2, s1, s2, lo1, lo2, hi1, hi2)
		tp := ad.NewTape()
		xp := tp.Param(x)
		y := ad.MaxPool(ad.Reshape(xp, n, c, h, w), g)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		if i := firstBitDiff(y.Data(), want); i >= 0 || y.Size() != len(want) {
			rt.Fatalf("MaxPool = %v, want %v (first difference at %d)", y.Data(), want, i)
		}
		// Cotangent 2^k at output k: the gradient at each cell is the sum
		// of the powers of the outputs it won, exact in float32.
		u := make([]float32, len(want))
		wantG := make([]float32, len(x))
		for k := range u {
			u[k] = float32(math.Ldexp(1, k%20))
			wantG[arg[k]] += u[k]
		}
		wrt := []ad.Var{xp}
		got := make([]float32, len(x))
		if err := tp.AddVJP(y, u, wrt, [][]float32{got}); err != nil {
			rt.Fatal(err)
		}
		if i := firstBitDiff(got, wantG); i >= 0 {
			rt.Fatalf("gradient[%d] = %v, want %v", i, got[i], wantG[i])
		}
	})
}
