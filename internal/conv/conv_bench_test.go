package conv

import (
	"fmt"
	"testing"
)

// BenchmarkForward compares the direct and GEMM paths on the benchmark
// scenarios' shapes; UseGemm's threshold is read off these numbers.
func BenchmarkForward(b *testing.B) {
	geo := func(n, cin, cout, s, k, pad int) *Geom {
		o := s + 2*pad - k + 1
		return &Geom{N: n, Cin: cin, Cout: cout, Groups: 1,
			In: [3]int{1, s, s}, K: [3]int{1, k, k}, Out: [3]int{1, o, o},
			Stride: [3]int{1, 1, 1}, PadLo: [3]int{0, pad, pad}, Dil: [3]int{1, 1, 1}}
	}
	for _, c := range []struct {
		name string
		g    *Geom
	}{
		{"deepchain 1x4x2x2 4->4", geo(1, 4, 4, 2, 3, 1)},
		{"convchain 5x1x28x28 1->2", geo(5, 1, 2, 28, 3, 0)},
		{"convchain 5x3x22x22 3->3", geo(5, 3, 3, 22, 3, 0)},
		{"batch64 64x16x26x26 16->32", geo(64, 16, 32, 26, 3, 0)},
		{"8x8x8 8->8", geo(1, 8, 8, 8, 3, 1)},
	} {
		g := c.g
		x := make([]float32, g.N*g.Cin*g.InVol())
		w := make([]float32, g.Cout*g.CinG()*g.KVol())
		y := make([]float32, g.N*g.Cout*g.OutVol())
		for _, im := range []struct {
			name string
			f    func(y, x, w []float32, g *Geom)
		}{{"direct", DirectForward}, {"gemm", GemmForward}} {
			b.Run(fmt.Sprintf("%s/%s", c.name, im.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					im.f(y, x, w, g)
				}
			})
		}
	}
}
