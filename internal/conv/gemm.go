package conv

// The GEMM family: im2col or the wide cols and one GEMM, or else tap-GEMM,
// one GEMM per kernel tap over strided views.

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

// GemmForward is Forward by GEMM. For stride 1, colGemmForward makes the
// wide im2col and one GEMM per image. Where that matrix would be too
// large, tapGemmForward makes one GEMM per kernel tap. Other strides take
// im2col and one GEMM.
func GemmForward(y, x, w []float32, g *Geom) {
	if wd, ok := wideOf(g); ok {
		if useCols(g, &wd) {
			colGemmForward(y, x, w, g, &wd)
			return
		}
		tapGemmForward(y, x, w, g, &wd)
		return
	}
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	p := scratch.Get(ck * ov)
	cols := *p
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			im2col(cols, x[(n*g.Cin+grp*cig)*iv:][:cig*iv], g)
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			wg := w[grp*cog*ck:][:cog*ck]
			flat.Gemm(false, false, cog, ov, ck, 1, wg, ck, cols, ov, 0, yg, ov)
		}
	}
	scratch.Put(p)
}

// GemmData is Data by GEMM. For stride 1, tapGemm makes one GEMM per
// kernel tap. For larger strides, colGemmData makes one GEMM and the wide
// col2im over phase planes. Where the wide matrix would exceed
// ColsMaxFloats, plain col2im takes over.
func GemmData(dx, dy, w []float32, g *Geom) {
	gemmGrad(modeData, dy, dx[:g.N*g.Cin*g.InVol()], w, g)
}

// gemmGrad runs GemmData for modeData or GemmFilter for modeFilter, by
// their common choice of path. The operands are in tapLoop's order.
func gemmGrad(mode int, y, x, w []float32, g *Geom) {
	wd, wide := wideOf(g)
	if !wide {
		wd = phasedOf(g)
	}
	cols := !wide && useCols(g, &wd)
	switch {
	case wide && mode == modeData:
		tapGemmData(x, y, w, g, &wd)
	case wide:
		tapGemmFilter(w, x, y, g, &wd)
	case cols && mode == modeData:
		colGemmData(x, y, w, g, &wd)
	case cols:
		colGemmFilter(w, x, y, g, &wd)
	case mode == modeData:
		im2colData(x, y, w, g)
	default:
		im2colFilter(w, x, y, g)
	}
}

// im2colData is GemmData by one GEMM and col2im per image and group.
func im2colData(dx, dy, w []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	clear(dx)
	p := scratch.Get(ck * ov)
	cols := *p
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			dyg := dy[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			wg := w[grp*cog*ck:][:cog*ck]
			flat.Gemm(true, false, ck, ov, cog, 1, wg, ck, dyg, ov, 0, cols, ov)
			col2im(dx[(n*g.Cin+grp*cig)*iv:][:cig*iv], cols, g)
		}
	}
	scratch.Put(p)
}

// GemmFilter is Filter by GEMM. For stride 1, tapGemm makes one GEMM per
// kernel tap. For larger strides, colGemmFilter makes the wide im2col over
// phase planes and one GEMM. Where that matrix would exceed ColsMaxFloats,
// plain im2col takes over.
func GemmFilter(dw, x, dy []float32, g *Geom) {
	dw = dw[:g.Cout*g.CinG()*g.KVol()]
	if g.N == 0 {
		clear(dw)
		return
	}
	gemmGrad(modeFilter, dy, x, dw, g)
}

// im2colFilter is GemmFilter by im2col and one GEMM per image and group,
// for N ≥ 1.
func im2colFilter(dw, x, dy []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	p := scratch.Get(ck * ov)
	cols := *p
	for n := 0; n < g.N; n++ {
		var beta float32
		if n > 0 {
			beta = 1
		}
		for grp := 0; grp < g.Groups; grp++ {
			im2col(cols, x[(n*g.Cin+grp*cig)*iv:][:cig*iv], g)
			dyg := dy[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			dwg := dw[grp*cog*ck:][:cog*ck]
			flat.Gemm(false, true, cog, ck, ov, 1, dyg, ov, cols, ov, beta, dwg, ck)
		}
	}
	scratch.Put(p)
}

// The tap-GEMM kernels, for stride 1 on every axis, need no im2col matrix.
// In the wide layout (see wideGeom) the input that tap k multiplies into
// wide output j of a channel is at j + shift(k) of the channel's plane, so
// for one image and one group
//
//	Y (Cout × l)      = Σ_k W_k (Cout × Cin) · X_k (Cin × l)
//	dX_k (Cin × l)   += W_kᵀ · dY (Cout × l)      (dX_k: the planes at shift(k))
//	dW_k (Cout × Cin) = dY · X_kᵀ
//
// where W_k = w[:, :, k] is repacked tap-major once per call. X_k and dX_k
// are the padded input planes read from offset shift(k), with the plane as
// leading dimension: strided views, not copies. Each line is one GEMM per
// image, group and tap, of depth Cin, Cout and l. So the copy that im2col
// makes and reads back, KVol times the input, is gone.

// packTaps writes w, of shape (Cout, CinG, KVol), tap-major into wt, of
// shape (KVol, Cout, CinG).
func packTaps(wt, w []float32, g *Geom) {
	cig, kv := g.CinG(), g.KVol()
	for co := 0; co < g.Cout; co++ {
		for ci := 0; ci < cig; ci++ {
			src := w[(co*cig+ci)*kv:][:kv]
			for k, v := range src {
				wt[(k*g.Cout+co)*cig+ci] = v
			}
		}
	}
}

// tapGemmForward is GemmForward for stride 1.
func tapGemmForward(y, x, w []float32, g *Geom, wd *wideGeom) {
	iv, ov, kv, l := g.InVol(), g.OutVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	nw := g.Cout * cig * kv
	np, ny := wd.scratchSizes(g.Cin, cog*l)
	ps := scratch.Get(nw + np + ny)
	wt, xp, yw := (*ps)[:nw], (*ps)[nw:nw+np], (*ps)[nw+np:]
	packTaps(wt, w, g)
	for n := 0; n < g.N; n++ {
		xs, pitch := x[n*g.Cin*iv:][:g.Cin*iv], iv
		if wd.padded {
			padPlanes(xp, xs, g, wd, g.Cin)
			xs, pitch = xp, wd.cp
		}
		for grp := 0; grp < g.Groups; grp++ {
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			c, ldc := yg, ov
			if wd.sparse {
				c, ldc = yw, l
			}
			xg := xs[grp*cig*pitch:][:cig*pitch]
			for k := 0; k < kv; k++ {
				k0, k1, k2 := g.tap(k)
				sh := wd.shift(g, k0, k1, k2)
				var beta float32
				if k > 0 {
					beta = 1
				}
				a := wt[(k*g.Cout+grp*cog)*cig:][:cog*cig]
				flat.Gemm(false, false, cog, l, cig, 1, a, cig, xg[sh:], pitch, beta, c, ldc)
			}
			if wd.sparse {
				for co := 0; co < cog; co++ {
					compactPlane(yg[co*ov:][:ov], yw[co*l:][:l], g, wd)
				}
			}
		}
	}
	scratch.Put(ps)
}

// tapGemmData is GemmData for stride 1.
func tapGemmData(dx, dy, w []float32, g *Geom, wd *wideGeom) {
	iv, kv, l := g.InVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	nw := g.Cout * cig * kv
	np, nd := wd.scratchSizes(cig, g.Cout*l)
	ps := scratch.Get(nw + nd + np)
	wt, dyw, dxp := (*ps)[:nw], (*ps)[nw:nw+nd], (*ps)[nw+nd:]
	packTaps(wt, w, g)
	for n := 0; n < g.N; n++ {
		dys, pitch := wd.outputPlanes(dyw, dy, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			dxg := dx[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			acc := dxg
			if wd.padded {
				acc = dxp
			}
			clear(acc)
			dyg := dys[grp*cog*pitch:][:cog*pitch]
			for k := 0; k < kv; k++ {
				k0, k1, k2 := g.tap(k)
				sh := wd.shift(g, k0, k1, k2)
				a := wt[(k*g.Cout+grp*cog)*cig:][:cog*cig]
				flat.Gemm(true, false, cig, l, cog, 1, a, cig, dyg, pitch, 1, acc[sh:], wd.cp)
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

// tapGemmFilter is GemmFilter for stride 1. Per batch item, it makes one
// product per kernel tap, of the wide output cotangent with the input
// shifted by the tap. The products accumulate over the batch into a
// tap-major buffer. The taps' sums are disjoint, so large filters split
// the taps over goroutines with flat.ParallelFor. Each goroutine goes
// through the whole batch for its own taps. So every sum is accumulated in
// the same order on any number of goroutines, and the result has the same
// bits.
func tapGemmFilter(dw, x, dy []float32, g *Geom, wd *wideGeom) {
	kv := g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	nw := g.Cout * cig * kv
	pw := scratch.Get(nw)
	wt := *pw
	b := filterJobs.Get()
	// The product's columns are the larger of the two channel counts:
	// flat.Gemm's widest micro-kernel is 32 columns wide.
	byCin := cig >= cog
	b.Job = filterJob{wt: wt, x: x, dy: dy, g: *g, wd: *wd, byCin: byCin}
	work := g.N * g.Cout * cig * wd.l // multiply-adds per tap
	if kv > 1 && work >= 1<<18 {
		flat.ParallelFor(kv*itemScale, itemScale, b.Run)
	} else {
		b.Job.taps(0, kv)
	}
	filterJobs.Put(b)
	// Unpack tap-major, (KVol, Cout, CinG) or (KVol, CinG, Cout) per group,
	// into (Cout, CinG, KVol).
	cout := g.Cout
	for co := 0; co < cout; co++ {
		grp, cl := co/cog, co%cog
		for ci := 0; ci < cig; ci++ {
			dst := dw[(co*cig+ci)*kv:][:kv]
			for k := range dst {
				if byCin {
					dst[k] = wt[(k*cout+co)*cig+ci]
				} else {
					dst[k] = wt[(k*cout+grp*cog)*cig+ci*cog+cl]
				}
			}
		}
	}
	scratch.Put(pw)
}

// filterJob is one tapGemmFilter call, shared by the goroutines that
// compute its taps.
type filterJob struct {
	wt, x, dy []float32
	g         Geom
	wd        wideGeom
	byCin     bool
}

var filterJobs freelist.Jobs[filterJob, *filterJob]

// Part computes the taps of ParallelFor's range [lo, hi), with itemScale
// indices per tap.
func (j *filterJob) Part(lo, hi int) { j.taps(lo/itemScale, hi/itemScale) }

// taps accumulates the tap-major sums of taps [lo, hi) over the batch.
func (j *filterJob) taps(lo, hi int) {
	g, wd := &j.g, &j.wd
	iv, l := g.InVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, nd := wd.scratchSizes(g.Cin, g.Cout*l)
	ps := scratch.Get(np + nd)
	xp, dyw := (*ps)[:np], (*ps)[np:]
	for n := 0; n < g.N; n++ {
		var beta float32
		if n > 0 {
			beta = 1
		}
		xs, pitch := j.x[n*g.Cin*iv:][:g.Cin*iv], iv
		if wd.padded {
			padPlanes(xp, xs, g, wd, g.Cin)
			xs, pitch = xp, wd.cp
		}
		dys, dpitch := wd.outputPlanes(dyw, j.dy, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			xg := xs[grp*cig*pitch:][:cig*pitch]
			dyg := dys[grp*cog*dpitch:][:cog*dpitch]
			for k := lo; k < hi; k++ {
				k0, k1, k2 := g.tap(k)
				sh := wd.shift(g, k0, k1, k2)
				c := j.wt[(k*g.Cout+grp*cog)*cig:][:cog*cig]
				if j.byCin {
					flat.Gemm(false, true, cog, cig, l, 1, dyg, dpitch, xg[sh:], pitch, beta, c, cig)
				} else {
					flat.Gemm(false, true, cig, cog, l, 1, xg[sh:], pitch, dyg, dpitch, beta, c, cog)
				}
			}
		}
	}
	scratch.Put(ps)
}
