//go:build !noasm

package flat

import (
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// TestKernelsFollowCPULevel pins flat's kernel choice to internal/cpu's
// one rule: the AVX-512 GEMM kernel only where its narrow AVX2 kernel runs
// too, and the vector kernels at exactly cpu.Best.
func TestKernelsFollowCPULevel(t *testing.T) {
	if detectISA() != cpu.Best {
		t.Errorf("detectISA() = %v, want cpu.Best = %v", detectISA(), cpu.Best)
	}
	want := []*gemmKernel{gemmGo}
	switch cpu.Best {
	case cpu.AVX512:
		want = []*gemmKernel{&gemmAVX512, &gemmAVX2, gemmGo}
	case cpu.AVX2:
		want = []*gemmKernel{&gemmAVX2, gemmGo}
	}
	if !slices.Equal(gemmKernels, want) {
		t.Errorf("gemmKernels = %v, want %v for cpu.Best = %v", kernelNames(gemmKernels), kernelNames(want), cpu.Best)
	}
	for _, k := range gemmKernels {
		if k.narrow != nil && !slices.Contains(gemmKernels, k.narrow) {
			t.Errorf("kernel %s hands narrow products to %s, which this CPU does not run", k.name, k.narrow.name)
		}
	}
	if gemmAsmPack != cpu.HasAVX {
		t.Errorf("gemmAsmPack = %v, want cpu.HasAVX = %v", gemmAsmPack, cpu.HasAVX)
	}
}

func kernelNames(ks []*gemmKernel) []string {
	var s []string
	for _, k := range ks {
		s = append(s, k.name)
	}
	return s
}
