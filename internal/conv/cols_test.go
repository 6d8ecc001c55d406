package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestForwardPathsAgree checks both stride-1 GEMM forward paths, the wide
// im2col one (colGemmForward) and the per-tap one (tapGemmForward, which
// GemmForward keeps for im2col matrices over ColsMaxFloats), against the
// float64 reference on random geometries, padded, dilated and grouped.
func TestForwardPathsAgree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawLargerGeom(rt)
		wd, ok := wideOf(g)
		if !ok {
			rt.Skip("strided")
		}
		x := randData(rt, g.N*g.Cin*g.InVol(), "x")
		w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
		want := refForward(x, w, g)
		for _, im := range []struct {
			name string
			f    func(y, x, w []float32, g *Geom, wd *wideGeom)
		}{
			{"cols", colGemmForward},
			{"taps", tapGemmForward},
		} {
			y := fill(len(want), 99)
			im.f(y, x, w, g, &wd)
			near(rt, im.name+" y", y, want)
		}
	})
}

// drawStride1Geom draws a drawLargerGeom geometry made stride 1, with a new
// high padding per axis and the low padding raised where the kernel's span
// would not fit.
func drawStride1Geom(rt *rapid.T) *Geom {
	g := drawLargerGeom(rt)
	g.Stride = [3]int{1, 1, 1}
	for a := 0; a < 3; a++ {
		span := g.Dil[a]*(g.K[a]-1) + 1
		hi := rapid.IntRange(0, 2).Draw(rt, "padhi")
		if g.In[a]+g.PadLo[a]+hi < span {
			g.PadLo[a] = span - g.In[a] - hi
		}
		g.Out[a] = g.In[a] + g.PadLo[a] + hi - span + 1
	}
	return g
}

// drawBlockGeom draws a drawStride1Geom geometry with 8 or 16 output
// channels per group (out) or input channels (not out), for the blocked
// kernels, and its wide layout.
func drawBlockGeom(rt *rapid.T, out bool) (*Geom, wideGeom) {
	rt.Helper()
	g := drawStride1Geom(rt)
	if out {
		g.Cout = g.Groups * 8 * rapid.IntRange(1, 2).Draw(rt, "cout/8")
	} else {
		g.Cin = g.Groups * 8 * rapid.IntRange(1, 2).Draw(rt, "cin/8")
	}
	wd, ok := wideOf(g)
	if !ok {
		rt.Fatal("stride 1 should have a wide layout")
	}
	return g, wd
}

// TestBlockForward checks blockForward (Go or AVX-512 acc8) against the
// float64 reference on random stride-1 geometries with 8 or 16 output
// channels per group, padded, dilated, grouped, with rows of every length
// mod 48 (the kernel's chunks of 48 and 16 and its masked tail).
func TestBlockForward(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, wd := drawBlockGeom(rt, true)
		x := randData(rt, g.N*g.Cin*g.InVol(), "x")
		w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
		ep := drawEpilogue(rt, g)
		want := refForward(x, w, g)
		refEpilogue(want, ep, g)
		y := fill(len(want), 99)
		blockForward(y, x, w, g, &wd, ep)
		near(rt, "block y", y, want)
		if !small(g) && useBlock(g) {
			clear(y)
			ForwardBias(y, x, w, ep.bias, ep.relu, g)
			near(rt, "ForwardBias y", y, want)
		}
	})
}

// drawEpilogue draws a bias (or none) and whether to apply ReLU.
func drawEpilogue(t *rapid.T, g *Geom) epilogue {
	var ep epilogue
	if rapid.Bool().Draw(t, "bias") {
		ep.bias = randData(t, g.Cout, "b")
	}
	ep.relu = rapid.Bool().Draw(t, "relu")
	return ep
}

// checkEpilogue draws a bias and ReLU (drawEpilogue), applies them to the
// reference output want in place, and checks against it the output that
// run writes with them into y, filled with 99 first; it returns y.
func checkEpilogue(rt *rapid.T, what string, g *Geom, want []float64, run func(y []float32, ep epilogue)) []float32 {
	rt.Helper()
	ep := drawEpilogue(rt, g)
	refEpilogue(want, ep, g)
	y := fill(len(want), 99)
	run(y, ep)
	near(rt, what, y, want)
	return y
}

// refEpilogue applies ep to the reference output y in float64.
func refEpilogue(y []float64, ep epilogue, g *Geom) {
	ov := g.OutVol()
	for i := range y {
		if ep.bias != nil {
			y[i] += float64(ep.bias[i/ov%g.Cout])
		}
		if ep.relu && !(y[i] > 0) {
			y[i] = 0
		}
	}
}

// TestBlockData checks blockData against the float64 reference on random
// stride-1 geometries with 8 or 16 input channels per group.
func TestBlockData(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, wd := drawBlockGeom(rt, false)
		x, w, dy := drawOperands(rt, g, randData, "dy")
		want, _ := refAdjoints(x, w, dy, g)
		dx := fill(len(want), 99)
		blockData(dx, dy, w, g, &wd)
		near(rt, "block dx", dx, want)
		if !small(g) && useBlockData(g) {
			clear(dx)
			Data(dx, dy, w, g)
			near(rt, "Data dx", dx, want)
		}
	})
}

// TestGemmExactAdjoint checks ⟨conv(x,w),u⟩ = ⟨x,convᵀ(u,w)⟩ =
// ⟨w,convF(x,u)⟩ exactly, with dyadic inputs whose products and sums are
// exact in float32, on geometries that take the GEMM family (UseGemm), for
// every GEMM kernel: the wide im2col, per-tap and blocked direct forward
// (Forward's choice for these channel counts), the per-tap data
// and filter gradients (stride 1) and the im2col ones (strided).
func TestGemmExactAdjoint(t *testing.T) {
	geo := func(n, cin, cout, groups, side, pad, dil, stride int) *Geom {
		span := dil*2 + 1
		o := (side+2*pad-span)/stride + 1
		return &Geom{N: n, Cin: cin, Cout: cout, Groups: groups,
			In: [3]int{1, side, side}, K: [3]int{1, 3, 3}, Out: [3]int{1, o, o},
			Stride: [3]int{1, stride, stride}, PadLo: [3]int{0, pad, pad}, Dil: [3]int{1, dil, dil}}
	}
	cases := []*Geom{
		geo(2, 16, 16, 1, 9, 0, 1, 1),  // valid: sparse wide layout
		geo(2, 16, 32, 1, 8, 1, 1, 1),  // padded
		geo(1, 32, 32, 2, 10, 2, 2, 1), // groups, dilation
		geo(2, 16, 16, 1, 11, 1, 1, 2), // strided: im2col
		{N: 2, Cin: 16, Cout: 16, Groups: 1, // 1-D, dense wide layout
			In: [3]int{1, 1, 30}, K: [3]int{1, 1, 9}, Out: [3]int{1, 1, 22},
			Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}},
	}
	for _, g := range cases {
		if !UseGemm(g) {
			t.Fatalf("%+v should take the GEMM path", *g)
		}
		rapid.Check(t, func(rt *rapid.T) {
			e := newExactAdjoint(rt, g, "GemmFilter", GemmFilter)
			x, w, u, y, dx := e.x, e.w, e.u, e.y, e.dx
			e.data("GemmData", func() { GemmData(dx, u, w, g) })
			e.data("Data", func() { Data(dx, u, w, g) })
			wd, wide := wideOf(g)
			if wide {
				e.data("blockData", func() { blockData(dx, u, w, g, &wd) })
			}
			e.forward("GemmForward", func() { GemmForward(y, x, w, g) })
			if wide {
				e.forward("tapGemmForward", func() { tapGemmForward(y, x, w, g, &wd) })
				e.forward("colGemmForward", func() { colGemmForward(y, x, w, g, &wd) })
				e.forward("blockForward", func() { blockForward(y, x, w, g, &wd, epilogue{}) })
				e.forward("Forward", func() { Forward(y, x, w, g) })
			}
		})
	}
}

// TestBlockForwardParallel checks that a batch large enough for
// blockForward to split over goroutines gives the same bits as one
// goroutine, and the float64 reference's values.
func TestBlockForwardParallel(t *testing.T) {
	if !haveAVX512 {
		t.Skip("blockForward needs AVX-512")
	}
	// N = 3 splits by batch item; N = 1 (inference on one image) by chunks
	// of an item's 8-channel blocks (three blocks: an uneven cut on two
	// goroutines), with a bias and ReLU read per block.
	for _, n := range []int{3, 1} {
		g := &Geom{N: n, Cin: 16, Cout: 24, Groups: 1,
			In: [3]int{1, 14, 14}, K: [3]int{1, 3, 3}, Out: [3]int{1, 12, 12},
			Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}}
		wd, ok := wideOf(g)
		if !ok || g.Cout*g.CinG()*g.KVol()*wd.l < 2<<18 {
			t.Fatalf("N=%d: the geometry does not reach the parallel split (wide %v, work %d)", n, ok, g.Cout*g.CinG()*g.KVol()*wd.l)
		}
		rapid.Check(t, func(rt *rapid.T) {
			x := randData(rt, g.N*g.Cin*g.InVol(), "x")
			w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
			ep := drawEpilogue(rt, g)
			serial := sameOnThreads(rt, fmt.Sprintf("N=%d: y", n), g.N*g.Cout*g.OutVol(), []int{2, 3}, func(y []float32) {
				blockForward(y, x, w, g, &wd, ep)
			})
			want := refForward(x, w, g)
			refEpilogue(want, ep, g)
			near(rt, "y", serial, want)
		})
	}
}

// TestBlockDataParallel is TestBlockForwardParallel for blockData.
func TestBlockDataParallel(t *testing.T) {
	if !haveAVX512 {
		t.Skip("blockData needs AVX-512")
	}
	g := &Geom{N: 3, Cin: 16, Cout: 16, Groups: 1,
		In: [3]int{1, 14, 14}, K: [3]int{1, 3, 3}, Out: [3]int{1, 12, 12},
		Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}}
	wd, ok := wideOf(g)
	if work := g.Cin * g.CoutG() * g.KVol() * wd.plane; !ok || work < 1<<18 {
		t.Fatalf("the geometry does not reach the parallel split (wide %v, work %d)", ok, work)
	}
	rapid.Check(t, func(rt *rapid.T) {
		x := make([]float32, g.N*g.Cin*g.InVol())
		w := randData(rt, g.Cout*g.CinG()*g.KVol(), "w")
		dy := randData(rt, g.N*g.Cout*g.OutVol(), "dy")
		dx := sameOnThreads(rt, "dx", len(x), []int{2}, func(dx []float32) { blockData(dx, dy, w, g, &wd) })
		want, _ := refAdjoints(x, w, dy, g)
		near(rt, "dx", dx, want)
	})
}

// TestFilterParallel checks that tapGemmFilter splitting its taps over two
// goroutines gives the same bits as one goroutine, and the reference
// values, padded and grouped.
func TestFilterParallel(t *testing.T) {
	for _, g := range []*Geom{
		{N: 4, Cin: 16, Cout: 16, Groups: 1, In: [3]int{1, 16, 16}, K: [3]int{1, 3, 3}, Out: [3]int{1, 16, 16},
			PadLo: [3]int{0, 1, 1}, Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}},
		{N: 5, Cin: 32, Cout: 16, Groups: 2, In: [3]int{1, 16, 16}, K: [3]int{1, 3, 3}, Out: [3]int{1, 14, 14},
			Stride: [3]int{1, 1, 1}, Dil: [3]int{1, 1, 1}},
	} {
		wd, ok := wideOf(g)
		if work := g.N * g.Cout * g.CinG() * wd.l; !ok || work < 1<<18 {
			t.Fatalf("the geometry does not reach the parallel split (wide %v, work %d)", ok, work)
		}
		rapid.Check(t, func(rt *rapid.T) {
			x := randData(rt, g.N*g.Cin*g.InVol(), "x")
			dy := randData(rt, g.N*g.Cout*g.OutVol(), "dy")
			sameOnThreads(rt, "dw", g.Cout*g.CinG()*g.KVol(), []int{2}, func(dw []float32) { tapGemmFilter(dw, x, dy, g, &wd) })
		})
		// One check of the values, outside rapid: the reference is slow.
		rng := rand.New(rand.NewPCG(1, 2))
		x, dy := make([]float32, g.N*g.Cin*g.InVol()), make([]float32, g.N*g.Cout*g.OutVol())
		for _, v := range [][]float32{x, dy} {
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
		}
		dw := make([]float32, g.Cout*g.CinG()*g.KVol())
		tapGemmFilter(dw, x, dy, g, &wd)
		_, want := refAdjoints(x, make([]float32, len(dw)), dy, g)
		near(t, "dw", dw, want)
	}
}
