package conv

// The small path by GEMM serves outputs of at most SmallMaxOut positions
// with many channels, such as ResNet's last stages. It makes one GEMM over
// the whole batch, its images side by side in the columns.

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

// The thresholds of useSmallGemm. BenchmarkSmallPaths measures the tables
// against the batched GEMM, and COSTS.md records its figures. The tables
// win only below 16 output channels. GEMM's packing is paid back from 16
// channels and an inner dimension of 32, with any number of columns.
const (
	SmallGemmMinCout  = 16
	SmallGemmMinInner = 32
)

// useSmallGemm reports whether a small geometry takes the batched GEMM of
// smallGemmForward, smallGemmData and smallGemmFilter rather than the
// tables. It depends on the geometry alone, so the choice is the same on
// every run.
func useSmallGemm(g *Geom) bool {
	return small(g) && g.Groups == 1 && g.Cout >= SmallGemmMinCout && g.Cin*g.KVol() >= SmallGemmMinInner
}

// smallCols fills rows [q0, q1) and images [n0, n1) of cols, the batch's
// im2col matrix. cols is Cin·KVol × N·OutVol, or L × N·OutVol over the
// live rows. Image n's columns are [n·OutVol, (n+1)·OutVol). The table's
// triples place every input value that a tap multiplies; the rest, the
// padding, is zero. Row q of cols is im2col row live[q] when live is
// given, else row q. smallCols writes each row's part from start to end,
// since the triples of a row are in output order.
func smallCols(cols, x []float32, g *Geom, t *smallTable, live []int32, q0, q1, n0, n1 int) {
	iv, ov := g.InVol(), g.OutVol()
	ld := g.N * ov
	civ := g.Cin * iv
	for q := q0; q < q1; q++ {
		r := q
		if live != nil {
			r = int(live[q])
		}
		dst := cols[q*ld : (q+1)*ld]
		oo, ii := t.byRow(r)
		if len(oo) < ov {
			clear(dst[n0*ov : n1*ov])
		}
		for n := n0; n < n1; n++ {
			xn := x[n*civ : (n+1)*civ]
			d := dst[n*ov : (n+1)*ov]
			for e, o := range oo {
				d[o] = xn[ii[e]]
			}
		}
	}
}

// batchCols copies images [n0, n1) of a tensor of shape (N, C, OutVol)
// into the C × N·OutVol matrix m, or back if back.
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

// The small GEMM's passes around its product are copies over independent
// images or weight rows. They build cols, copy between the planes and the
// batch matrices, gather live weights and sum dcols into dx. smallPass
// runs one over goroutines when it moves at least smallPassMin values. So
// on two goroutines the passes do not stay serial around the split
// product. They only move values, or sum each one in a fixed order, so the
// bits do not depend on the split.
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
	pass int
	g    Geom
	t    *smallTable
	m, a []float32 // the matrix and the tensor (cols and x, ym and y, wc and w, dcols and dx)
	c    int       // channels of a (batchCols)
}

var smallJobs freelist.Jobs[smallJob, *smallJob]

// smallPass runs pass over its units, each moving per values. It splits
// them over goroutines when they add up to smallPassMin or more. The units
// are rows of cols for the cols passes, rows of W for passGather, and
// images otherwise.
func smallPass(pass int, g *Geom, t *smallTable, m, a []float32, c int) {
	units, per := g.N, 0
	switch pass {
	case passCols:
		units, per = g.Cin*g.KVol(), g.N*g.OutVol()
	case passToBatch, passFromBatch:
		per = c * g.OutVol()
	case passGather:
		units, per = g.Cout, len(t.live)
	case passDataSum:
		per = len(t.iR)
	}
	b := smallJobs.Get()
	b.Job = smallJob{pass: pass, g: *g, t: t, m: m, a: a, c: c}
	if units > 1 && units*per >= smallPassMin && flat.MaxThreads() > 1 {
		minUnits := max(1, smallPassMin/2/max(per, 1))
		flat.ParallelFor(units*itemScale, minUnits*itemScale, b.Run)
	} else {
		b.Job.units(0, units)
	}
	smallJobs.Put(b)
}

func (j *smallJob) Part(lo, hi int) { j.units(lo/itemScale, hi/itemScale) }

// units runs j's pass on units [lo, hi).
func (j *smallJob) units(lo, hi int) {
	g, t := &j.g, j.t
	switch j.pass {
	case passCols:
		smallCols(j.m, j.a, g, t, nil, lo, hi, 0, g.N)
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
// passes work in, one buffer for both. cols is the im2col matrix or its
// gradient, of Cin·KVol × N·OutVol. m is the output or its gradient, of
// Cout × N·OutVol. The caller puts p back.
func smallGemmScratch(g *Geom) (cols, m []float32, p *[]float32) {
	ck, l := g.Cin*g.KVol(), g.N*g.OutVol()
	p = scratch.Get(ck*l + g.Cout*l)
	return (*p)[:ck*l], (*p)[ck*l:], p
}

// smallGemmForward is Forward for useSmallGemm geometries: y = W · cols
// for the whole batch, then each image's columns copied to its planes.
// Some rows of cols may read only padding: a 3×3 kernel on a 1×1 plane
// has one live tap in nine. Those rows are left out, and W's live columns
// are first gathered row by row into wc, of Cout × L. Where few rows live,
// the GEMM and its packing of W shrink by the same factor. Where about
// half live, the gather costs about what it saves. BenchmarkResNet18Layers
// measures both cases, and COSTS.md records the figures. A dead row's
// products are exact zeros. A float32 sum is unchanged by adding +0,
// except that −0 + +0 = +0. So y is what the full GEMM gives, but for the
// sign of zero sums. NaN or Inf weights on dead taps differ too: the full
// GEMM would spread them as 0·Inf = NaN, and this one ignores them, as the
// convolution's definition does.
//
// On several goroutines, forItems splits the batch. Each goroutine builds
// its images' columns of cols, multiplies them with flat.GemmSerial and
// copies them to its images' planes. So each core works on the part of the
// matrices it wrote. Each goroutine then packs all of W. That costs more
// than the product where W has many more rows, the output channels, than
// cols has columns. ResNet's last stages on small inputs are such a case.
// There smallFwdJob.rows splits the output channels instead. Each
// goroutine builds all of cols, which is small, in its own buffer and
// multiplies its rows of W. Every element's sum is the same whichever
// product computes it. So the bits are the same on any number of
// goroutines and for either split.
func smallGemmForward(y, x, w []float32, g *Geom) {
	ck, l, ov := g.Cin*g.KVol(), g.N*g.OutVol(), g.OutVol()
	t := tableFor(g)
	K, a, live := ck, w, []int32(nil)
	var pw *[]float32
	if L := len(t.live); L < ck {
		if L == 0 { // every tap reads padding
			clear(y[:g.N*g.Cout*ov])
			return
		}
		pw = scratch.Get(g.Cout * L)
		smallPass(passGather, g, t, *pw, w, 0)
		K, a, live = L, *pw, t.live
	}
	b := smallFwdJobs.Get()
	b.Job = smallFwdJob{g: *g, t: t, live: live, K: K, a: a, x: x, y: y}
	if smallFwdByRows(g, K) {
		// each goroutine builds cols and its rows of the product in a
		// buffer of its own (rows)
		b.Job.byRows = true
		flat.ParallelFor(g.Cout, smallRowsChunk, b.Run)
	} else {
		p := scratch.Get(K*l + g.Cout*l)
		b.Job.cols, b.Job.ym = (*p)[:K*l], (*p)[K*l:][:g.Cout*l]
		forItems(g.N, g.Cout*K*ov, b.Run)
		scratch.Put(p)
	}
	smallFwdJobs.Put(b)
	if pw != nil {
		scratch.Put(pw)
	}
}

// smallFwdJob is one smallGemmForward call, shared by the goroutines that
// compute its images.
type smallFwdJob struct {
	byRows   bool // split by output channels (rows), not images
	g        Geom
	t        *smallTable
	live     []int32
	K        int       // the product's depth: Cin·KVol, or the live rows
	a        []float32 // W, or its live columns (Cout × K)
	x, y     []float32
	cols, ym []float32
}

var smallFwdJobs freelist.Jobs[smallFwdJob, *smallFwdJob]

// smallGemmForward splits by output channels where there are at least
// smallRowsMinRatio times as many as columns, in chunks of multiples of
// smallRowsChunk channels (ParallelFor's).
const (
	smallRowsMinRatio = 2
	smallRowsChunk    = 16
)

// smallFwdByRows reports whether smallGemmForward splits g's output
// channels over goroutines rather than its images, for a product of depth
// K. It needs more than one goroutine, two chunks of channels, 2^18
// multiply-adds, and at least smallRowsMinRatio times as many channels as
// columns.
func smallFwdByRows(g *Geom, K int) bool {
	l := g.N * g.OutVol()
	return g.Cout >= smallRowsMinRatio*l && g.Cout >= 2*smallRowsChunk && g.Cout*K*l >= 1<<18 && flat.MaxThreads() > 1
}

// Part computes output channels [lo, hi) when split by rows, or else the
// images of ParallelFor's range [lo, hi).
func (j *smallFwdJob) Part(lo, hi int) {
	if !j.byRows {
		lo, hi = lo/itemScale, hi/itemScale
	}
	if lo >= hi {
		return
	}
	if j.byRows {
		j.rows(lo, hi)
	} else {
		j.images(lo, hi)
	}
}

// rows computes output channels [c0, c1) of every image, with all of cols
// built in a buffer of its own. The range is not empty.
func (j *smallFwdJob) rows(c0, c1 int) {
	g := &j.g
	ov := g.OutVol()
	l := g.N * ov
	p := scratch.Get(j.K*l + (c1-c0)*l)
	cols, ym := (*p)[:j.K*l], (*p)[j.K*l:]
	smallCols(cols, j.x, g, j.t, j.live, 0, j.K, 0, g.N)
	flat.GemmSerial(false, false, c1-c0, l, j.K, 1, j.a[c0*j.K:], j.K, cols, l, 0, ym, l)
	for n := range g.N {
		for c := c0; c < c1; c++ {
			copy(j.y[(n*g.Cout+c)*ov:][:ov], ym[(c-c0)*l+n*ov:][:ov])
		}
	}
	scratch.Put(p)
}

// images computes the outputs of images [n0, n1) (not empty).
func (j *smallFwdJob) images(n0, n1 int) {
	g := &j.g
	ov := g.OutVol()
	l := g.N * ov
	smallCols(j.cols, j.x, g, j.t, j.live, 0, j.K, n0, n1)
	if n0 == 0 && n1 == g.N {
		// the batch unsplit: the product may split itself
		flat.Gemm(false, false, g.Cout, l, j.K, 1, j.a, j.K, j.cols, l, 0, j.ym, l)
	} else {
		flat.GemmSerial(false, false, g.Cout, (n1-n0)*ov, j.K, 1, j.a, j.K, j.cols[n0*ov:], l, 0, j.ym[n0*ov:], l)
	}
	batchCols(j.ym, j.y, g, g.Cout, true, n0, n1)
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
