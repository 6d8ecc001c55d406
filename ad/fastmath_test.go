package ad

import (
	"math"
	"testing"
)

func TestTanh32(t *testing.T) {
	worst := 0.0
	for i := -200000; i <= 200000; i++ {
		x := float32(i) * 1e-4 // [-20, 20]
		got := float64(tanh32(x))
		want := math.Tanh(float64(x))
		// Error in units of float32 spacing at the true value, with an
		// absolute floor for tiny results.
		ulp := math.Max(math.Abs(want)*(1.0/(1<<23)), 1e-12)
		if e := math.Abs(got-want) / ulp; e > worst {
			worst = e
		}
	}
	if worst > 4 {
		t.Errorf("tanh32 is off by up to %.1f float32 ulps", worst)
	}
	t.Logf("tanh32: worst error %.2f ulps", worst)
	if v := tanh32(float32(math.NaN())); v == v {
		t.Error("tanh32(NaN) is not NaN")
	}
	if tanh32(float32(math.Inf(1))) != 1 || tanh32(float32(math.Inf(-1))) != -1 {
		t.Error("tanh32(±Inf) is not ±1")
	}
}
