package vmath

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// refMaxPoolRows is MaxPoolRows's rule, window by window.
func refMaxPoolRows(x []float32, ld, rows, k, s, col0, n int, out []float32, arg []int, base int) {
	for j := range n {
		best, pos := float32(0), -1
		for r := range rows {
			for t := range k {
				i := r*ld + col0 + s*j + t
				if v := x[i]; pos < 0 || (v > best || v != v) && best == best {
					best, pos = v, i
				}
			}
		}
		out[j], arg[j] = best, base+pos
	}
}

// TestMaxPoolRows compares MaxPoolRows with the reference bit for bit on
// inputs full of ties (small integers, ±0), NaNs and infinities, for
// strides 1 and 2, 1 to 4 taps and rows, and 1 to 70 windows (whole
// blocks of sixteen and tails), with x ending at the last cell read.
func TestMaxPoolRows(t *testing.T) {
	if isa < cpu.AVX512 {
		t.Skip("no kernel on this machine: MaxPoolRows reports false")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0}
	for it := range 3000 {
		s, k, rows := 1+rng.IntN(2), 1+rng.IntN(4), 1+rng.IntN(4)
		n := 1 + rng.IntN(70)
		col0 := rng.IntN(3)
		ld := col0 + s*(n-1) + k + rng.IntN(5)
		x := make([]float32, (rows-1)*ld+col0+s*(n-1)+k)
		for i := range x {
			switch rng.IntN(12) {
			case 0:
				x[i] = specials[rng.IntN(len(specials))]
			default:
				x[i] = float32(rng.IntN(7) - 3)
			}
			if it%3 == 0 && rng.IntN(20) != 0 {
				x[i] = 0 // mostly ties
			}
		}
		base := rng.IntN(1000)
		got, gotArg := make([]float32, n+1), make([]int, n+1)
		want, wantArg := make([]float32, n+1), make([]int, n+1)
		got[n], want[n], gotArg[n], wantArg[n] = 7, 7, 7, 7 // must stay
		if !MaxPoolRows(x, ld, rows, k, s, col0, n, got, gotArg, base) {
			t.Fatal("MaxPoolRows did not run")
		}
		refMaxPoolRows(x, ld, rows, k, s, col0, n, want, wantArg, base)
		for j := range n + 1 {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) && !(got[j] != got[j] && want[j] != want[j]) || gotArg[j] != wantArg[j] {
				t.Fatalf("s %d k %d rows %d n %d col0 %d ld %d: window %d = %v at %d, want %v at %d",
					s, k, rows, n, col0, ld, j, got[j], gotArg[j], want[j], wantArg[j])
			}
		}
	}
}
