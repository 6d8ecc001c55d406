package conv

import (
	"fmt"
	"strings"
	"testing"
)

// TestResNet18Paths logs the kernel Forward, Data and Filter choose for
// every distinct convolution of ResNet-18 at the three shapes of
// `flatkit bench resnet`. Run it with -v to read the table, which COSTS.md
// quotes. It fails if a layer of the last stages, a small output plane
// with hundreds of channels, falls to the per-element small tables: that
// rule once sent most of a training step there. It also fails if a 1×1
// convolution is not routed to the pointwise or batched GEMM.
func TestResNet18Paths(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-28s %-22s %-10s %-10s %-10s\n", "shape", "layer", "geometry", "forward", "data", "filter")
	for _, in := range []struct{ n, side int }{{16, 96}, {16, 32}, {1, 224}} {
		for _, l := range resnet18Layers(in.n, in.side) {
			g := l.g
			f, d, fl := Paths(g)
			geom := fmt.Sprintf("%d→%d %d²→%d²", g.Cin, g.Cout, g.In[1], g.Out[1])
			fmt.Fprintf(&b, "%-9s %-28s %-22s %-10s %-10s %-10s\n",
				fmt.Sprintf("%d×%d²", in.n, in.side), l.name, geom, f, d, fl)
			for _, p := range []string{f, d, fl} {
				if p == "small" && g.Cin >= 64 {
					t.Errorf("%d×%d² %s: a %d-channel small plane takes the small tables", in.n, in.side, l.name, g.Cin)
				}
			}
			if g.K[1] == 1 && f != "pointwise" && f != "smallgemm" {
				t.Errorf("%d×%d² %s: 1×1 forward takes %q", in.n, in.side, l.name, f)
			}
		}
	}
	t.Log("\n" + b.String())
}
