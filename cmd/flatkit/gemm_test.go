package main

import (
	"strings"
	"testing"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/peak"
)

// TestBenchGemmQuick runs the gemm scenario with tiny sample counts and checks
// that every figure is there and finite, not how fast anything is.
func TestBenchGemmQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gonum's 1024³ Gemm a few times")
	}
	got := runBench(t, []string{"-samples", "1", "gemm"})
	want := []string{
		"Gemm 64³, 1 goroutine", "gonum Gemm 64³, 1 goroutine", "Gemm 64³, 1 goroutine / gonum",
		"Gemm 256³, 2 goroutines", "gonum Gemm 1024³, 2 goroutines", "Gemm 1024³, 1 goroutine / gonum",
		"Gemv 256×256 y = A·x", "gonum Gemv 256×256 y = Aᵀ·x", "Gemv 256×256 y = Aᵀ·x gonum / flat",
	}
	if peak.FMA(1) > 0 {
		want = append(want, "FMA peak "+flat.ISA()+", 1 core", "Gemm 1024³, 1 goroutine % of peak")
	} else {
		want = append(want, "FMA peak "+flat.ISA()) // written as unavailable
	}
	for _, c := range want {
		m, ok := got[c]
		if !ok {
			t.Errorf("no figure for case %q", c)
			continue
		}
		if med, _ := m["median"].(float64); strings.Contains(c, "Gemm") && !(med > 0) {
			t.Errorf("case %q: median %v, want > 0", c, m["median"])
		}
	}
	for _, c := range []string{"Gemm 256³, 1 goroutine", "Gemv 256×256 y = A·x"} {
		if a, _ := got[c]["allocs"].(float64); a != 0 {
			t.Errorf("case %q: %v allocations per call, want 0", c, a)
		}
	}
}
