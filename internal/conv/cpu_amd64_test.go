//go:build !noasm

package conv

import (
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// TestTapKernelsFollowCPULevel pins the AVX-512 tap and blocked kernels to
// internal/cpu's rule.
func TestTapKernelsFollowCPULevel(t *testing.T) {
	if want := cpu.Best >= cpu.AVX512; haveAVX512 != want {
		t.Fatalf("haveAVX512 = %v, want %v for cpu.Best = %v", haveAVX512, want, cpu.Best)
	}
}
