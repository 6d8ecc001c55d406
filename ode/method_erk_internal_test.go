package ode

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestCombineBits checks every path of erk.combine (n = 2, the unrolled
// rows of 1…7 terms, the pairwise loop of longer rows, odd n, the leading
// components of longer stages) against the
// sum written out in the order of the row, bit for bit, on the rows of
// every explicit tableau: the discrete adjoint and the replays of
// checkpointed segments rely on the same bits whichever path runs.
func TestCombineBits(t *testing.T) {
	tabs := []*tableau{tsit5Method.tab, DP5().(*erkMethod).tab, BS3().(*erkMethod).tab, Vern7().(*erkMethod).tab, RK4().(*erkMethod).tab}
	rapid.Check(t, func(rt *rapid.T) {
		tb := tabs[rapid.IntRange(0, len(tabs)-1).Draw(rt, "tableau")]
		n := rapid.IntRange(1, 21).Draw(rt, "n") // the vector kernel's blocks of 8, 4, 2 and 1
		e := newERK[float64](tb, n, true)
		for i := range e.k {
			e.k[i] = rapid.Float64Range(-10, 10).Draw(rt, "k")
		}
		u := make([]float64, n)
		for i := range u {
			u[i] = rapid.Float64Range(-10, 10).Draw(rt, "u")
		}
		h := rapid.Float64Range(-1, 1).Draw(rt, "h")
		// The leading components only, as for the stage inputs of a
		// system with quadratures (the stages stay n apart).
		nd := rapid.IntRange(1, n).Draw(rt, "leading")
		rows := append(append([]sparseRow[float64]{e.errRow}, e.rows[1:]...), e.interp...)
		dst := make([]float64, nd)
		for r := range rows {
			row := &rows[r]
			e.combine(dst, u, h, row)
			for j := 0; j < nd; j++ {
				var a float64
				for m, o := range row.off {
					a += row.val[m] * e.k[o+j]
				}
				if want := u[j] + h*a; dst[j] != want {
					rt.Fatalf("%s row %d (%d terms), n = %d, component %d: %v, want %v", tb.name, r, len(row.off), n, j, dst[j], want)
				}
			}
		}
	})
}

// dense24 (two components, Tsit5's and DP5's four interpolation rows) gives
// the bits of combine's row-by-row loop.
func TestDense24Bits(t *testing.T) {
	tabs := []*tableau{tsit5Method.tab, dp5Method.tab}
	rapid.Check(t, func(rt *rapid.T) {
		tb := tabs[rapid.IntRange(0, len(tabs)-1).Draw(rt, "tableau")]
		e := newERK[float64](tb, 2, true)
		if !e.interp4 {
			rt.Fatalf("%s: interp4 is false, want dense24 used", tb.name)
		}
		for i := range e.k {
			e.k[i] = rapid.Float64Range(-10, 10).Draw(rt, "k")
		}
		h := rapid.Float64Range(-1, 1).Draw(rt, "h")
		got := make([]float64, 8)
		e.dense24(got, h)
		want := make([]float64, 8)
		for j := range e.interp {
			e.combine(want[2*j:2*j+2], e.zero, h, &e.interp[j])
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				rt.Fatalf("%s coefficient %d: %v, want %v", tb.name, i, got[i], want[i])
			}
		}
	})
}
