//go:build !noasm

package optimisers

import (
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// TestSIMDFollowsCPULevel pins Adam's kernel choice to internal/cpu's rule.
func TestSIMDFollowsCPULevel(t *testing.T) {
	want := map[cpu.Level]int{cpu.Generic: simdNone, cpu.AVX2: simdAVX2, cpu.AVX512: simdAVX512}[cpu.Best]
	if simd != want {
		t.Fatalf("simd = %d, want %d for cpu.Best = %v", simd, want, cpu.Best)
	}
}
