package ode

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFastLogExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		x := math.Exp(rng.Float64()*100 - 50)
		if d := math.Abs(log2Fast(x) - math.Log2(x)); d > 3e-6*max(1, math.Abs(math.Log2(x))) {
			t.Fatalf("log2Fast(%g) = %g, want %g", x, log2Fast(x), math.Log2(x))
		}
		y := rng.Float64()*200 - 100
		if r := math.Abs(exp2Fast(y)/math.Exp2(y) - 1); r > 5e-6 {
			t.Fatalf("exp2Fast(%g) = %g, want %g", y, exp2Fast(y), math.Exp2(y))
		}
	}
	for _, x := range []float64{1, 2, 0.5, math.Sqrt2, 1e-300, 1e300} {
		if d := math.Abs(log2Fast(x) - math.Log2(x)); d > 3e-6 {
			t.Errorf("log2Fast(%g) = %g, want %g", x, log2Fast(x), math.Log2(x))
		}
	}
}
