package ad_test

import (
	"runtime"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/race"
)

// TestManyOpTypesAllocateNothing pins steady-state steps that cycle through
// many primitive types at zero allocations over thousands of steps. The
// tape asks each primitive for its optional rules (Aliaser, VJPRule,
// JVPRule); written as plain interface assertions, each such site kept a
// per-site cache of types that the runtime grew now and then (about once
// per thousand misses), so a warm step allocated about once in a few dozen
// until every cache held every type: too rarely for a short pin to see.
func TestManyOpTypesAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts differ under -race")
	}
	θ, dir := stepPoint(12)
	loss := func(p ad.Var) ad.Var {
		a := ad.View(p, 0, 2, 3)
		b := ad.View(p, 6, 2, 3)
		y := ad.Add(ad.Tanh(a), ad.Sigmoid(b))
		y = ad.Mul(y, ad.Exp(ad.Sub(a, b)))
		y = ad.Div(y, ad.Add(ad.Square(b), ad.Softplus(a)))
		y = ad.Add(ad.Sin(y), ad.Cos(ad.Neg(y)))
		y = ad.Mul(ad.Swish(y), ad.Gelu(a))
		y = ad.Add(ad.Scale(y, 0.5), ad.Abs(ad.Sub(y, b)))
		y = ad.Transpose(ad.Reshape(y, 3, 2), 1, 0)
		return ad.Add(ad.Sum(ad.Max(y, 1)), ad.Mean(ad.Square(ad.Relu(y))))
	}
	tp := ad.NewTape()
	step := func() {
		p := tp.Param(θ)
		if _, err := tp.HVPOf(loss(p), p, dir); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}
	step()
	// testing.AllocsPerRun rounds the average down, which hides one
	// allocation in thousands of runs: count them all.
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 3000 {
		step()
	}
	runtime.ReadMemStats(&m1)
	if n := m1.Mallocs - m0.Mallocs; n != 0 {
		t.Errorf("3000 Hessian-vector-product steps allocate %d times, want 0", n)
	}
}
