//go:build !noasm

package cpu

import (
	"testing"

	xcpu "golang.org/x/sys/cpu"
)

// TestDetectedReadsXSysCPU pins detected to the facts x/sys/cpu reports.
func TestDetectedReadsXSysCPU(t *testing.T) {
	f := detected()
	x := xcpu.X86
	if f.AVX != x.HasAVX || f.AVX2 != x.HasAVX2 || f.FMA != x.HasFMA || f.AVX512F != x.HasAVX512F {
		t.Fatalf("detected() = %+v, want x/sys/cpu's AVX %v AVX2 %v FMA %v AVX512F %v", f, x.HasAVX, x.HasAVX2, x.HasFMA, x.HasAVX512F)
	}
}
