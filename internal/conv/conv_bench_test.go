package conv

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/flat"
)

// BenchmarkKernels compares the direct and GEMM paths of the three kernels
// on the benchmark scenarios' shapes; UseGemm's thresholds are read off
// these numbers.
func BenchmarkKernels(b *testing.B) {
	geo := func(n, cin, cout, s, k, pad int) *Geom { return square(n, cin, cout, s, k, 1, pad) }
	for _, c := range []struct {
		name string
		g    *Geom
	}{
		{"deepchain 1x4x2x2 4->4", geo(1, 4, 4, 2, 3, 1)},
		{"1x16x2x2 16->16", geo(1, 16, 16, 2, 3, 1)},
		{"1x64x2x2 64->64", geo(1, 64, 64, 2, 3, 1)},
		{"convchain 5x1x28x28 1->2", geo(5, 1, 2, 28, 3, 0)},
		{"convchain 5x3x22x22 3->3", geo(5, 3, 3, 22, 3, 0)},
		{"8x8x8 8->8", geo(1, 8, 8, 8, 3, 1)},
		{"4x8x16x16 8->8", geo(4, 8, 8, 16, 3, 0)},
		{"4x4x16x16 4->4", geo(4, 4, 4, 16, 3, 0)},
		{"4x4x16x16 4->16", geo(4, 4, 16, 16, 3, 0)},
		{"batch64 64x1x28x28 1->16", geo(64, 1, 16, 28, 3, 0)},
		{"batch64 64x16x26x26 16->32", geo(64, 16, 32, 26, 3, 0)},
		{"batch64 64x64x18x18 64->64", geo(64, 64, 64, 18, 3, 0)},
	} {
		g := c.g
		x, w, y := benchOperands(g)
		for i := range y {
			y[i] = float32(i%3) - 1
		}
		for _, im := range []namedRun{
			{"forward/direct", func() { DirectForward(y, x, w, g) }},
			{"forward/gemm", func() { GemmForward(y, x, w, g) }},
			{"data/direct", func() { DirectData(x, y, w, g) }},
			{"data/gemm", func() { GemmData(x, y, w, g) }},
			{"filter/direct", func() { DirectFilter(w, x, y, g) }},
			{"filter/gemm", func() { GemmFilter(w, x, y, g) }},
		} {
			b.Run(fmt.Sprintf("%s/%s", c.name, im.name), func(b *testing.B) {
				if g.N*g.Cin*g.Cout > 64*16*32 && im.name[len(im.name)-6:] == "direct" {
					b.Skip("direct on large channel counts: slow and not chosen")
				}
				loopMACs(b, g, im.f)
			})
		}
	}
}

// BenchmarkForwardPaths compares the stride-1 forward paths on the six
// layers of the batch-64 convchain, on one goroutine: the direct tap
// kernels, the tap-GEMM path (one product per kernel tap), the wide im2col
// path (one product per image) that GemmForward takes, and the blocked
// direct kernel that Forward takes; and the tap-GEMM and blocked data
// gradients.
func BenchmarkForwardPaths(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	for _, s := range []struct{ cin, cout, side int }{
		{1, 16, 28}, {16, 32, 26}, {32, 32, 24}, {32, 64, 22}, {64, 64, 20}, {64, 64, 18},
	} {
		g := square(64, s.cin, s.cout, s.side, 3, 1, 0)
		wd, _ := wideOf(g)
		x, w, y := benchOperands(g)
		for _, im := range []namedRun{
			{"direct", func() { DirectForward(y, x, w, g) }},
			{"taps", func() { tapGemmForward(y, x, w, g, &wd) }},
			{"cols", func() { colGemmForward(y, x, w, g, &wd) }},
			{"block", func() { blockForward(y, x, w, g, &wd, epilogue{}) }},
			{"data/taps", func() { tapGemmData(x, y, w, g, &wd) }},
			{"data/block", func() { blockData(x, y, w, g, &wd) }},
		} {
			if im.name == "data/block" && g.CinG()%8 != 0 {
				continue
			}
			b.Run(fmt.Sprintf("%d->%d on %d/%s", s.cin, s.cout, s.side, im.name), func(b *testing.B) {
				if im.name == "direct" && s.cin > 16 {
					b.Skip("direct on large channel counts: slow and not chosen")
				}
				loopMACs(b, g, im.f)
			})
		}
	}
}
