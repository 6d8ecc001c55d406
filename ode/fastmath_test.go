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
		if d := math.Abs(log2Fast(x) - math.Log2(x)); d > 1e-9*max(1, math.Abs(math.Log2(x))) {
			t.Fatalf("log2Fast(%g) = %g, want %g", x, log2Fast(x), math.Log2(x))
		}
		y := rng.Float64()*200 - 100
		if r := math.Abs(exp2Fast(y)/math.Exp2(y) - 1); r > 1e-9 {
			t.Fatalf("exp2Fast(%g) = %g, want %g", y, exp2Fast(y), math.Exp2(y))
		}
	}
	for _, x := range []float64{1, 2, 0.5, math.Sqrt2, 1e-300, 1e300, math.Nextafter(1, 0), math.Nextafter(2, 0), math.MaxFloat64, 0x1p-1022} {
		if d := math.Abs(log2Fast(x) - math.Log2(x)); d > 1e-9 {
			t.Errorf("log2Fast(%g) = %g, want %g", x, log2Fast(x), math.Log2(x))
		}
	}
	for _, y := range []float64{0, 1, -1, 0.5, -0.5, 1.0 / 128, -1.0 / 128, 63.0 / 64, -63.0 / 64, 999.5, -999.5, 1e-20, -1e-20} {
		if r := math.Abs(exp2Fast(y)/math.Exp2(y) - 1); r > 1e-9 {
			t.Errorf("exp2Fast(%g) = %g, want %g", y, exp2Fast(y), math.Exp2(y))
		}
	}
	// Outside the fast paths: the math package's answers.
	for _, x := range []float64{0, -1, math.Inf(1), math.NaN(), 0x1p-1074} {
		if got, want := log2Fast(x), math.Log2(x); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("log2Fast(%g) = %g, want %g", x, got, want)
		}
	}
	for _, y := range []float64{-1000, 1000, math.Inf(-1), math.Inf(1)} {
		if got, want := exp2Fast(y), math.Exp2(y); got != want {
			t.Errorf("exp2Fast(%g) = %g, want %g", y, got, want)
		}
	}
}
