package peak

import (
	"testing"
	"time"

	"github.com/flatkit/flatkit/internal/cpu"
)

func TestFMA(t *testing.T) {
	const iters = 1 << 16
	want512, want256 := 0, 0
	switch cpu.Best {
	case cpu.AVX512:
		want512, want256 = iters*512, iters*192
	case cpu.AVX2:
		want512, want256 = iters*192, iters*192
	}
	if got := FMA(iters); got != want512 {
		t.Errorf("FMA(%d) = %d flops, want %d (ISA %s)", iters, got, want512, cpu.Best)
	}
	if got := FMAAVX2(iters); got != want256 {
		t.Errorf("FMAAVX2(%d) = %d flops, want %d (ISA %s)", iters, got, want256, cpu.Best)
	}
	for _, n := range []int{0, -1} {
		if got := FMA(n); got != 0 {
			t.Errorf("FMA(%d) = %d, want 0", n, got)
		}
	}
	if n := testing.AllocsPerRun(5, func() { FMA(100) }); n != 0 {
		t.Errorf("FMA allocates %v times", n)
	}
	start := time.Now()
	f := FMA(1 << 22)
	if f > 0 {
		t.Logf("%s FMA peak ≈ %.1f GFLOP/s (one short run; see flatkit bench gemm)", cpu.Best, float64(f)/time.Since(start).Seconds()/1e9)
	}
}
