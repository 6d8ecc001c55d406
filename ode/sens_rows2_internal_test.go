package ode

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// rowsProduct2 (rows2AVX where it runs) gives the bits of the pairs written
// out: (a·s0 + b·s1) + jp0_k, (c·s0 + d·s1) + jp1_k for the first np
// columns, without the J_p term after, for every column count and split
// (the kernel's two-column, one-column and J_p blocks).
func TestRowsProduct2Bits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(1, 13).Draw(rt, "m")
		np := rapid.IntRange(0, m).Draw(rt, "np")
		draw := func(n int, label string) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rapid.Float64Range(-10, 10).Draw(rt, label)
			}
			return v
		}
		ju, jp, S := draw(4, "ju"), draw(2*np, "jp"), draw(2*m, "S")
		got := make([]float64, 2*m)
		rowsProduct2(got, S, ju, jp, np)
		for k := range m {
			s0, s1 := S[2*k], S[2*k+1]
			w0, w1 := ju[0]*s0+ju[1]*s1, ju[2]*s0+ju[3]*s1
			if k < np {
				w0 += jp[k]
				w1 += jp[np+k]
			}
			if math.Float64bits(got[2*k]) != math.Float64bits(w0) || math.Float64bits(got[2*k+1]) != math.Float64bits(w1) {
				rt.Fatalf("m = %d, np = %d, column %d: (%v, %v), want (%v, %v)", m, np, k, got[2*k], got[2*k+1], w0, w1)
			}
		}
	})
}
