package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/bitwise"
)

// drawStridedGeom draws a geometry with a stride above 1 on at least one
// axis (strides up to 3; 1×1 kernels, padding, dilation, inputs longer
// than the outputs reach, groups), whose channels per group are multiples
// of 8 (or of c8 when c8 ≠ 8) so that the blocked kernels apply.
func drawStridedGeom(t *rapid.T, c8 int) *Geom {
	g := &Geom{N: rapid.IntRange(1, 2).Draw(t, "N"), Groups: rapid.IntRange(1, 2).Draw(t, "groups")}
	g.Cin = g.Groups * c8 * rapid.IntRange(1, 2).Draw(t, "cin/c8")
	g.Cout = g.Groups * c8 * rapid.IntRange(1, 2).Draw(t, "cout/c8")
	r := rapid.IntRange(1, 3).Draw(t, "rank")
	maxIn := []int{0, 60, 20, 9}[r]
	strided := rapid.IntRange(3-r, 2).Draw(t, "strided axis")
	drawAxes(t, g, axes{r: r, kMax: 4, strideMax: 3, forced: strided, padMax: 3, inMax: maxIn})
	return g
}

// TestPhasedKernels checks the kernels that take a wide layout, given the
// phase-plane layout of a strided geometry (phasedOf), against the
// float64 reference: the blocked forward (with bias and ReLU), the wide
// im2col and per-tap GEMM forwards, and the per-tap data and filter
// gradients.
func TestPhasedKernels(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawStridedGeom(rt, 8)
		wd := phasedOf(g)
		x, w, dy := drawOperands(rt, g, randData, "dy")
		want, wantDx, wantDw := reference(x, w, dy, g)
		for _, f := range []struct {
			name string
			run  func(y []float32)
		}{
			{"blockForward", func(y []float32) { blockForward(y, x, w, g, &wd, epilogue{}) }},
			{"colGemmForward", func(y []float32) { colGemmForward(y, x, w, g, &wd) }},
			{"tapGemmForward", func(y []float32) { tapGemmForward(y, x, w, g, &wd) }},
		} {
			y := fill(len(want), 99)
			f.run(y)
			near(rt, f.name+" y", y, want)
		}
		checkEpilogue(rt, "blockForward+epilogue y", g, refForward(x, w, g), func(y []float32, ep epilogue) { blockForward(y, x, w, g, &wd, ep) })

		for _, f := range []struct {
			name         string
			data, filter func(a, b, c []float32, g *Geom, wd *wideGeom)
		}{
			{"tapGemm", tapGemmData, tapGemmFilter},
			{"colGemm", colGemmData, colGemmFilter},
		} {
			dx := fill(len(wantDx), 99)
			f.data(dx, dy, w, g, &wd)
			near(rt, f.name+"Data dx", dx, wantDx)
			dw := fill(len(wantDw), 99)
			f.filter(dw, x, dy, g, &wd)
			near(rt, f.name+"Filter dw", dw, wantDw)
		}
	})
}

// TestStridedExactAdjoint checks ⟨Forward(x,w),u⟩ = ⟨x,Data(u,w)⟩ =
// ⟨w,Filter(x,u)⟩ exactly (dyadic inputs, exact float32 sums) on random
// strided geometries with 8 or 16 channels per group, where Forward takes
// the blocked kernel over phase planes, and the same for the phased
// kernels called directly.
func TestStridedExactAdjoint(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawStridedGeom(rt, 8)
		wd := phasedOf(g)
		e := newExactAdjoint(rt, g, "Filter", Filter)
		x, w, u, y, dx, dw := e.x, e.w, e.u, e.y, e.dx, e.dw
		e.filter("tapGemmFilter", func() { tapGemmFilter(dw, x, u, g, &wd) })
		e.filter("colGemmFilter", func() { colGemmFilter(dw, x, u, g, &wd) })
		e.data("Data", func() { Data(dx, u, w, g) })
		e.data("tapGemmData", func() { tapGemmData(dx, u, w, g, &wd) })
		e.data("colGemmData", func() { colGemmData(dx, u, w, g, &wd) })
		e.forward("Forward", func() { Forward(y, x, w, g) })
		e.forward("blockForward", func() { blockForward(y, x, w, g, &wd, epilogue{}) })
		e.forward("colGemmForward", func() { colGemmForward(y, x, w, g, &wd) })
		e.forward("tapGemmForward", func() { tapGemmForward(y, x, w, g, &wd) })
	})
}

// TestStridedParallel checks that the strided paths give the same bits on
// 1, 2 and 3 goroutines, on geometries large enough to split: a batch of
// two or three and a single image (a stem, a 3×3/2 and a 1×1/2
// convolution), with ForwardBias, Data and Filter, and that they match
// the float64 reference. The inputs are drawn from a fixed seed (the
// geometries are too large for many rapid draws).
func TestStridedParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.IntN(33)-16) / 8
		}
		return v
	}
	for _, g := range []*Geom{
		square(1, 3, 64, 64, 7, 2, 3),
		square(3, 3, 16, 40, 7, 2, 3),
		square(1, 32, 64, 24, 3, 2, 1),
		square(3, 32, 64, 16, 3, 2, 1),
		square(1, 64, 128, 24, 1, 2, 0),
		square(2, 64, 128, 16, 1, 2, 0),
	} {
		x, w, dy := draw(g.N*g.Cin*g.InVol()), draw(g.Cout*g.CinG()*g.KVol()), draw(g.N*g.Cout*g.OutVol())
		bias := draw(g.Cout)
		fwd := func(y, x, w []float32, g *Geom) { ForwardBias(y, x, w, bias, true, g) }
		y1, dx1, dw1 := kernels{"chosen", fwd, Data, Filter}.sameOnThreads(t, g, x, w, dy)
		want, wantDx, wantDw := reference(x, w, dy, g)
		refEpilogue(want, epilogue{bias: bias, relu: true}, g)
		near(t, fmt.Sprintf("%+v: y", *g), y1, want)
		near(t, fmt.Sprintf("%+v: dx", *g), dx1, wantDx)
		near(t, fmt.Sprintf("%+v: dw", *g), dw1, wantDw)
	}
}

// drawPointwiseGeom draws a 1×1 geometry without padding, strides 1 to 3,
// inputs longer than the outputs reach, 8 to 20 channels and batches of
// up to five (so that images go side by side in the columns).
func drawPointwiseGeom(t *rapid.T) *Geom {
	g := &Geom{N: rapid.IntRange(1, 5).Draw(t, "N"), Groups: 1}
	g.Cin = rapid.IntRange(PointwiseMinChannels, 20).Draw(t, "cin")
	g.Cout = rapid.IntRange(PointwiseMinChannels, 20).Draw(t, "cout")
	r := rapid.IntRange(1, 3).Draw(t, "rank")
	maxIn := []int{0, 80, 24, 9}[r]
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
		if a < 3-r {
			continue
		}
		g.Stride[a] = rapid.IntRange(1, 3).Draw(t, "stride")
		g.Dil[a] = rapid.IntRange(1, 2).Draw(t, "dil")
		g.In[a] = rapid.IntRange(1, maxIn).Draw(t, "in")
		g.Out[a] = (g.In[a]-1)/g.Stride[a] + 1
		if cut := rapid.IntRange(0, 1).Draw(t, "cut"); cut == 1 && g.Out[a] > 1 && (g.Out[a]-1)*g.Stride[a] < g.In[a]-1 {
			g.Out[a]--
		}
	}
	return g
}

// TestPointwise checks the pointwise path against the float64 reference
// (outputs pre-filled, so it must overwrite them) and the dot-product
// identities exactly, on random 1×1 geometries, and that Forward, Data and
// Filter choose it.
func TestPointwise(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := drawPointwiseGeom(rt)
		if small(g) {
			rt.Skip("small outputs take the small path")
		}
		if f, d, fl := Paths(g); f != "pointwise" || d != "pointwise" || fl != "pointwise" {
			rt.Fatalf("%+v: paths %s, %s, %s", *g, f, d, fl)
		}
		rc := drawRefCase(rt, g, randData, "dy")
		kernels{"pointwise", pointwiseForward, pointwiseData, pointwiseFilter}.check(rt, rc)
		y := checkEpilogue(rt, "ForwardBias y", g, rc.wantY, func(y []float32, ep epilogue) { ForwardBias(y, rc.x, rc.w, ep.bias, ep.relu, g) })

		xd, wd, u := dyadic(rt, len(rc.x), "xd"), dyadic(rt, len(rc.w), "wd"), dyadic(rt, len(rc.u), "u")
		Forward(y, xd, wd, g)
		dx := make([]float32, len(rc.x))
		Data(dx, u, wd, g)
		dw := make([]float32, len(rc.w))
		Filter(dw, xd, u, g)
		a, b, c := dot64(y, u), dot64(xd, dx), dot64(wd, dw)
		if a != b || b != c {
			rt.Fatalf("%+v: ⟨conv(x,w),u⟩ = %v, ⟨x,convᵀ(u,w)⟩ = %v, ⟨w,convF(x,u)⟩ = %v", *g, a, b, c)
		}
	})
}

// TestColGemmParallel checks that colGemmData splitting the batch over
// goroutines, and colGemmFilter splitting dW's columns, give the same bits
// on two and three goroutines as on one (on random values, whose sums
// depend on their order, and on small integers, whose sums are exact), and
// the reference values, on a stem-like 7×7/2 layer large enough to split.
func TestColGemmParallel(t *testing.T) {
	g := square(4, 8, 16, 20, 7, 2, 3)
	wd := phasedOf(g)
	if work := g.Cin * g.CoutG() * g.KVol() * wd.l; work < 1<<18 {
		t.Fatalf("%+v does not reach forItems' split (%d multiply-adds per image)", *g, work)
	}
	defer flat.SetMaxThreads(flat.SetMaxThreads(2))
	if !colFilterSplits(g, &wd) {
		t.Fatalf("%+v does not reach colGemmFilter's split", *g)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	small := func(n int) []float32 { // small integers: sums exact in float32
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.IntN(17) - 8)
		}
		return v
	}
	x, w, u := small(g.N*g.Cin*g.InVol()), small(g.Cout*g.CinG()*g.KVol()), small(g.N*g.Cout*g.OutVol())
	run := func(threads int) (dx, dw []float32) {
		defer flat.SetMaxThreads(flat.SetMaxThreads(threads))
		dx, dw = fill(len(x), 99), fill(len(w), 99)
		colGemmData(dx, u, w, g, &wd)
		colGemmFilter(dw, x, u, g, &wd)
		return dx, dw
	}
	xr, wr, ur := make([]float32, len(x)), make([]float32, len(w)), make([]float32, len(u))
	for _, v := range [][]float32{xr, wr, ur} {
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
	}
	xi, wi, ui := x, w, u
	var dx1, dw1 []float32
	for _, in := range []struct {
		name    string
		x, w, u []float32
	}{{"normal draws", xr, wr, ur}, {"integers", xi, wi, ui}} {
		x, w, u = in.x, in.w, in.u
		dx1, dw1 = run(1)
		for _, threads := range []int{2, 3} {
			dx, dw := run(threads)
			if !bitwise.Equal(dx, dx1) || !bitwise.Equal(dw, dw1) {
				t.Fatalf("%s: %d goroutines give other bits than one", in.name, threads)
			}
		}
	}
	// x, w, u and dx1, dw1 are the integers' now: their sums are exact.
	wantDx, wantDw := refAdjoints(x, w, u, g)
	for i := range dx1 {
		if float64(dx1[i]) != wantDx[i] {
			t.Fatalf("dx[%d] = %v, reference %v", i, dx1[i], wantDx[i])
		}
	}
	for i := range dw1 {
		if float64(dw1[i]) != wantDw[i] {
			t.Fatalf("dw[%d] = %v, reference %v", i, dw1[i], wantDw[i])
		}
	}
}
