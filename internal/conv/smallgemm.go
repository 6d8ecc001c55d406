package conv

// The small path by GEMM: for outputs of at most SmallMaxOut positions
// with many channels (ResNet's last stages: 2×2 to 4×4 planes, 128 to 512
// channels), one GEMM over the whole batch, its images side by side in the
// columns.

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

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

// smallCols fills images [n0, n1) of cols (Cin·KVol × N·OutVol), the
// batch's im2col matrix: image n's columns are [n·OutVol, (n+1)·OutVol),
// and the table's triples place every input value that a tap multiplies;
// the rest (the padding) is zero. With t.rL for rr it fills the matrix of
// the live rows only (smallGemmForwardLive).
func smallCols(cols, x []float32, g *Geom, rr []int32, t *smallTable, n0, n1 int) {
	iv, ov := g.InVol(), g.OutVol()
	ld := g.N * ov
	rows := len(cols) / ld
	for r := 0; r < rows; r++ {
		clear(cols[r*ld+n0*ov : r*ld+n1*ov])
	}
	oo, ii := t.rO[:len(rr)], t.rI[:len(rr)]
	for n := n0; n < n1; n++ {
		xn := x[n*g.Cin*iv:][:g.Cin*iv]
		c := cols[n*ov:]
		for e, r := range rr {
			c[int(r)*ld+int(oo[e])] = xn[ii[e]]
		}
	}
}

// batchCols copies images [n0, n1) of a (N, C, OutVol) tensor into the
// (C × N·OutVol) matrix m, or back if back.
func batchCols(m, a []float32, g *Geom, c int, back bool, n0, n1 int) {
	ov := g.OutVol()
	ld := g.N * ov
	for n := n0; n < n1; n++ {
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

// The small GEMM's passes around its product (building cols, copying
// between the planes and the batch matrices, gathering live weights,
// summing dcols into dx) are copies over independent images or weight
// rows: smallPass runs one over goroutines when it moves at least
// smallPassMin values, so that on two goroutines they do not stay serial
// around the split product. They only move values (or sum each one in a
// fixed order), so the bits do not depend on the split.
const smallPassMin = 1 << 15

const (
	passCols      = iota // smallCols of images: cols ← x
	passLiveCols         // the same over the live rows only
	passToBatch          // batchCols of images: m ← a
	passFromBatch        // batchCols back: a ← m
	passGather           // rows of wc ← W's live columns
	passDataSum          // dx of images ← sums over dcols
)

// smallJob is one small-GEMM pass, shared by the goroutines that run it.
type smallJob struct {
	run  func(lo, hi int) // j.scaled, bound once per job
	pass int
	g    Geom
	t    *smallTable
	m, a []float32 // the matrix and the tensor (cols and x, ym and y, wc and w, dcols and dx)
	c    int       // channels of a (batchCols)
}

var smallJobs freelist.List[smallJob]

// smallPass runs pass over its units (images, or rows of W for
// passGather), each moving per values, split over goroutines when they
// add up to smallPassMin or more.
func smallPass(pass int, g *Geom, t *smallTable, m, a []float32, c int) {
	units, per := g.N, 0
	switch pass {
	case passCols:
		per = g.Cin * g.KVol() * g.OutVol()
	case passLiveCols:
		per = len(t.live) * g.OutVol()
	case passToBatch, passFromBatch:
		per = c * g.OutVol()
	case passGather:
		units, per = g.Cout, len(t.live)
	case passDataSum:
		per = len(t.iR)
	}
	j := smallJobs.Get()
	if j.run == nil {
		j.run = j.scaled // bound once: a method value made per call would allocate
	}
	*j = smallJob{run: j.run, pass: pass, g: *g, t: t, m: m, a: a, c: c}
	if units > 1 && units*per >= smallPassMin && flat.MaxThreads() > 1 {
		minUnits := max(1, smallPassMin/2/max(per, 1))
		flat.ParallelFor(units*itemScale, minUnits*itemScale, j.run)
	} else {
		j.units(0, units)
	}
	*j = smallJob{run: j.run}
	smallJobs.Put(j)
}

func (j *smallJob) scaled(lo, hi int) { j.units(lo/itemScale, hi/itemScale) }

// units runs j's pass on units [lo, hi).
func (j *smallJob) units(lo, hi int) {
	g, t := &j.g, j.t
	switch j.pass {
	case passCols:
		smallCols(j.m, j.a, g, t.rR, t, lo, hi)
	case passLiveCols:
		smallCols(j.m, j.a, g, t.rL, t, lo, hi)
	case passToBatch:
		batchCols(j.m, j.a, g, j.c, false, lo, hi)
	case passFromBatch:
		batchCols(j.m, j.a, g, j.c, true, lo, hi)
	case passGather:
		ck, L := g.Cin*g.KVol(), len(t.live)
		for co := lo; co < hi; co++ {
			row := j.a[co*ck : (co+1)*ck]
			dst := j.m[co*L : (co+1)*L]
			for q, r := range t.live[:len(dst)] {
				dst[q] = row[r]
			}
		}
	case passDataSum:
		iv, ov := g.InVol(), g.OutVol()
		l := g.N * ov
		for n := lo; n < hi; n++ {
			dxn := j.a[n*g.Cin*iv:][:g.Cin*iv]
			c := j.m[n*ov:]
			for i := range dxn {
				rr, oo := t.byIn(i)
				var s float32
				for e, r := range rr {
					s += c[int(r)*l+int(oo[e])]
				}
				dxn[i] = s
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
	smallPass(passCols, g, t, cols, x, 0)
	flat.Gemm(false, false, g.Cout, l, ck, 1, w, ck, cols, l, 0, ym, l)
	smallPass(passFromBatch, g, t, ym, y, g.Cout)
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
	l, L := g.N*g.OutVol(), len(t.live)
	ov := g.OutVol()
	if L == 0 { // every tap reads padding
		clear(y[:g.N*g.Cout*ov])
		return
	}
	p := scratch.Get(L*l + g.Cout*l + L*g.Cout)
	cols, ym, wc := (*p)[:L*l], (*p)[L*l:][:g.Cout*l], (*p)[L*l+g.Cout*l:][:L*g.Cout]
	smallPass(passLiveCols, g, t, cols, x, 0)
	smallPass(passGather, g, t, wc, w, 0)
	flat.Gemm(false, false, g.Cout, l, L, 1, wc, L, cols, l, 0, ym, l)
	smallPass(passFromBatch, g, t, ym, y, g.Cout)
	scratch.Put(p)
}

// smallGemmData is Data for useSmallGemm geometries: dcols = Wᵀ · dY for
// the whole batch, then each input position sums its triples.
func smallGemmData(dx, dy, w []float32, g *Geom) {
	ck := g.Cin * g.KVol()
	l := g.N * g.OutVol()
	t := tableFor(g)
	dcols, dym, p := smallGemmScratch(g)
	smallPass(passToBatch, g, t, dym, dy, g.Cout)
	flat.Gemm(true, false, ck, l, g.Cout, 1, w, ck, dym, l, 0, dcols, l)
	smallPass(passDataSum, g, t, dcols, dx, 0)
	scratch.Put(p)
}

// smallGemmFilter is Filter for useSmallGemm geometries: dW = dY · colsᵀ
// over the whole batch, the batch summed inside the GEMM's depth.
func smallGemmFilter(dw, x, dy []float32, g *Geom) {
	ck, l := g.Cin*g.KVol(), g.N*g.OutVol()
	t := tableFor(g)
	cols, dym, p := smallGemmScratch(g)
	smallPass(passCols, g, t, cols, x, 0)
	smallPass(passToBatch, g, t, dym, dy, g.Cout)
	flat.Gemm(false, true, g.Cout, ck, l, 1, dym, l, cols, l, 0, dw[:g.Cout*ck], ck)
	scratch.Put(p)
}
