package main

import "testing"

// bench hvp-ode -quick emits one figure per case with the gradient's
// time beside the product's and no allocations.
func TestHvpODEBench(t *testing.T) {
	cases := runBench(t, []string{"hvp-ode"}, "gradient_median", "ratio", "ratio_min", "hv_norm")
	for _, name := range []string{
		"Lotka-Volterra Tsit5 rtol 1e-6, H·v d(p, u0)",
		"spiral 2-50-2 Tsit5 rtol 1e-3, H·v d(θ, u0)",
	} {
		m := cases[name]
		if m == nil {
			t.Errorf("no figure %q", name)
			continue
		}
		if a := m["allocs"].(float64); a != 0 {
			t.Errorf("%s: %v allocations per product, want 0", name, a)
		}
		if g := m["gradient_median"].(float64); !(g > 0) {
			t.Errorf("%s: gradient_median %v, want > 0", name, g)
		}
	}
}
