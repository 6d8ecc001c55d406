package odead_test

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/ode/odead"
)

// chainAD is a float64 reaction chain u_i → u_{i+1} with a second-order
// loss, written with ad ops: its Jacobian is lower bidiagonal plus the
// diagonal, n rows and 2 colours, so a replayed dense Jacobian is written
// by forward sweeps.
func chainAD(u, p ad.Var, _ float64) ad.Var {
	n := u.Size()
	k := ad.Convert(p, u.Precision())
	r := ad.Mul(k, ad.Square(u)) // r_i = k_i u_i²
	prev := make([]int, n)
	for i := range prev {
		prev[i] = max(i-1, 0)
	}
	in := ad.Mul(ad.Gather(r, prev, n), ad.Gather(ad.Concat(0, ad.FullLike(u, 0, 1), ad.FullLike(u, 1, n-1)), upTo(n), n))
	return ad.Sub(in, r)
}

// TestDenseJacByColours: the dense Jacobian of a replayed recording,
// written by forward sweeps seeded with colours, equals the one of n
// reverse sweeps (a recording made at every call) to rounding, with exact
// zeros off the pattern, and its replays equal its first call bit for bit.
func TestDenseJacByColours(t *testing.T) {
	const n = 9
	p := make([]float32, n)
	for i := range p {
		p[i] = float32(1 + i)
	}
	rep := odead.Derivs64(chainAD, n, odead.Replayable())
	rec := odead.Derivs64(chainAD, n)
	first := make([]float64, n*n)
	for call := range 4 {
		u := make([]float64, n)
		for i := range u {
			u[i] = 0.5 + math.Sin(float64(i+3*call))
		}
		got, want := make([]float64, n*n), make([]float64, n*n)
		for i := range got {
			got[i] = math.NaN() // every entry is written
		}
		rep.Jac(got, u, p, 0)
		rec.Jac(want, u, p, 0)
		for e := range got {
			if math.Abs(got[e]-want[e]) > 1e-15*math.Abs(want[e]) || (want[e] == 0) != (got[e] == 0) {
				t.Fatalf("call %d: J[%d,%d] = %v by colours, %v by reverse sweeps", call, e/n, e%n, got[e], want[e])
			}
		}
		if call == 0 {
			copy(first, got)
		}
	}
	// A replay at the first point gives the first call's bits.
	u := make([]float64, n)
	for i := range u {
		u[i] = 0.5 + math.Sin(float64(i))
	}
	again := make([]float64, n*n)
	rep.Jac(again, u, p, 0)
	if !bitwise.Equal(again, first) {
		t.Fatalf("replayed Jacobian %v, first call %v", again, first)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}
