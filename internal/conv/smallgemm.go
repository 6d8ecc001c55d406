package conv

// The small path by GEMM: for outputs of at most SmallMaxOut positions
// with many channels (ResNet's last stages: 2×2 to 4×4 planes, 128 to 512
// channels), one GEMM over the whole batch, its images side by side in the
// columns.

import "github.com/flatkit/flatkit/flat"

// The thresholds of useSmallGemm, from BenchmarkSmallPaths (one
// goroutine, AVX-512; µs for forward / data / filter, tables → GEMM):
//
//	n1 4→4 2×2 3×3 (deepchain)    0.2 / 0.4 / 0.3 → 0.9 / 0.7 / 1.1
//	n4 8→8 2×2 3×3                1.9 / 4.5 / 5.8 → 2.5 / 4.3 / 5.8
//	n4 16→16 2×2 3×3              12 / 30 / 77 → 6.5 / 11 / 7.6
//	n1 64→64 2×2 3×3              49 / 78 / 80 → 61 / 20 / 14
//	n16 32→64 8×8 1×1/2           164 / 2330 / 339 → 21 / 106 / 30
//	n16 512→512 3×3 3×3           66400 / 161000 / 140000 → 5700 / 4930 / 4460
//
// The tables win only below 16 output channels; GEMM's packing is paid
// back from 16 channels and an inner dimension of 32 (the 1×1 case), with
// any number of columns (the 64→64 2×2 case loses 20% in the forward pass
// on 4 columns and gains 4-6× in both gradients).
const (
	SmallGemmMinCout  = 16
	SmallGemmMinInner = 32
)

// useSmallGemm reports whether a small geometry takes the batched GEMM
// (smallGemmForward, smallGemmData, smallGemmFilter) rather than the
// tables. It depends on the geometry alone, so the choice is the same on
// every run.
func useSmallGemm(g *Geom) bool {
	return small(g) && g.Groups == 1 && g.Cout >= SmallGemmMinCout && g.Cin*g.KVol() >= SmallGemmMinInner
}

// smallCols fills cols (Cin·KVol × N·OutVol) with the batch's im2col
// matrix: image n's columns are [n·OutVol, (n+1)·OutVol), and the table's
// triples place every input value that a tap multiplies; the rest (the
// padding) is zero.
func smallCols(cols, x []float32, g *Geom, t *smallTable) {
	iv, ov := g.InVol(), g.OutVol()
	ld := g.N * ov
	clear(cols)
	rr, oo, ii := t.rR, t.rO[:len(t.rR)], t.rI[:len(t.rR)]
	for n := 0; n < g.N; n++ {
		xn := x[n*g.Cin*iv:][:g.Cin*iv]
		c := cols[n*ov:]
		for e, r := range rr {
			c[int(r)*ld+int(oo[e])] = xn[ii[e]]
		}
	}
}

// batchCols copies a (N, C, OutVol) tensor into the (C × N·OutVol)
// matrix m, or back if back.
func batchCols(m, a []float32, g *Geom, c int, back bool) {
	ov := g.OutVol()
	ld := g.N * ov
	for n := 0; n < g.N; n++ {
		for ch := 0; ch < c; ch++ {
			src, dst := a[(n*c+ch)*ov:][:ov], m[ch*ld+n*ov:][:ov]
			if back {
				copy(src, dst)
			} else {
				copy(dst, src)
			}
		}
	}
}

// smallGemmScratch takes from scratch the two matrices the small GEMM
// passes work in: cols (Cin·KVol × N·OutVol, the im2col matrix or its
// gradient) and m (Cout × N·OutVol, the output or its gradient), one
// buffer for both; the caller puts p back.
func smallGemmScratch(g *Geom) (cols, m []float32, p *[]float32) {
	ck, l := g.Cin*g.KVol(), g.N*g.OutVol()
	p = scratch.Get(ck*l + g.Cout*l)
	return (*p)[:ck*l], (*p)[ck*l:], p
}

// smallGemmForward is Forward for useSmallGemm geometries: y = W · cols
// for the whole batch, then each image's columns copied to its planes.
// Rows of cols that read only padding (a 3×3 kernel on a 1×1 plane has one
// live tap in nine) are left out when there are any: see
// smallGemmForwardLive.
func smallGemmForward(y, x, w []float32, g *Geom) {
	ck, l := g.Cin*g.KVol(), g.N*g.OutVol()
	t := tableFor(g)
	if len(t.live) < ck {
		smallGemmForwardLive(y, x, w, g, t)
		return
	}
	cols, ym, p := smallGemmScratch(g)
	smallCols(cols, x, g, t)
	flat.Gemm(false, false, g.Cout, l, ck, 1, w, ck, cols, l, 0, ym, l)
	batchCols(ym, y, g, g.Cout, true)
	scratch.Put(p)
}

// smallGemmForwardLive is smallGemmForward over the live rows of cols
// only (t.live, L of them): y = W[:, live] · cols[live, :], the columns of
// W it needs gathered row by row into wc (Cout × L) first. Where few rows
// live (one tap in nine on ResNet-18's 1×1 planes at 16×3×32²) the GEMM
// and its packing of W shrink by the same factor; at 4 of 9 (layer4.0.conv1
// there) the gather costs about what it saves (BenchmarkResNet18Layers,
// COSTS.md). A dead row's products are exact zeros, and a float32 sum is
// unchanged by adding +0 except that −0 + +0 = +0, so y is what the full
// GEMM gives but for the sign of zero sums (and for NaN or Inf weights on
// dead taps, which the full GEMM would spread as 0·Inf = NaN and this one
// ignores, as the convolution's definition does).
func smallGemmForwardLive(y, x, w []float32, g *Geom, t *smallTable) {
	ck, l, L := g.Cin*g.KVol(), g.N*g.OutVol(), len(t.live)
	iv, ov := g.InVol(), g.OutVol()
	if L == 0 { // every tap reads padding
		clear(y[:g.N*g.Cout*ov])
		return
	}
	p := scratch.Get(L*l + g.Cout*l + L*g.Cout)
	cols, ym, wc := (*p)[:L*l], (*p)[L*l:][:g.Cout*l], (*p)[L*l+g.Cout*l:][:L*g.Cout]
	// cols: the live rows of smallCols's matrix.
	clear(cols)
	rl, oo, ii := t.rL, t.rO[:len(t.rL)], t.rI[:len(t.rL)]
	for n := 0; n < g.N; n++ {
		xn := x[n*g.Cin*iv:][:g.Cin*iv]
		c := cols[n*ov:]
		for e, r := range rl {
			c[int(r)*l+int(oo[e])] = xn[ii[e]]
		}
	}
	for co := 0; co < g.Cout; co++ {
		row := w[co*ck : (co+1)*ck]
		dst := wc[co*L : (co+1)*L]
		for q, r := range t.live[:len(dst)] {
			dst[q] = row[r]
		}
	}
	flat.Gemm(false, false, g.Cout, l, L, 1, wc, L, cols, l, 0, ym, l)
	batchCols(ym, y, g, g.Cout, true)
	scratch.Put(p)
}

// smallGemmData is Data for useSmallGemm geometries: dcols = Wᵀ · dY for
// the whole batch, then each input position sums its triples.
func smallGemmData(dx, dy, w []float32, g *Geom) {
	iv, ov, ck := g.InVol(), g.OutVol(), g.Cin*g.KVol()
	l := g.N * ov
	t := tableFor(g)
	dcols, dym, p := smallGemmScratch(g)
	batchCols(dym, dy, g, g.Cout, false)
	flat.Gemm(true, false, ck, l, g.Cout, 1, w, ck, dym, l, 0, dcols, l)
	for n := 0; n < g.N; n++ {
		dxn := dx[n*g.Cin*iv:][:g.Cin*iv]
		c := dcols[n*ov:]
		for i := range dxn {
			rr, oo := t.byIn(i)
			var s float32
			for e, r := range rr {
				s += c[int(r)*l+int(oo[e])]
			}
			dxn[i] = s
		}
	}
	scratch.Put(p)
}

// smallGemmFilter is Filter for useSmallGemm geometries: dW = dY · colsᵀ
// over the whole batch, the batch summed inside the GEMM's depth.
func smallGemmFilter(dw, x, dy []float32, g *Geom) {
	ck, l := g.Cin*g.KVol(), g.N*g.OutVol()
	cols, dym, p := smallGemmScratch(g)
	smallCols(cols, x, g, tableFor(g))
	batchCols(dym, dy, g, g.Cout, false)
	flat.Gemm(false, true, g.Cout, ck, l, 1, dym, l, cols, l, 0, dw[:g.Cout*ck], ck)
	scratch.Put(p)
}
