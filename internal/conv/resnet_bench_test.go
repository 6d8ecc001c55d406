package conv

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
)

// resnetLayer is one distinct convolution of torchvision's ResNet-18 and
// how many times a forward pass runs it.
type resnetLayer struct {
	name  string
	count int
	g     *Geom
}

// resnet18Layers lists ResNet-18's distinct convolutions for a batch of n
// images of side×side pixels.
func resnet18Layers(n, side int) []resnetLayer {
	conv := func(cin, cout, in, k, stride, pad int) *Geom { return square(n, cin, cout, in, k, stride, pad) }
	s := (side+6-7)/2 + 1 // stem
	ls := []resnetLayer{{"conv1 7x7/2", 1, conv(3, 64, side, 7, 2, 3)}}
	s = (s+2-3)/2 + 1 // max pool
	ls = append(ls, resnetLayer{"layer1 3x3", 4, conv(64, 64, s, 3, 1, 1)})
	c := 64
	for stage := 2; stage <= 4; stage++ {
		o := (s+2-3)/2 + 1
		ls = append(ls,
			resnetLayer{fmt.Sprintf("layer%d.0.conv1 3x3/2", stage), 1, conv(c, 2*c, s, 3, 2, 1)},
			resnetLayer{fmt.Sprintf("layer%d.0.downsample 1x1/2", stage), 1, conv(c, 2*c, s, 1, 2, 0)},
			resnetLayer{fmt.Sprintf("layer%d 3x3", stage), 3, conv(2*c, 2*c, o, 3, 1, 1)})
		s, c = o, 2*c
	}
	return ls
}

// BenchmarkResNet18Layers times Forward, Data and Filter on every distinct
// convolution of a ResNet-18 training step at 16×3×96×96 and of inference
// at 16×3×32×32, on one goroutine; each name carries the chosen path and
// the layer's count per pass, so the time share of each layer in a step is
// time × count over the sum.
func BenchmarkResNet18Layers(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	for _, in := range []struct{ n, side int }{{16, 96}, {16, 32}} {
		for _, l := range resnet18Layers(in.n, in.side) {
			g := l.g
			x, w, y := benchOperands(g)
			f, d, fl := Paths(g)
			for _, op := range []struct {
				name, path string
				run        func()
			}{
				{"forward", f, func() { Forward(y, x, w, g) }},
				{"data", d, func() { Data(x, y, w, g) }},
				{"filter", fl, func() { Filter(w, x, y, g) }},
			} {
				name := fmt.Sprintf("%dx%d/%s/x%d/%s/%s", in.n, in.side, l.name, l.count, op.name, op.path)
				b.Run(name, func(b *testing.B) { cputime.Loop(b, op.run) })
			}
		}
	}
}

// BenchmarkSmallPaths compares the small tables with the batched GEMM on
// small-output layers around useSmallGemm's thresholds, on one goroutine:
// the measurements behind SmallGemmMinCout and SmallGemmMinInner.
func BenchmarkSmallPaths(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	for _, c := range []struct {
		name string
		g    *Geom
	}{
		{"n1 4-4 2x2 3x3", square(1, 4, 4, 2, 3, 1, 1)},     // deepchain
		{"n4 8-8 2x2 3x3", square(4, 8, 8, 2, 3, 1, 1)},     // below every threshold
		{"n4 16-16 2x2 3x3", square(4, 16, 16, 2, 3, 1, 1)}, // at the thresholds
		{"n4 32-32 2x2 3x3", square(4, 32, 32, 2, 3, 1, 1)},
		{"n1 64-64 4x4 3x3", square(1, 64, 64, 4, 3, 1, 1)},       // one image, 16 columns
		{"n1 64-64 2x2 3x3", square(1, 64, 64, 2, 3, 1, 1)},       // 4 columns
		{"n16 64-128 8x8 1x1/2", square(16, 64, 128, 8, 1, 2, 0)}, // inner 64
		{"n16 32-64 8x8 1x1/2", square(16, 32, 64, 8, 1, 2, 0)},   // inner 32
		{"n16 512-512 3x3 3x3", square(16, 512, 512, 3, 3, 1, 1)},
	} {
		g := c.g
		x, w, y := benchOperands(g)
		clear(w) // a zero filter, as the thresholds were measured with
		for _, im := range []namedRun{
			{"tables/forward", func() { smallForward(y, x, w, g) }},
			{"gemm/forward", func() { smallGemmForward(y, x, w, g) }},
			{"tables/data", func() { smallData(x, y, w, g) }},
			{"gemm/data", func() { smallGemmData(x, y, w, g) }},
			{"tables/filter", func() { clear(w); smallFilter(w, x, y, g) }},
			{"gemm/filter", func() { smallGemmFilter(w, x, y, g) }},
		} {
			b.Run(c.name+"/"+im.name, func(b *testing.B) { cputime.Loop(b, im.f) })
		}
	}
}
