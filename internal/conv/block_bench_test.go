package conv

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/flat"
)

// BenchmarkBlockForwardBatch1 is ResNet-18's layer1 3×3 conv (64 → 64
// channels, 56×56, padding 1) on one image, on 1 and 2 goroutines: the
// batch-one split over chunks of 8-channel blocks.
func BenchmarkBlockForwardBatch1(b *testing.B) {
	g := &Geom{N: 1, Cin: 64, Cout: 64, Groups: 1,
		In: [3]int{1, 56, 56}, K: [3]int{1, 3, 3}, Out: [3]int{1, 56, 56},
		Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}, PadLo: [3]int{0, 1, 1}}
	x := make([]float32, g.N*g.Cin*g.InVol())
	w := make([]float32, g.Cout*g.CinG()*g.KVol())
	for i := range x {
		x[i] = float32(i%7 - 3)
	}
	for i := range w {
		w[i] = float32(i%5 - 2)
	}
	y := make([]float32, g.N*g.Cout*g.OutVol())
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", threads), func(b *testing.B) {
			defer flat.SetMaxThreads(flat.SetMaxThreads(threads))
			b.ReportAllocs()
			for b.Loop() {
				Forward(y, x, w, g)
			}
		})
	}
}

// BenchmarkLayer16x32 is ResNet-18's layer1 3×3 conv at 16×3×32² (16
// images of 64 channels, 8×8, padding 1) and layer2's 3×3 (128 channels,
// 4×4: the small GEMM), and the blocked layers 1-3 of the 16×3×96²
// training step (24², 12², 6²), forward, on 1 and 2 goroutines: wall
// time, for the two-goroutine split of a whole layer in isolation.
func BenchmarkLayer16x32(b *testing.B) {
	for _, g := range []*Geom{
		square(16, 64, 64, 8, 3, 1, 1), square(16, 128, 128, 4, 3, 1, 1),
		square(16, 64, 64, 24, 3, 1, 1), square(16, 128, 128, 12, 3, 1, 1), square(16, 256, 256, 6, 3, 1, 1),
	} {
		x, w, y := benchOperands(g)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/goroutines=%d", g.Cin, g.In[1], threads), func(b *testing.B) {
				defer flat.SetMaxThreads(flat.SetMaxThreads(threads))
				b.ReportAllocs()
				for b.Loop() {
					Forward(y, x, w, g)
				}
			})
		}
	}
}
