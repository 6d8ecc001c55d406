package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGMRESReorthogonalise gives modified Gram–Schmidt a vector that is
// v₀ plus 1e-15 of random noise. One pass leaves it orthogonal to v₀
// only to about ε/1e-14 relative to its new length; the second pass,
// which the cancellation triggers, restores orthogonality to rounding.
func TestGMRESReorthogonalise(t *testing.T) {
	n := 200
	rng := rand.New(rand.NewPCG(3, 4))
	g := NewGMRES[float64](n, 3)
	v0, v1 := g.v[0], g.v[1]
	for i := range v0 {
		v0[i] = rng.NormFloat64()
	}
	scaleTo(v0, v0, 1/math.Sqrt(dot(v0, v0)))
	for i := range v1 {
		v1[i] = v0[i] + 1e-15*rng.NormFloat64()
	}
	hc := make([]float64, 2)
	nrm2, h0 := normDot(v1, v0)
	hc[0] = h0
	nrm := g.orthogonalise(0, hc, nrm2)
	if got := math.Sqrt(dot(v1, v1)); math.Abs(got-nrm) > 1e-12*got {
		t.Fatalf("norm %g, want the vector's %g", nrm, got)
	}
	if c := math.Abs(dot(v0, v1)) / nrm; c > 1e-12 {
		t.Fatalf("cosine %g between v₀ and the orthogonalised vector, want ≤ 1e-12", c)
	}
	if math.Abs(hc[0]-1) > 1e-12 {
		t.Fatalf("projection %g, want 1", hc[0])
	}
}
