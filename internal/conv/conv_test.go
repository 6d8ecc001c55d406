package conv

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
)

// refForward is conv in float64 by plain loops, written independently of
// visit: it enumerates every tap and skips the padding.
func refForward(x, w []float32, g *Geom) []float64 {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	y := make([]float64, g.N*g.Cout*ov)
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			for o := 0; o < ov; o++ {
				o0, o1, o2 := o/(g.Out[1]*g.Out[2]), o/g.Out[2]%g.Out[1], o%g.Out[2]
				s := 0.0
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < kv; k++ {
						k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
						i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
						i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
						i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
						if i0 < 0 || i1 < 0 || i2 < 0 || i0 >= g.In[0] || i1 >= g.In[1] || i2 >= g.In[2] {
							continue
						}
						xi := (n*g.Cin+grp*cig+ci)*iv + (i0*g.In[1]+i1)*g.In[2] + i2
						s += float64(x[xi]) * float64(w[(co*cig+ci)*kv+k])
					}
				}
				y[(n*g.Cout+co)*ov+o] = s
			}
		}
	}
	return y
}

// refAdjoints returns the data and filter gradients in float64 by
// transposing refForward's sums term by term.
func refAdjoints(x, w, dy []float32, g *Geom) (dx, dw []float64) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	dx = make([]float64, g.N*g.Cin*iv)
	dw = make([]float64, g.Cout*cig*kv)
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			for o := 0; o < ov; o++ {
				o0, o1, o2 := o/(g.Out[1]*g.Out[2]), o/g.Out[2]%g.Out[1], o%g.Out[2]
				d := float64(dy[(n*g.Cout+co)*ov+o])
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < kv; k++ {
						k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
						i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
						i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
						i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
						if i0 < 0 || i1 < 0 || i2 < 0 || i0 >= g.In[0] || i1 >= g.In[1] || i2 >= g.In[2] {
							continue
						}
						xi := (n*g.Cin+grp*cig+ci)*iv + (i0*g.In[1]+i1)*g.In[2] + i2
						wi := (co*cig+ci)*kv + k
						dx[xi] += float64(w[wi]) * d
						dw[wi] += float64(x[xi]) * d
					}
				}
			}
		}
	}
	return dx, dw
}

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
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
		if a < 3-r {
			continue
		}
		g.K[a] = rapid.IntRange(1, 3).Draw(t, "k")
		g.Stride[a] = rapid.IntRange(1, 2).Draw(t, "stride")
		g.Dil[a] = rapid.IntRange(1, 2).Draw(t, "dil")
		g.PadLo[a] = rapid.IntRange(0, 2).Draw(t, "padlo")
		hi := rapid.IntRange(0, 2).Draw(t, "padhi")
		span := g.Dil[a]*(g.K[a]-1) + 1
		g.In[a] = rapid.IntRange(max(1, span-g.PadLo[a]-hi), 6).Draw(t, "in")
		g.Out[a] = (g.In[a]+g.PadLo[a]+hi-span)/g.Stride[a] + 1
	}
	return g
}

func randData(t *rapid.T, n int, label string) []float32 {
	k := rapid.SliceOfN(rapid.IntRange(-16, 16), n, n).Draw(t, label)
	x := make([]float32, n)
	for i, v := range k {
		x[i] = float32(v) / 8
	}
	return x
}

func near(t *rapid.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// kernels is one implementation of the three convolution kernels.
type kernels struct {
	name              string
	fwd, data, filter func(a, b, c []float32, g *Geom)
}

// check runs the three kernels at (x, w) and dy on outputs filled with 99
// (kernels must overwrite) and compares them with the float64 reference;
// it returns the outputs.
func (im kernels) check(rt *rapid.T, g *Geom, x, w, dy []float32, wantY, wantDx, wantDw []float64) (y, dx, dw []float32) {
	y = fill(len(wantY), 99)
	im.fwd(y, x, w, g)
	near(rt, im.name+" y", y, wantY)
	dx = fill(len(wantDx), 99)
	im.data(dx, dy, w, g)
	near(rt, im.name+" dx", dx, wantDx)
	dw = fill(len(wantDw), 99)
	im.filter(dw, x, dy, g)
	near(rt, im.name+" dw", dw, wantDw)
	return y, dx, dw
}

// TestKernelsAgainstReference checks both implementations of the three
// kernels against the float64 loops on random geometry.
func TestKernelsAgainstReference(t *testing.T) {
	for _, big := range []bool{false, true} {
		rapid.Check(t, func(rt *rapid.T) {
			g := drawGeom(rt, big)
			x := randData(rt, g.N*g.Cin*g.InVol(), "x")
			w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
			dy := randData(rt, g.N*g.Cout*g.OutVol(), "dy")
			wantY := refForward(x, w, g)
			wantDx, wantDw := refAdjoints(x, w, dy, g)
			for _, im := range []kernels{
				{"direct", DirectForward, DirectData, DirectFilter},
				{"gemm", GemmForward, GemmData, GemmFilter},
				{"chosen", Forward, Data, Filter},
			} {
				im.check(rt, g, x, w, dy, wantY, wantDx, wantDw)
			}
			ep := drawEpilogue(rt, g)
			refEpilogue(wantY, ep, g)
			y := fill(len(wantY), 99)
			ForwardBias(y, x, w, ep.bias, ep.relu, g)
			near(rt, "ForwardBias y", y, wantY)
		})
	}
}

// TestSteadyStateAllocs pins both paths at zero allocations once warm.
func TestSteadyStateAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	g := &Geom{N: 2, Cin: 16, Cout: 16, Groups: 1,
		In: [3]int{1, 6, 6}, K: [3]int{1, 3, 3}, Out: [3]int{1, 6, 6},
		Stride: [3]int{1, 1, 1}, PadLo: [3]int{0, 1, 1}, Dil: [3]int{1, 1, 1}}
	x := make([]float32, g.N*g.Cin*g.InVol())
	w := make([]float32, g.Cout*g.CinG()*g.KVol())
	y := make([]float32, g.N*g.Cout*g.OutVol())
	if !UseGemm(g) {
		t.Fatal("geometry should take the GEMM path")
	}
	for _, f := range []struct {
		name string
		run  func()
	}{
		{"Forward", func() { Forward(y, x, w, g) }},
		{"GemmForward", func() { GemmForward(y, x, w, g) }},
		{"GemmData", func() { GemmData(x, y, w, g) }},
		{"GemmFilter", func() { GemmFilter(w, x, y, g) }},
		{"DirectForward", func() { DirectForward(y, x, w, g) }},
		{"DirectData", func() { DirectData(x, y, w, g) }},
		{"DirectFilter", func() { DirectFilter(w, x, y, g) }},
	} {
		f.run()
		if a := testing.AllocsPerRun(20, f.run); a != 0 {
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
	strided := rapid.IntRange(0, 3).Draw(t, "strided") == 0
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
		if a < 3-r {
			continue
		}
		g.K[a] = rapid.IntRange(1, 3).Draw(t, "k")
		if strided {
			g.Stride[a] = rapid.IntRange(1, 2).Draw(t, "stride")
		}
		g.Dil[a] = rapid.IntRange(1, 2).Draw(t, "dil")
		g.PadLo[a] = rapid.IntRange(0, 2).Draw(t, "padlo")
		hi := rapid.IntRange(0, 2).Draw(t, "padhi")
		span := g.Dil[a]*(g.K[a]-1) + 1
		g.In[a] = rapid.IntRange(max(1, span-g.PadLo[a]-hi), maxIn).Draw(t, "in")
		g.Out[a] = (g.In[a]+g.PadLo[a]+hi-span)/g.Stride[a] + 1
	}
	return g
}

// TestKernelsLargerPlanes repeats the reference comparison on larger
// planes: the wide direct kernels' assembly path, their padded and
// sparse layouts, the small path's gather tables, and the GEMM path's
// row-wise im2col.
func TestKernelsLargerPlanes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawLargerGeom(rt)
		x := randData(rt, g.N*g.Cin*g.InVol(), "x")
		w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
		dy := randData(rt, g.N*g.Cout*g.OutVol(), "dy")
		wantY := refForward(x, w, g)
		wantDx, wantDw := refAdjoints(x, w, dy, g)
		for _, im := range []kernels{
			{"direct", DirectForward, DirectData, DirectFilter},
			{"gemm", GemmForward, GemmData, GemmFilter},
		} {
			im.check(rt, g, x, w, dy, wantY, wantDx, wantDw)
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
