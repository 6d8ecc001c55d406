package stiffprob

import (
	"hash/fnv"
	"math"
	"testing"
)

// TestBruss1DBits pins Bruss1D's F and Jacobians bit for bit (a hash of
// their values at fixed states, float64 and float32), so that bench
// stiff's counts and errors cannot move when its code is shared with
// Bruss1DParams. The hashes were taken before that change.
func TestBruss1DBits(t *testing.T) {
	if got, want := bruss1DBits[float64](), uint64(bruss1DBits64); got != want {
		t.Errorf("float64: hash %#x, want %#x", got, want)
	}
	if got, want := bruss1DBits[float32](), uint64(bruss1DBits32); got != want {
		t.Errorf("float32: hash %#x, want %#x", got, want)
	}
}

const bruss1DBits64, bruss1DBits32 = 0xf0e144550e12763d, 0xc7c2bd738905316c

func bruss1DBits[T Float]() uint64 {
	h := fnv.New64a()
	put := func(x []T) {
		for _, v := range x {
			b := math.Float64bits(float64(v))
			for k := 0; k < 8; k++ {
				h.Write([]byte{byte(b >> (8 * k))})
			}
		}
	}
	for _, n := range []int{1, 2, 7, 31} {
		b := NewBruss1D[T](n)
		d := 2 * n
		u := b.U0()
		for i := range u {
			u[i] += T(0.37 * math.Sin(float64(3*i+n)))
		}
		w := make([]T, d*d+5*d)
		b.F(w[:d], u, nil, 0)
		put(w[:d])
		b.Jac(w, u, nil, 0)
		put(w[:d*d])
		b.JacBand(w, u, nil, 0)
		put(w[:5*d])
		b.JacSparse(w, u, nil, 0)
		put(w[:b.Pattern().NNZ()])
	}
	return h.Sum64()
}
