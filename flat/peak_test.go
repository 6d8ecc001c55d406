package flat

import (
	"testing"
	"time"
)

func TestPeakFMALoop(t *testing.T) {
	const iters = 1 << 16
	want512, want256 := 0, 0
	switch vecISA {
	case isaAVX512:
		want512, want256 = iters*512, iters*192
	case isaAVX2:
		want512, want256 = iters*192, iters*192
	}
	if got := PeakFMALoop(iters); got != want512 {
		t.Errorf("PeakFMALoop(%d) = %d flops, want %d (ISA %s)", iters, got, want512, ISA())
	}
	if got := PeakFMALoopAVX2(iters); got != want256 {
		t.Errorf("PeakFMALoopAVX2(%d) = %d flops, want %d (ISA %s)", iters, got, want256, ISA())
	}
	for _, n := range []int{0, -1} {
		if got := PeakFMALoop(n); got != 0 {
			t.Errorf("PeakFMALoop(%d) = %d, want 0", n, got)
		}
	}
	if n := testing.AllocsPerRun(5, func() { PeakFMALoop(100) }); n != 0 {
		t.Errorf("PeakFMALoop allocates %v times", n)
	}
	start := time.Now()
	f := PeakFMALoop(1 << 22)
	if f > 0 {
		t.Logf("%s FMA peak ≈ %.1f GFLOP/s (one short run; see flatkit bench gemm)", ISA(), float64(f)/time.Since(start).Seconds()/1e9)
	}
}
