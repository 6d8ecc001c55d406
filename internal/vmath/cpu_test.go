package vmath

import (
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// TestISAFollowsCPULevel pins the kernel set to internal/cpu's rule.
func TestISAFollowsCPULevel(t *testing.T) {
	if detectISA() != cpu.Best {
		t.Fatalf("detectISA() = %v, want cpu.Best = %v", detectISA(), cpu.Best)
	}
}
