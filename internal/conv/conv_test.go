package conv

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
)

// drawGeom draws a small random geometry of rank 1 to 3; big asks for
// channel counts that reach the GEMM path.
func drawGeom(t *rapid.T, big bool) *Geom {
	g := &Geom{N: rapid.IntRange(1, 2).Draw(t, "N"), Groups: rapid.IntRange(1, 2).Draw(t, "groups")}
	cmax := 3
	if big {
		cmax = 12
	}
	g.Cin = g.Groups * rapid.IntRange(1, cmax).Draw(t, "cin/g")
	g.Cout = g.Groups * rapid.IntRange(1, 3).Draw(t, "cout/g")
	r := rapid.IntRange(1, 3).Draw(t, "rank")
	drawAxes(t, g, axes{r: r, kMax: 3, strideMax: 2, forced: -1, padMax: 2, inMax: 6})
	return g
}

// kernels is one implementation of the three convolution kernels.
type kernels struct {
	name              string
	fwd, data, filter func(a, b, c []float32, g *Geom)
}

// check runs the three kernels at c's operands on outputs filled with 99
// (kernels must overwrite) and compares them with the float64 reference;
// it returns the outputs.
func (im kernels) check(rt *rapid.T, c refCase) (y, dx, dw []float32) {
	y = fill(len(c.wantY), 99)
	im.fwd(y, c.x, c.w, c.g)
	near(rt, im.name+" y", y, c.wantY)
	dx = fill(len(c.wantDx), 99)
	im.data(dx, c.u, c.w, c.g)
	near(rt, im.name+" dx", dx, c.wantDx)
	dw = fill(len(c.wantDw), 99)
	im.filter(dw, c.x, c.u, c.g)
	near(rt, im.name+" dw", dw, c.wantDw)
	return y, dx, dw
}

// TestKernelsAgainstReference checks both implementations of the three
// kernels against the float64 loops on random geometry.
func TestKernelsAgainstReference(t *testing.T) {
	for _, big := range []bool{false, true} {
		rapid.Check(t, func(rt *rapid.T) {
			g := drawGeom(rt, big)
			c := drawRefCase(rt, g, randData, "dy")
			for _, im := range []kernels{
				{"direct", DirectForward, DirectData, DirectFilter},
				{"gemm", GemmForward, GemmData, GemmFilter},
				{"chosen", Forward, Data, Filter},
			} {
				im.check(rt, c)
			}
			checkEpilogue(rt, "ForwardBias y", g, c.wantY, func(y []float32, ep epilogue) { ForwardBias(y, c.x, c.w, ep.bias, ep.relu, g) })
		})
	}
}

// TestSteadyStateAllocs pins both paths at zero allocations once warm.
func TestSteadyStateAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	g := square(2, 16, 16, 6, 3, 1, 1)
	x := make([]float32, g.N*g.Cin*g.InVol())
	w := make([]float32, g.Cout*g.CinG()*g.KVol())
	y := make([]float32, g.N*g.Cout*g.OutVol())
	if !UseGemm(g) {
		t.Fatal("geometry should take the GEMM path")
	}
	for _, f := range []namedRun{
		{"Forward", func() { Forward(y, x, w, g) }},
		{"GemmForward", func() { GemmForward(y, x, w, g) }},
		{"GemmData", func() { GemmData(x, y, w, g) }},
		{"GemmFilter", func() { GemmFilter(w, x, y, g) }},
		{"DirectForward", func() { DirectForward(y, x, w, g) }},
		{"DirectData", func() { DirectData(x, y, w, g) }},
		{"DirectFilter", func() { DirectFilter(w, x, y, g) }},
	} {
		f.f()
		if a := testing.AllocsPerRun(20, f.f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", f.name, a)
		}
	}
}

// drawLargerGeom draws geometries whose planes are long enough for the
// wide direct kernels' vector path (rows of 24 and more) and whose
// outputs are small enough for the small path, with stride 1 on most
// draws.
func drawLargerGeom(t *rapid.T) *Geom {
	g := &Geom{N: rapid.IntRange(1, 2).Draw(t, "N"), Groups: rapid.IntRange(1, 2).Draw(t, "groups")}
	g.Cin = g.Groups * rapid.IntRange(1, 5).Draw(t, "cin/g")
	g.Cout = g.Groups * rapid.IntRange(1, 6).Draw(t, "cout/g")
	r := rapid.IntRange(1, 3).Draw(t, "rank")
	maxIn := []int{0, 40, 20, 9}[r]
	strideMax := 1
	if rapid.IntRange(0, 3).Draw(t, "strided") == 0 {
		strideMax = 2
	}
	drawAxes(t, g, axes{r: r, kMax: 3, strideMax: strideMax, forced: -1, padMax: 2, inMax: maxIn})
	return g
}

// TestKernelsLargerPlanes repeats the reference comparison on larger
// planes: the wide direct kernels' assembly path, their padded and
// sparse layouts, the small path's gather tables, and the GEMM path's
// row-wise im2col.
func TestKernelsLargerPlanes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawRefCase(rt, drawLargerGeom(rt), randData, "dy")
		for _, im := range []kernels{
			{"direct", DirectForward, DirectData, DirectFilter},
			{"gemm", GemmForward, GemmData, GemmFilter},
		} {
			im.check(rt, c)
		}
	})
}

// TestSmallTablesShared runs the small path on more geometries than the
// table cache holds, from several goroutines at once (under -race this
// checks the cache's publication), against the reference.
func TestSmallTablesShared(t *testing.T) {
	var geoms []*Geom
	for s := 1; s <= 3; s++ {
		for pad := 0; pad <= 1; pad++ {
			for cin := 1; cin <= 9; cin++ {
				o := s + 2*pad - 3 + 1
				if o < 1 {
					continue
				}
				geoms = append(geoms, &Geom{N: 2, Cin: cin, Cout: 3, Groups: 1,
					In: [3]int{1, s, s}, K: [3]int{1, 3, 3}, Out: [3]int{1, o, o},
					Stride: [3]int{1, 1, 1}, PadLo: [3]int{0, pad, pad}, Dil: [3]int{1, 1, 1}})
			}
		}
	}
	if len(geoms) <= len(tables) {
		t.Fatalf("%d geometries do not overflow the cache of %d", len(geoms), len(tables))
	}
	done := make(chan string)
	for w := 0; w < 4; w++ {
		go func() {
			for rep := 0; rep < 20; rep++ {
				for i, g := range geoms {
					if !small(g) {
						done <- "geometry not small"
						return
					}
					x := make([]float32, g.N*g.Cin*g.InVol())
					wt := make([]float32, g.Cout*g.CinG()*g.KVol())
					for j := range x {
						x[j] = float32((j+i+w)%5) - 2
					}
					for j := range wt {
						wt[j] = float32((3*j+rep)%7) - 3
					}
					y := make([]float32, g.N*g.Cout*g.OutVol())
					DirectForward(y, x, wt, g)
					for j, v := range refForward(x, wt, g) {
						if float64(y[j]) != v {
							done <- "wrong result"
							return
						}
					}
				}
			}
			done <- ""
		}()
	}
	for w := 0; w < 4; w++ {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}
