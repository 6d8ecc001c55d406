package conv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
)

// BenchmarkStridedPaths times the strided convolutions of a ResNet-18
// training step at 16×3×96×96 (the stem, the 3×3/2 and 1×1/2 downsampling
// convolutions) by each kernel that can run them, on one goroutine: the
// measurements behind the strided path choice (see doc.go).
func BenchmarkStridedPaths(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	for _, l := range resnet18Layers(16, 96) {
		g := l.g
		if g.Stride[2] == 1 || small(g) {
			continue
		}
		wd := phasedOf(g)
		x, w, y := benchOperands(g)
		for _, im := range []namedRun{
			{"forward/im2col", func() { GemmForward(y, x, w, g) }},
			{"forward/block", func() { blockForward(y, x, w, g, &wd, epilogue{}) }},
			{"forward/cols", func() { colGemmForward(y, x, w, g, &wd) }},
			{"forward/tapgemm", func() { tapGemmForward(y, x, w, g, &wd) }},
			{"data/im2col", func() { im2colData(x, y, w, g) }},
			{"data/tapgemm", func() { tapGemmData(x, y, w, g, &wd) }},
			{"filter/im2col", func() { im2colFilter(w, x, y, g) }},
			{"filter/tapgemm", func() { tapGemmFilter(w, x, y, g, &wd) }},
			{"filter/cols", func() { colGemmFilter(w, x, y, g, &wd) }},
			{"data/cols", func() { colGemmData(x, y, w, g, &wd) }},
			{"forward/pointwise", func() { pointwiseForward(y, x, w, g) }},
			{"data/pointwise", func() { pointwiseData(x, y, w, g) }},
			{"filter/pointwise", func() { pointwiseFilter(w, x, y, g) }},
		} {
			if strings.HasSuffix(im.name, "pointwise") && !usePointwise(g) {
				continue
			}
			name := strings.NewReplacer(" ", "_", "/", "s").Replace(l.name)
			b.Run(fmt.Sprintf("%s/%s", name, im.name), func(b *testing.B) { cputime.Loop(b, im.f) })
		}
	}
}
