package conv

// The pointwise path: a convolution whose kernel is 1 on every axis, with
// no padding (ResNet's 1×1/2 downsampling, a bottleneck's 1×1), is a
// product over the channels alone,
//
//	Y (Cout × cols) = W (Cout × Cin) · Xs (Cin × cols)
//	dXs = Wᵀ · dY                   dW = dY · Xsᵀ
//
// where Xs holds the input positions the outputs read (every s-th along
// each strided axis), gathered once; there is no im2col matrix and no
// tap loop. Images with few outputs go side by side in the columns (as in
// smallgemm.go) so that each GEMM has enough of them; an image with many
// outputs is one product of its own, read and written in place where the
// stride is 1.

import "github.com/flatkit/flatkit/flat"

// The pointwise thresholds: the least channels on either side, and the
// columns a chunk of images aims for (and the most floats its gathered
// operands may take).
const (
	PointwiseMinChannels = 8
	pointwiseCols        = 256
	pointwiseMaxFloats   = 1 << 20
)

// usePointwise reports whether g takes the pointwise path: kernel 1 on
// every axis, no padding on either side (every output reads an input),
// one group, at least PointwiseMinChannels channels in and out, and more
// outputs than SmallMaxOut (smaller ones take the small path's batched
// GEMM, which is the same product).
func usePointwise(g *Geom) bool {
	if g.Groups != 1 || g.Cin < PointwiseMinChannels || g.Cout < PointwiseMinChannels || small(g) {
		return false
	}
	for a := 0; a < 3; a++ {
		if g.K[a] != 1 || g.PadLo[a] != 0 || (g.Out[a]-1)*g.Stride[a] >= g.In[a] {
			return false
		}
	}
	return true
}

// pointwiseChunk returns how many images go side by side in one product:
// enough for pointwiseCols columns, within pointwiseMaxFloats of gathered
// input and output, at least one. It depends on the geometry alone.
func pointwiseChunk(g *Geom) int {
	ov := g.OutVol()
	nb := min(g.N, max(1, (pointwiseCols+ov-1)/ov))
	for nb > 1 && (g.Cin+g.Cout)*nb*ov > pointwiseMaxFloats {
		nb--
	}
	return nb
}

// unitStride reports whether every stride of g is 1: the outputs then
// read the whole input plane, which needs no gather.
func unitStride(g *Geom) bool { return g.Stride == [3]int{1, 1, 1} }

// gatherPlanes copies, for images [n0, n0+nb) and c channels of a
// (N, c, vol) tensor a, each image's plane into the columns
// [(n−n0)·ov, (n−n0+1)·ov) of row ch of m (c × nb·ov), or back if back.
// With sub, a's planes are input planes and only the positions the
// outputs read are copied (every stride-th), back writing zeros at the
// others; else a's planes have ov values.
func gatherPlanes(m, a []float32, g *Geom, c, n0, nb int, sub, back bool) {
	ov := g.OutVol()
	ld, vol := nb*ov, ov
	if sub {
		vol = g.InVol()
	}
	for n := n0; n < n0+nb; n++ {
		for ch := 0; ch < c; ch++ {
			p, row := a[(n*c+ch)*vol:][:vol], m[ch*ld+(n-n0)*ov:][:ov]
			switch {
			case !sub && back:
				copy(p, row)
			case !sub:
				copy(row, p)
			default:
				subsample(row, p, g, back)
			}
		}
	}
}

// subsample copies the input positions of plane p (InVol) that the
// outputs read into row (OutVol), or back: zeros at the others.
func subsample(row, p []float32, g *Geom, back bool) {
	if back {
		clear(p)
	}
	o := 0
	for o0 := 0; o0 < g.Out[0]; o0++ {
		for o1 := 0; o1 < g.Out[1]; o1++ {
			src := p[(o0*g.Stride[0]*g.In[1]+o1*g.Stride[1])*g.In[2]:]
			strided(row[o:o+g.Out[2]], src, g.Stride[2], back)
			o += g.Out[2]
		}
	}
}

// pointwiseChunks calls chunk for every chunk of images [n0, n0+k) in
// batch order, with ld = k·OutVol columns and two scratch matrices for the
// chunk, Cin × ld (in) and Cout × ld (out), which planes may put to use.
func pointwiseChunks(g *Geom, chunk func(n0, k, ld int, in, out []float32)) {
	ov := g.OutVol()
	nb := pointwiseChunk(g)
	p := scratch.Get((g.Cin + g.Cout) * nb * ov)
	for n0 := 0; n0 < g.N; n0 += nb {
		k := min(nb, g.N-n0)
		ld := k * ov
		chunk(n0, k, ld, (*p)[:g.Cin*ld], (*p)[g.Cin*ld:][:g.Cout*ld])
	}
	scratch.Put(p)
}

// planes returns the c × k·OutVol matrix of images [n0, n0+k) of the
// (N, c, vol) tensor a, input planes if sub (as in gatherPlanes): a's own
// memory where that already is the matrix (one image, and for input planes
// unit strides), with own true; else buf, gathered from a if read.
func planes(buf, a []float32, g *Geom, c, n0, k int, sub, read bool) (m []float32, own bool) {
	if k == 1 && (!sub || unitStride(g)) {
		vol := g.OutVol()
		if sub {
			vol = g.InVol()
		}
		return a[n0*c*vol:][:c*vol], true
	}
	if read {
		gatherPlanes(buf, a, g, c, n0, k, sub, false)
	}
	return buf, false
}

// pointwiseForward is Forward for usePointwise geometries.
func pointwiseForward(y, x, w []float32, g *Geom) { pointwiseProduct(false, y, x, w, g) }

// pointwiseData is Data for usePointwise geometries.
func pointwiseData(dx, dy, w []float32, g *Geom) { pointwiseProduct(true, dx, dy, w, g) }

// pointwiseProduct writes dst = W·src (y = W·x, forward) or, if data,
// Wᵀ·src (dx = Wᵀ·dy), chunk by chunk: the source's planes read, the
// destination's gathered back where the product did not write them in
// place.
func pointwiseProduct(data bool, dst, src, w []float32, g *Geom) {
	// The source's and destination's channels, and whether each is the
	// (subsampled) input side.
	cs, cd, ssub := g.Cin, g.Cout, true
	if data {
		cs, cd, ssub = g.Cout, g.Cin, false
	}
	pointwiseChunks(g, func(n0, k, ld int, in, out []float32) {
		sbuf, dbuf := in, out
		if data {
			sbuf, dbuf = out, in
		}
		ss, _ := planes(sbuf, src, g, cs, n0, k, ssub, true)
		ds, own := planes(dbuf, dst, g, cd, n0, k, !ssub, false)
		flat.Gemm(data, false, cd, ld, cs, 1, w, g.Cin, ss, ld, 0, ds, ld)
		if !own {
			gatherPlanes(ds, dst, g, cd, n0, k, !ssub, true)
		}
	})
}

// pointwiseFilter is Filter for usePointwise geometries: the chunks' products
// accumulate into dw in batch order.
func pointwiseFilter(dw, x, dy []float32, g *Geom) {
	dw = dw[:g.Cout*g.Cin]
	if g.N == 0 {
		clear(dw)
		return
	}
	var beta float32
	pointwiseChunks(g, func(n0, k, ld int, in, out []float32) {
		dys, _ := planes(out, dy, g, g.Cout, n0, k, false, true)
		xs, _ := planes(in, x, g, g.Cin, n0, k, true, true)
		flat.Gemm(false, true, g.Cout, g.Cin, ld, 1, dys, ld, xs, ld, beta, dw, g.Cin)
		beta = 1
	})
}
