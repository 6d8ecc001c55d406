package conv

// The blocked direct forward, for stride 1 with AVX-512 and output channels
// per group a multiple of 8. In the wide layout of wideGeom, output channel
// co of an image is
//
//	y_co[j] = Σ_t w[co, t]·src[offs[t]+j]   (t = ci·KVol + k, j < l)
//
// with offs[t] = ci·pitch + shift(k). So eight output channels share every
// load of the input. acc8 keeps 8×48 sums in registers while it runs
// through all CinG·KVol taps. It reads each tap's 48 inputs once and
// broadcasts the tap's eight weights. There is no im2col copy and no
// packing: the kernel reads the eight channels' weights in place, as
// eight rows of w; see wblock.

import (
	"slices"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/internal/vmath"
)

// tapSet is a list of tap offsets with its smallest and largest, found
// once. So the kernels check their range per call in constant time,
// instead of in a loop over the offsets.
type tapSet struct {
	offs   []int
	lo, hi int
}

func newTapSet(offs []int) tapSet {
	ts := tapSet{offs: offs}
	if len(offs) > 0 {
		ts.lo, ts.hi = slices.Min(offs), slices.Max(offs)
	}
	return ts
}

// epilogue is what the forward kernels apply to each output channel's sums
// before storing them. A bias of one value per output channel, or nil for
// none, is added first, then ReLU if relu. The blocked kernel does both in
// registers. The others do both in one pass over the output, by
// epilogue.apply.
type epilogue struct {
	bias []float32
	relu bool
}

// block returns the epilogue of the eight output channels from co.
func (ep epilogue) block(co int) epilogue {
	if ep.bias != nil {
		ep.bias = ep.bias[co : co+8]
	}
	return ep
}

// wblock is the weights of acc8's eight rows where they lie: row r's
// weight of tap t is w[r·rs + t·ts]. The forward pass reads a block of
// eight rows of the weight tensor, with rs = CinG·KVol and ts = 1. The
// data gradient reads its own reordering, with rs = 1 and ts = 8.
type wblock struct {
	w      []float32
	rs, ts int
}

// at is row r's weight of tap t.
func (wb wblock) at(r, t int) float32 { return wb.w[r*wb.rs+t*wb.ts] }

// fits reports whether w holds the weights of nt taps.
func (wb wblock) fits(nt int) bool {
	return nt == 0 || wb.rs >= 0 && wb.ts >= 0 && 7*wb.rs+(nt-1)*wb.ts < len(wb.w)
}

// acc8 sets acc[r·ld+j] = bias[r] + Σ_t wb.at(r, t)·src[offs[t]+j] for r < 8
// and j < n, then applies ReLU if ep.relu. Without a bias the sums start at
// zero. With each tap's inputs it prefetches those pf values further on:
// the same tap some channels ahead, as prefetchAhead computes. The hardware
// prefetchers miss the jumps between planes.
func acc8(acc []float32, ld, n int, src []float32, ts tapSet, wb wblock, pf int, ep epilogue) {
	offs := ts.offs
	if n <= 0 {
		return
	}
	if ep.bias != nil && len(ep.bias) < 8 {
		panic("conv: acc8: short bias")
	}
	if len(offs) == 0 {
		acc8Go(acc, ld, n, src, offs, wb, ep)
		return
	}
	if n > ld || len(acc) < 7*ld+n || !wb.fits(len(offs)) {
		panic("conv: acc8: short operand")
	}
	if ts.lo < 0 || ts.hi+n > len(src) {
		panic("conv: acc8: offset out of range")
	}
	if haveAVX512 {
		acc8Asm(acc, ld, n, src, offs, wb, pf, ep)
		return
	}
	acc8Go(acc, ld, n, src, offs, wb, ep)
}

func acc8Go(acc []float32, ld, n int, src []float32, offs []int, wb wblock, ep epilogue) {
	for r := 0; r < 8; r++ {
		a := acc[r*ld:][:n]
		var b float32
		if ep.bias != nil {
			b = ep.bias[r]
		}
		for j := range a {
			a[j] = b
		}
		for t, o := range offs {
			axpy(wb.at(r, t), src[o:o+n], a)
		}
		if ep.relu {
			vmath.Relu(a, a)
		}
	}
}

// acc8c is acc8 storing into rows of dense outputs, by storeTable's tbl.
// For each row r, the 16 sums of columns 16v…16v+15 go to
// acc[r·ld+tbl[4v]+i] for the lanes i in mask tbl[4v+1]. Those in mask
// tbl[4v+3] go to acc[r·ld+tbl[4v+2]+i]. It runs on AVX-512 only.
func acc8c(acc []float32, ld, n, ov int, src []float32, ts tapSet, wb wblock, pf int, tbl []int, ep epilogue) {
	offs := ts.offs
	if n <= 0 || len(offs) == 0 {
		panic("conv: acc8c: empty product")
	}
	if ov > ld || len(acc) < 7*ld+ov || !wb.fits(len(offs)) || len(tbl) < 4*((n+15)/16) || (ep.bias != nil && len(ep.bias) < 8) {
		panic("conv: acc8c: short operand")
	}
	if ts.lo < 0 || ts.hi+n > len(src) {
		panic("conv: acc8c: offset out of range")
	}
	acc8cAsm(acc, ld, n, src, offs, wb, pf, tbl, ep)
}

// storeTable fills tbl with the dense output columns that acc8c stores the
// l wide columns to: 4 entries per vector of 16 wide columns. It reports
// whether every vector's outputs form at most two runs, which holds for
// rows of at least 16 wide columns. tbl's columns are all inside [0,
// OutVol).
func storeTable(tbl []int, g *Geom, wd *wideGeom) bool {
	for v := 0; 16*v < wd.l; v++ {
		e := tbl[4*v:][:4]
		e[0], e[1], e[2], e[3] = 0, 0, 0, 0
		seg := 0
		for i := 0; i < 16 && 16*v+i < wd.l; i++ {
			j := 16*v + i
			o0, rem := j/wd.p0, j%wd.p0
			o1, o2 := rem/wd.p1, rem%wd.p1
			if o1 >= g.Out[1] || o2 >= g.Out[2] {
				continue
			}
			s := (o0*g.Out[1]+o1)*g.Out[2] + o2 - i
			switch {
			case seg > 0 && e[2*(seg-1)] == s:
			case seg < 2:
				e[2*seg] = s
				seg++
			default:
				return false
			}
			e[2*(seg-1)+1] |= 1 << i
		}
	}
	return true
}

// useBlock reports whether a forward takes blockForward. For strides above
// 1 it runs over the phase planes of phasedOf. BenchmarkStridedPaths
// compares that with im2col and one GEMM on ResNet-18's stem and 3×3/2
// convolutions, where blockForward leads.
func useBlock(g *Geom) bool {
	return haveAVX512 && g.CoutG()%8 == 0
}

// blockForward is Forward by acc8 over blocks of eight output channels, in
// the wide layout wd; for strides above 1, phasedOf's. Batch items are
// independent, so flat.ParallelFor splits large batches over goroutines.
// Each item's sums are the same whichever goroutine computes them.
func blockForward(y, x, w []float32, g *Geom, wd *wideGeom, ep epilogue) {
	b := blockJobs.Get()
	ck := g.CinG() * g.KVol()
	pitch := wd.pitch(g)
	nv := (wd.l + 15) / 16
	po := ints.Get(ck + 4*nv)
	offs, tbl := (*po)[:ck], (*po)[ck:]
	tapOffsets(offs, g, wd, g.CinG(), pitch, 0, 1)
	// A sparse layout's sums go straight to their dense positions
	// where acc8c can store them, else through a scratch plane and
	// compactPlane.
	direct := wd.sparse && haveAVX512 && ck > 0 && storeTable(tbl, g, wd)
	// g and wd are copied: storing the caller's pointers in the shared job
	// would move them to the heap on every call.
	// With fewer batch items than goroutines, as in inference on one
	// image, each item's blocks of eight output channels are cut into
	// chunks. One goroutine computes each chunk whole, so the bits do not
	// depend on the cut.
	chunks := 1
	if p := flat.MaxThreads(); g.N < p {
		chunks = max(1, min(g.Cout/8, (p+g.N-1)/g.N))
	}
	b.Job = blockJob{y: y, x: x, w: w[:g.Cout*ck], g: *g, wd: *wd, offs: newTapSet(offs), tbl: tbl, pitch: pitch,
		pf: prefetchAhead(pitch, g.KVol()), direct: direct, ep: ep, chunks: chunks}
	forItems(g.N*chunks, g.Cout*ck*wd.l/chunks, b.Run)
	blockJobs.Put(b)
	ints.Put(po)
}

// blockJob is one blockForward call, shared by the goroutines that compute
// its batch items.
type blockJob struct {
	y, x, w []float32
	g       Geom
	wd      wideGeom
	offs    tapSet
	tbl     []int
	pitch   int
	pf      int // acc8's prefetch distance
	direct  bool
	ep      epilogue
	chunks  int // units of work per batch item: chunks of its 8-channel blocks
}

// prefetchTaps is how many taps ahead the blocked kernels prefetch their
// inputs. It is about 600 cycles of multiply-adds, enough to cover a miss
// to memory when a batch item's planes are read for the first time.
// On the batch-64 convchain's layers, which BenchmarkForwardPaths runs,
// the rate rises up to 4 to 6 channels ahead and falls after.
const prefetchTaps = 48

// prefetchAhead returns acc8's prefetch distance in values: the same tap
// about prefetchTaps taps ahead. The taps are laid out channel by channel,
// kvol taps each, with channels pitch values apart.
func prefetchAhead(pitch, kvol int) int {
	return pitch * ((prefetchTaps + kvol - 1) / kvol)
}

var blockJobs freelist.Jobs[blockJob, *blockJob]

// itemScale is how ParallelFor's index space counts one batch item.
// ParallelFor cuts its range at multiples of 16, for vector passes. So
// batch items are given 16 indices each, and any batch of two or more
// splits.
const itemScale = 16

// forItems runs part, a job's bound Part method, over n independent batch
// items of work multiply-adds each. It splits them over goroutines when
// there is more than one item and each is worth a hand-off, at least 2^18
// multiply-adds. Otherwise part runs on the caller.
func forItems(n, work int, part func(lo, hi int)) {
	if n > 1 && work >= 1<<18 {
		flat.ParallelFor(n*itemScale, itemScale, part)
		return
	}
	part(0, n*itemScale)
}

// Part computes the units of ParallelFor's range [lo, hi).
func (j *blockJob) Part(lo, hi int) { j.items(lo/itemScale, hi/itemScale) }

// items computes units [lo, hi): unit u is chunk u%chunks of batch item
// u/chunks.
func (j *blockJob) items(lo, hi int) {
	g, wd := &j.g, &j.wd
	ov, l := g.OutVol(), wd.l
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	np, ny := wd.scratchSizes(g.Cin, 8*l)
	ps := scratch.Get(np + ny)
	xp, yw := (*ps)[:np], (*ps)[np:]
	nb := g.Cout / 8
	var xs []float32
	last := -1
	for u := lo; u < hi; u++ {
		n, c := u/j.chunks, u%j.chunks
		if n != last {
			xs, last = wd.inputPlanes(xp, j.x, g, n), n
		}
		for co := 8 * (c * nb / j.chunks); co < 8*((c+1)*nb/j.chunks); co += 8 {
			grp := co / cog
			xg := xs[grp*cig*j.pitch:][:cig*j.pitch]
			wb := wblock{w: j.w[co*ck:][:8*ck], rs: ck, ts: 1}
			yb := j.y[(n*g.Cout+co)*ov:][:8*ov]
			ep := j.ep.block(co)
			if j.direct {
				acc8c(yb, ov, l, ov, xg, j.offs, wb, j.pf, j.tbl, ep)
				continue
			}
			if !wd.sparse {
				acc8(yb, ov, l, xg, j.offs, wb, j.pf, ep)
				continue
			}
			acc8(yw, l, l, xg, j.offs, wb, j.pf, ep)
			for r := 0; r < 8; r++ {
				compactPlane(yb[r*ov:][:ov], yw[r*l:][:l], g, wd)
			}
		}
	}
	scratch.Put(ps)
}

// useBlockData reports whether a stride-1 data gradient takes blockData.
func useBlockData(g *Geom) bool {
	return haveAVX512 && g.CinG()%8 == 0
}

// blockData is Data for stride 1 by acc8 over blocks of eight input
// channels. As in wideData, each input channel's wide plane is a sum over
// output channels and taps. Each term is the weight times the output
// channel's plane, laid out with a margin of zeros and shifted back by the
// tap. acc8 shares each load of those planes among eight input channels.
func blockData(dx, dy, w []float32, g *Geom, wd *wideGeom) {
	b := dataJobs.Get()
	kv := g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	m := wd.shift(g, g.K[0]-1, g.K[1]-1, g.K[2]-1)
	nt := cog * kv
	pw := scratch.Get(g.Cin * nt)
	wp := *pw
	// wp holds, per block of eight input channels, the weights of the
	// eight, tap-major over the group's output channel and tap pairs.
	for c := 0; c < g.Cin; c++ {
		b, r := c/8, c%8
		grp, ci := c/cig, c%cig
		for cl := 0; cl < cog; cl++ {
			for k, v := range w[((grp*cog+cl)*cig+ci)*kv:][:kv] {
				wp[(b*nt+cl*kv+k)*8+r] = v
			}
		}
	}
	po := ints.Get(nt)
	offs := *po
	tapOffsets(offs, g, wd, cog, wd.plane+m, m, -1)
	b.Job = dataJob{dx: dx, dy: dy, wp: wp, g: *g, wd: *wd, offs: newTapSet(offs), m: m, pf: prefetchAhead(wd.plane+m, kv)}
	forItems(g.N, g.Cin*nt*wd.plane, b.Run)
	dataJobs.Put(b)
	ints.Put(po)
	scratch.Put(pw)
}

// dataJob is one blockData call, shared by the goroutines that compute its
// batch items.
type dataJob struct {
	dx, dy, wp []float32
	g          Geom
	wd         wideGeom
	offs       tapSet
	m          int
	pf         int // acc8's prefetch distance
}

var dataJobs freelist.Jobs[dataJob, *dataJob]

// Part computes the items of ParallelFor's range [lo, hi).
func (j *dataJob) Part(lo, hi int) { j.items(lo/itemScale, hi/itemScale) }

// items computes the data gradient of batch items [lo, hi).
func (j *dataJob) items(lo, hi int) {
	g, wd, m := &j.g, &j.wd, j.m
	iv, ov := g.InVol(), g.OutVol()
	cig, cog := g.CinG(), g.CoutG()
	dpitch := wd.plane + m
	nt := cog * g.KVol()
	nd, np := g.Cout*dpitch, 0
	if wd.padded {
		np = 8 * wd.plane
	}
	ps := scratch.Get(nd + np)
	d, dxp := (*ps)[:nd], (*ps)[nd:]
	for n := lo; n < hi; n++ {
		clear(d)
		expandPlanesAt(d, j.dy[n*g.Cout*ov:][:g.Cout*ov], g, wd, g.Cout, dpitch, m)
		for c := 0; c < g.Cin; c += 8 {
			grp := c / cig
			src := d[grp*cog*dpitch:][:cog*dpitch]
			wb := wblock{w: j.wp[c*nt:][:8*nt], rs: 1, ts: 8}
			dxb := j.dx[(n*g.Cin+c)*iv:][:8*iv]
			if !wd.padded {
				acc8(dxb, iv, iv, src, j.offs, wb, j.pf, epilogue{})
				continue
			}
			acc8(dxp, wd.plane, wd.plane, src, j.offs, wb, j.pf, epilogue{})
			for r := 0; r < 8; r++ {
				cropPlane(dxb[r*iv:][:iv], dxp[r*wd.plane:][:wd.plane], g, wd)
			}
		}
	}
	scratch.Put(ps)
}
