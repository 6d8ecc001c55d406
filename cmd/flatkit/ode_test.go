package main

import (
	"strings"
	"testing"
)

// TestBenchODEQuick runs the ode scenario with tiny sample counts and checks
// its figures, their extra fields, the errors against the references and the
// allocation-free reused integrator; not the timings.
func TestBenchODEQuick(t *testing.T) {
	cases := runBench(t, []string{"ode"})
	for _, want := range []string{
		"Lotka-Volterra Tsit5, reused Integrator", "Lotka-Volterra Tsit5, ode.Solve",
		"Lotka-Volterra ensemble of 1000, 1 worker", "Lotka-Volterra ensemble of 1000, 2 workers",
		"Lotka-Volterra ensemble of 1000, speedup 2 workers / 1",
		"work-precision Lotka-Volterra Tsit5 rtol=1e-3", "work-precision Lotka-Volterra DP5 rtol=1e-6",
		"work-precision Lotka-Volterra Vern7 rtol=1e-10",
	} {
		if _, ok := cases[want]; !ok {
			t.Errorf("no figure for case %q", want)
		}
	}
	robertson := 0
	for name, m := range cases {
		if strings.HasPrefix(name, "Robertson") {
			robertson++
			if m["unit"] != "skipped" && !(m["relerr_max"].(float64) < 1e-3) {
				t.Errorf("%s: relative error %v", name, m["relerr_max"])
			}
		}
		if strings.HasPrefix(name, "work-precision") || strings.HasSuffix(name, "reused Integrator") {
			// Zero is pinned by package ode's tests; a quick run of a few
			// calls also counts the runtime's own rare allocations.
			if a := m["allocs_per_step"].(float64); a > 0.05 {
				t.Errorf("%s: %v allocs per step", name, a)
			}
			rtol := m["rtol"].(float64)
			if e := m["err_max_abs"].(float64); !(e < 100*rtol) {
				t.Errorf("%s: error %g at rtol %g", name, e, rtol)
			}
			if m["fevals"].(float64) <= 0 || m["steps"].(float64) <= 0 {
				t.Errorf("%s: no counters: %v", name, m)
			}
		}
	}
	if robertson == 0 {
		t.Error("no Robertson figure (or skip note)")
	}
	if e := cases["Lotka-Volterra ensemble of 1000, 2 workers"]["err_max_abs"]; !(e.(float64) < 1e-4) {
		t.Errorf("ensemble error %v", e)
	}
}
