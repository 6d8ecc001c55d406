package conv

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
)

// drawSmallGemmGeom draws 2-D geometries with small output planes and many
// channels, which useSmallGemm sends to the batched GEMM: kernels 1×1 and
// 3×3, stride 1 or 2, padding 0 or 1, one to three images.
func drawSmallGemmGeom(t *rapid.T) *Geom {
	k := rapid.SampledFrom([]int{1, 3}).Draw(t, "k")
	minCin := (SmallGemmMinInner + k*k - 1) / (k * k)
	g := &Geom{N: rapid.IntRange(1, 3).Draw(t, "N"), Groups: 1,
		Cin: rapid.IntRange(minCin, minCin+24).Draw(t, "cin"), Cout: rapid.IntRange(SmallGemmMinCout, 40).Draw(t, "cout")}
	g.In[0], g.K[0], g.Out[0], g.Stride[0], g.Dil[0] = 1, 1, 1, 1, 1
	for a := 1; a < 3; a++ {
		g.K[a], g.Dil[a] = k, 1
		g.Stride[a] = rapid.IntRange(1, 2).Draw(t, "stride")
		g.PadLo[a] = rapid.IntRange(0, 1).Draw(t, "pad")
		hi := rapid.IntRange(0, 1).Draw(t, "padhi")
		g.In[a] = rapid.IntRange(max(1, k-g.PadLo[a]-hi), 2+2*g.Stride[a]).Draw(t, "in") // ≤ 4 outputs
		g.Out[a] = (g.In[a]+g.PadLo[a]+hi-k)/g.Stride[a] + 1
	}
	if !useSmallGemm(g) {
		t.Skip("not a smallgemm geometry")
	}
	return g
}

// TestSmallGemmAgainstReference checks the batched GEMM kernels and the
// chosen entry points against the float64 loops, and that they are exact
// adjoints of each other on dyadic inputs (whose sums are exact in
// float32): ⟨F(x, w), u⟩ = ⟨x, D(u, w)⟩ = ⟨w, W(x, u)⟩.
func TestSmallGemmAgainstReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawSmallGemmGeom(rt)
		c := drawRefCase(rt, g, dyadic, "u")
		for _, im := range []kernels{
			{"smallGemm", smallGemmForward, smallGemmData, smallGemmFilter},
			{"chosen", Forward, Data, Filter},
		} {
			y, dx, dw := im.check(rt, c)
			a, b, d := dot64(y, c.u), dot64(c.x, dx), dot64(c.w, dw)
			if a != b || b != d {
				rt.Fatalf("%+v: %s: ⟨F(x,w),u⟩ = %v, ⟨x,D(u,w)⟩ = %v, ⟨w,W(x,u)⟩ = %v", *g, im.name, a, b, d)
			}
		}
	})
}

// square is a 2-D geometry on square planes of side × side, one group,
// no dilation, the same padding on every side: the layers of the
// calibration tables and benchmarks.
func square(n, cin, cout, side, k, stride, pad int) *Geom {
	o := (side+2*pad-k)/stride + 1
	return &Geom{N: n, Cin: cin, Cout: cout, Groups: 1,
		In: [3]int{1, side, side}, K: [3]int{1, k, k}, Out: [3]int{1, o, o},
		Stride: [3]int{1, stride, stride}, PadLo: [3]int{0, pad, pad}, Dil: [3]int{1, 1, 1}}
}

// fill returns n copies of v: 99 marks outputs a kernel must overwrite.
func fill(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestSmallGemmChoice pins the rule on the layers it was calibrated on:
// ResNet-18's small-plane layers take the batched GEMM, deepchain's
// 4-channel 2×2 layers keep the tables.
func TestSmallGemmChoice(t *testing.T) {
	for _, c := range []struct {
		name string
		g    *Geom
		want string
	}{
		{"resnet 96² layer4 3x3", square(16, 512, 512, 3, 3, 1, 1), "smallgemm"},
		{"resnet 96² layer4.0 conv1", square(16, 256, 512, 6, 3, 2, 1), "smallgemm"},
		{"resnet 96² layer4.0 downsample", square(16, 256, 512, 6, 1, 2, 0), "smallgemm"},
		{"resnet 32² layer2 3x3", square(16, 128, 128, 4, 3, 1, 1), "smallgemm"},
		{"deepchain 2x2", square(1, 4, 4, 2, 3, 1, 1), "small"},
		{"8 channels 2x2", square(4, 8, 8, 2, 3, 1, 1), "small"},
		{"16 channels 2x2", square(4, 16, 16, 2, 3, 1, 1), "smallgemm"},
	} {
		if f, d, w := Paths(c.g); f != c.want || d != c.want || w != c.want {
			t.Errorf("%s: paths %s/%s/%s, want %s", c.name, f, d, w, c.want)
		}
	}
}

// TestSmallGemmAllocs pins the batched GEMM kernels at zero allocations
// once warm.
func TestSmallGemmAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	g := square(4, 32, 32, 3, 3, 1, 1)
	if !useSmallGemm(g) {
		t.Fatal("geometry should take the batched GEMM")
	}
	x := make([]float32, g.N*g.Cin*g.InVol())
	w := make([]float32, g.Cout*g.CinG()*g.KVol())
	y := make([]float32, g.N*g.Cout*g.OutVol())
	for name, f := range map[string]func(){
		"Forward": func() { Forward(y, x, w, g) },
		"Data":    func() { Data(x, y, w, g) },
		"Filter":  func() { Filter(w, x, y, g) },
	} {
		f()
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, a)
		}
	}
}

// TestSmallGemmParallel checks that the small GEMM split over goroutines
// (the forward pass by images, each with its own product; smallPass:
// building cols, the batch copies, the live-weight gather, the data
// gradient's sums) gives the same bits on two and three goroutines as on
// one, and the reference values, on geometries large enough to split: a
// 4×4 plane with all rows live, and a 1×1 plane where one tap in nine is
// live.
func TestSmallGemmParallel(t *testing.T) {
	for _, g := range []*Geom{
		square(8, 64, 64, 4, 3, 1, 1),
		square(4, 512, 512, 1, 3, 1, 1),
	} {
		tb := tableFor(g)
		if g.Cout*len(tb.live)*g.OutVol() < 1<<18 {
			t.Fatalf("%+v does not reach forItems' split of the forward pass", *g)
		}
		rng := rand.New(rand.NewPCG(uint64(g.N), 7))
		small := func(n int) []float32 { // small integers: sums exact in float32
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.IntN(33) - 16)
			}
			return v
		}
		x, w, u := small(g.N*g.Cin*g.InVol()), small(g.Cout*g.Cin*g.KVol()), small(g.N*g.Cout*g.OutVol())
		y1, dx1, dw1 := kernels{"smallGemm", smallGemmForward, smallGemmData, smallGemmFilter}.sameOnThreads(t, g, x, w, u)
		wantY, wantDx, wantDw := reference(x, w, u, g)
		for _, c := range []struct {
			name string
			got  []float32
			want []float64
		}{{"y", y1, wantY}, {"dx", dx1, wantDx}, {"dw", dw1, wantDw}} {
			for i := range c.got {
				if float64(c.got[i]) != c.want[i] {
					t.Fatalf("%+v: %s[%d] = %v, reference %v", *g, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}
