package conv

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

// The wide im2col forward, for stride 1 on every axis. In the wide layout
// of wideGeom, row r = ci·KVol + k of a group's im2col matrix is the
// channel's plane read from offset shift(k) for l values. That is one
// contiguous copy per row, where the dense im2col makes one per row and
// output row. The product
//
//	Y (CoutG × l) = W (CoutG × CinG·KVol) · cols (CinG·KVol × l)
//
// is then one flat.Gemm of depth CinG·KVol per image and group. The
// tap-GEMM path of tapGemmForward instead makes KVol products of depth
// CinG, each reading and writing all of Y. W is passed transposed, as
// CinG·KVol × CoutG. flat.Gemm packs that by copying runs rather than by
// interleaving rows, once per call of the kernel instead of once per
// image.

// ColsMaxFloats bounds the im2col matrix of the wide forward path, of
// CinG·KVol·l floats, reused across images and groups. Larger ones take
// the tap-GEMM path, which needs no such copy.
const ColsMaxFloats = 1 << 20

// useCols reports whether a stride-1 GEMM forward takes the wide im2col
// path.
func useCols(g *Geom, wd *wideGeom) bool {
	return g.CinG()*g.KVol()*wd.l <= ColsMaxFloats
}

// colGemmForward is GemmForward for stride 1 by a wide im2col and one GEMM
// per image and group.
func colGemmForward(y, x, w []float32, g *Geom, wd *wideGeom) {
	ov, l := g.OutVol(), wd.l
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	nc, nw := ck*l, g.Cout*ck
	np, ny := wd.scratchSizes(g.Cin, cog*l)
	ps := scratch.Get(nc + nw + np + ny)
	cols, wt := (*ps)[:nc], (*ps)[nc:nc+nw]
	xp, yw := (*ps)[nc+nw:nc+nw+np], (*ps)[nc+nw+np:]
	for grp := 0; grp < g.Groups; grp++ {
		transposeTo(wt[grp*cog*ck:][:cog*ck], w[grp*cog*ck:][:cog*ck], cog, ck)
	}
	po, offs, pitch := wd.inputOffsets(g)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			xg := xs[grp*cig*pitch:][:cig*pitch]
			for r, o := range offs {
				copy(cols[r*l:][:l], xg[o:o+l])
			}
			c, ldc := yg, ov
			if wd.sparse {
				c, ldc = yw, l
			}
			flat.Gemm(true, false, cog, l, ck, 1, wt[grp*cog*ck:], cog, cols, l, 0, c, ldc)
			if wd.sparse {
				for co := 0; co < cog; co++ {
					compactPlane(yg[co*ov:][:ov], yw[co*l:][:l], g, wd)
				}
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// transposeTo writes the transpose of a, m × n and row-major, into at, n ×
// m.
func transposeTo(at, a []float32, m, n int) {
	at = at[:m*n]
	for i := 0; i < m; i++ {
		for j, v := range a[i*n:][:n] {
			at[j*m+i] = v
		}
	}
}

// colGemmFilter is Filter by the wide im2col. Per image and group it adds
// dY · colsᵀ into dW, one GEMM of depth l, the images summed in order. dY,
// CoutG × l, is read in the wide layout. It holds zeros at the wide indices
// that are not outputs, so the columns of cols there add nothing. For
// strides above 1 the rows of cols come from phasedOf's phase planes. That
// is one contiguous copy per channel and tap, where im2col gathers every
// s-th value per output row.
//
// Ungrouped, on several goroutines, colFilterJob splits dW's columns
// instead: the rows of cols, by input channel and tap. Each goroutine
// builds only its rows of cols and goes through the whole batch. So every
// sum is accumulated in the same order on any number of goroutines, and
// the bits are the same. Each goroutine pads the input planes and widens
// dY's planes of every image for itself. The pass is bound by those copies
// as much as by its products, so two goroutines save less than half.
// BenchmarkResNet18Layers measures it, and COSTS.md records the figures.
func colGemmFilter(dw, x, dy []float32, g *Geom, wd *wideGeom) {
	l := wd.l
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	dw = dw[:g.Cout*ck]
	if g.N == 0 {
		clear(dw)
		return
	}
	po, offs, pitch := wd.inputOffsets(g)
	if colFilterSplits(g, wd) {
		b := colFilterJobs.Get()
		b.Job = colFilterJob{dw: dw, x: x, dy: dy, g: *g, wd: *wd, offs: offs}
		flat.ParallelFor(ck, 16, b.Run)
		colFilterJobs.Put(b)
		ints.Put(po)
		return
	}
	// The images' products add into dW in order, so they cannot split
	// the batch. Split by flat, each image's product ran slower on two
	// goroutines than on one; COSTS.md records the stride-2 layers'
	// figures. So a grouped batch keeps them on the calling goroutine.
	// One image has nothing else to split.
	nc := ck * l
	np, nd := wd.scratchSizes(g.Cin, g.Cout*l)
	ps := scratch.Get(nc + np + nd)
	cols, xp, dyw := (*ps)[:nc], (*ps)[nc:nc+np], (*ps)[nc+np:]
	gemm := flat.Gemm
	if g.N > 1 {
		gemm = flat.GemmSerial
	}
	for n := 0; n < g.N; n++ {
		var beta float32
		if n > 0 {
			beta = 1
		}
		xs := wd.inputPlanes(xp, x, g, n)
		dys, dpitch := wd.outputPlanes(dyw, dy, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			xg := xs[grp*cig*pitch:][:cig*pitch]
			for r, o := range offs {
				copy(cols[r*l:][:l], xg[o:o+l])
			}
			gemm(false, true, cog, ck, l, 1, dys[grp*cog*dpitch:], dpitch, cols, l, beta, dw[grp*cog*ck:], ck)
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// colFilterSplits reports whether colGemmFilter splits dW's columns over
// goroutines. It needs no groups, two chunks of 16 columns or more, 2^18
// multiply-adds a chunk, and more than one goroutine allowed.
func colFilterSplits(g *Geom, wd *wideGeom) bool {
	ck := g.CinG() * g.KVol()
	return g.Groups == 1 && ck >= 32 && g.N*g.Cout*ck*wd.l >= 1<<19 && flat.MaxThreads() > 1
}

// colFilterJob is one colGemmFilter call split over dW's columns.
type colFilterJob struct {
	dw, x, dy []float32
	g         Geom
	wd        wideGeom
	offs      []int // each row of cols' offset in the input planes
}

var colFilterJobs freelist.Jobs[colFilterJob, *colFilterJob]

// Part computes columns [r0, r1) of dW, which are rows of cols, over the
// whole batch, the images in order.
func (j *colFilterJob) Part(r0, r1 int) {
	if r0 >= r1 {
		return
	}
	g, wd := &j.g, &j.wd
	l, ck := wd.l, g.CinG()*g.KVol()
	nc := (r1 - r0) * l
	np, nd := wd.scratchSizes(g.Cin, g.Cout*l)
	ps := scratch.Get(nc + np + nd)
	cols, xp, dyw := (*ps)[:nc], (*ps)[nc:nc+np], (*ps)[nc+np:]
	for n := 0; n < g.N; n++ {
		var beta float32
		if n > 0 {
			beta = 1
		}
		xs := wd.inputPlanes(xp, j.x, g, n)
		dys, dpitch := wd.outputPlanes(dyw, j.dy, g, n)
		for r, o := range j.offs[r0:r1] {
			copy(cols[r*l:][:l], xs[o:o+l])
		}
		flat.GemmSerial(false, true, g.Cout, r1-r0, l, 1, dys, dpitch, cols, l, beta, j.dw[r0:], ck)
	}
	scratch.Put(ps)
}

// colGemmData is Data by the wide im2col's adjoint. Per image and group it
// computes dcols = Wᵀ · dY, one GEMM of depth CoutG. Then it adds each row
// of dcols into its channel's padded or phase planes at its tap's offset.
// That is one contiguous axpy per channel and tap, the rows in order.
func colGemmData(dx, dy, w []float32, g *Geom, wd *wideGeom) {
	po, offs, _ := wd.inputOffsets(g)
	b := colDataJobs.Get()
	b.Job = colDataJob{dx: dx, dy: dy, w: w, g: *g, wd: *wd, offs: offs}
	forItems(g.N, g.Cin*g.CoutG()*g.KVol()*wd.l, b.Run)
	colDataJobs.Put(b)
	ints.Put(po)
}

// colDataJob is one colGemmData call, shared by the goroutines that
// compute its images. Each image's dx is its own, so forItems splits the
// batch. Each goroutine's products stay on that goroutine, by
// flat.GemmSerial, and every image's sums are the same wherever they run.
// Split per image by flat instead, the products ran slower on two
// goroutines than on one; COSTS.md records the figures.
type colDataJob struct {
	dx, dy, w []float32
	g         Geom
	wd        wideGeom
	offs      []int
}

var colDataJobs freelist.Jobs[colDataJob, *colDataJob]

func (j *colDataJob) Part(lo, hi int) { j.images(lo/itemScale, hi/itemScale) }

// images computes the data gradient of images [n0, n1).
func (j *colDataJob) images(n0, n1 int) {
	g, wd := &j.g, &j.wd
	iv, l := g.InVol(), wd.l
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	nc := ck * l
	np, nd := wd.scratchSizes(cig, g.Cout*l)
	ps := scratch.Get(nc + np + nd)
	cols, dxp, dyw := (*ps)[:nc], (*ps)[nc:nc+np], (*ps)[nc+np:]
	gemm := flat.GemmSerial
	if n0 == 0 && n1 == g.N {
		gemm = flat.Gemm // the batch unsplit: a product may split itself
	}
	for n := n0; n < n1; n++ {
		dys, dpitch := wd.outputPlanes(dyw, j.dy, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			gemm(true, false, ck, l, cog, 1, j.w[grp*cog*ck:], ck, dys[grp*cog*dpitch:], dpitch, 0, cols, l)
			dxg := j.dx[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			acc := dxg
			if wd.padded {
				acc = dxp
			}
			clear(acc)
			for r, o := range j.offs {
				axpy(1, cols[r*l:][:l], acc[o:o+l])
			}
			if wd.padded {
				for ci := 0; ci < cig; ci++ {
					cropPlane(dxg[ci*iv:][:iv], dxp[ci*wd.cp:][:wd.cp], g, wd)
				}
			}
		}
	}
	scratch.Put(ps)
}
