// Package conv holds the raw convolution kernels behind ad's conv family:
// the forward convolution, its data gradient (transposed convolution) and
// its filter gradient, for 1-, 2- and 3-D spatial inputs with stride,
// padding, dilation and groups, in PyTorch's layout:
//
//	x: (N, Cin, spatial…)   w: (Cout, Cin/Groups, k…)   y: (N, Cout, out…)
//
// For stride 1 with AVX-512, Forward and Data first try the blocked direct
// kernels (blockForward, blockData; block.go): with output channels
// (Forward) or input channels (Data) per group a multiple of 8 and outputs
// of more than SmallMaxOut positions, they run ahead of both families below
// on every shape BenchmarkForwardPaths measures, so UseGemm does not
// decide those. Otherwise each operation has two families of
// implementations, chosen by UseGemm:
//
//   - direct (DirectForward, DirectData, DirectFilter): for outputs of at
//     most SmallMaxOut positions (deepchain's 2×2 images), a walk over a
//     cached list of the (tap, output, input) triples that exist, with
//     four channels' sums in registers; for stride 1, whole-plane tap
//     kernels over a "wide" layout of the planes (see wideGeom, taps.go;
//     AVX-512 assembly, else flat's Axpy and Dot); otherwise per-row loops
//     (tapLoop).
//   - GEMM (GemmForward, GemmData, GemmFilter): for stride 1, the forward
//     pass copies a wide im2col matrix (one contiguous row per (channel,
//     tap), see cols.go) and makes one flat.Gemm per image of depth
//     CinG·KVol; the gradients (and forwards whose im2col matrix would
//     exceed ColsMaxFloats) make one flat.Gemm per kernel tap over strided
//     views of the planes, with no im2col matrix; otherwise im2col (or
//     col2im) and one flat.Gemm.
//
// ForwardBias is Forward with a per-channel bias and an optional ReLU: the
// blocked kernel starts its sums at the bias and applies ReLU in registers;
// the other paths add both in one pass. The stride-1 filter gradient splits
// its kernel taps over goroutines, and the blocked kernels split the batch;
// either way every sum keeps its order, so results have the same bits on
// any number of goroutines.
//
// Scratch buffers come from free lists, so the kernels allocate nothing
// once warm.
//
// The package is imported only by ad.
package conv

import (
	"fmt"
	"sync/atomic"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/internal/vmath"
)

// Geom is a convolution's geometry with the spatial axes padded to three:
// a 1-D or 2-D convolution has leading spatial axes of size 1 (kernel 1,
// stride 1, no padding, dilation 1). The high-side padding is implied by
// Out and is not needed by the kernels.
type Geom struct {
	N, Cin, Cout, Groups int
	In, K, Out           [3]int
	Stride, PadLo, Dil   [3]int
}

// CinG returns the input channels per group.
func (g *Geom) CinG() int { return g.Cin / g.Groups }

// CoutG returns the output channels per group.
func (g *Geom) CoutG() int { return g.Cout / g.Groups }

// KVol returns the number of kernel taps.
func (g *Geom) KVol() int { return g.K[0] * g.K[1] * g.K[2] }

// InVol returns the number of input spatial positions.
func (g *Geom) InVol() int { return g.In[0] * g.In[1] * g.In[2] }

// OutVol returns the number of output spatial positions.
func (g *Geom) OutVol() int { return g.Out[0] * g.Out[1] * g.Out[2] }

// The cost rule's thresholds (see UseGemm).
const (
	// GemmMinInner and GemmMinCout: the least inner dimension
	// Cin/Groups·prod(k) and output channels per group for GEMM, for
	// strides other than 1 (or without AVX-512), against the per-row direct
	// loops.
	GemmMinInner = 32
	GemmMinCout  = 8
	// TapGemmMinInner and TapGemmMinCout: the same for stride 1 with
	// AVX-512, against the direct tap kernels.
	TapGemmMinInner = 128
	TapGemmMinCout  = 16
)

// UseGemm is the cost rule between the two families. Outputs of at most
// SmallMaxOut positions always take the direct small path: even 64→64
// channels on a 2×2 image run faster there than through im2col and a GEMM
// that has four columns. For stride 1 with AVX-512, the direct tap
// kernels stream every plane once per output channel at about a third of
// GEMM's speed per multiply-add but without its packing, so GEMM pays only
// with enough depth and rows: BenchmarkKernels has the direct kernels
// ahead on 4→4, 4→16 and 8→8 (2-6× on 16×16 planes) and GEMM ahead from
// 16→32 (batch-64 convchain), 64→64 by far. Otherwise the direct kernels
// are scalar per-row loops or one axpy per tap, and GEMM takes over at an
// inner dimension of 32 and 8 output channels.
func UseGemm(g *Geom) bool {
	inner, cog := g.CinG()*g.KVol(), g.CoutG()
	if small(g) {
		return false
	}
	if _, ok := wideOf(g); ok && haveAVX512 {
		return inner >= TapGemmMinInner && cog >= TapGemmMinCout
	}
	return inner >= GemmMinInner && cog >= GemmMinCout
}

// Forward writes y = conv(x, w). For stride 1 with AVX-512 and output
// channels per group a multiple of 8 (outputs of more than SmallMaxOut
// positions), the blocked direct kernel (blockForward) runs ahead of both
// families: BenchmarkForwardPaths has it 15-45% ahead of the GEMM paths on
// the batch-64 convchain's layers, and ahead of the direct tap kernels on
// its first (1→16).
func Forward(y, x, w []float32, g *Geom) { forward(y, x, w, g, epilogue{}) }

// ForwardBias writes y = conv(x, w) + bias, the bias (Cout values, or nil
// for none) added along the channel axis, then y = max(y, 0) if relu. The
// blocked kernel starts its sums at the bias and applies ReLU in registers
// before it stores them; the other paths add both in one pass over y.
func ForwardBias(y, x, w, bias []float32, relu bool, g *Geom) {
	if bias != nil && len(bias) != g.Cout {
		panic(fmt.Sprintf("conv: ForwardBias: bias has %d values, want Cout = %d", len(bias), g.Cout))
	}
	forward(y, x, w, g, epilogue{bias: bias, relu: relu})
}

func forward(y, x, w []float32, g *Geom, ep epilogue) {
	if wd, ok := wideOf(g); ok && useBlock(g) && !small(g) {
		blockForward(y[:g.N*g.Cout*g.OutVol()], x, w, g, &wd, ep)
		return
	}
	if UseGemm(g) {
		GemmForward(y, x, w, g)
	} else {
		DirectForward(y, x, w, g)
	}
	ep.apply(y, g)
}

// apply adds the bias and applies ReLU to y, channel plane by channel
// plane, for the kernels that do not do it themselves.
func (ep epilogue) apply(y []float32, g *Geom) {
	if ep.bias == nil && !ep.relu {
		return
	}
	ov := g.OutVol()
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			p := y[(n*g.Cout+co)*ov:][:ov]
			if ep.bias != nil {
				b := ep.bias[co]
				for i := range p {
					p[i] += b
				}
			}
			if ep.relu {
				vmath.Relu(p, p)
			}
		}
	}
}

// Data writes dx = convᵀ(dy, w), the data gradient (transposed
// convolution). As in Forward, for stride 1 with AVX-512 and input channels
// per group a multiple of 8, the blocked direct kernel (blockData) runs
// ahead of both families.
func Data(dx, dy, w []float32, g *Geom) {
	if wd, ok := wideOf(g); ok && useBlockData(g) && !small(g) {
		blockData(dx[:g.N*g.Cin*g.InVol()], dy, w, g, &wd)
		return
	}
	if UseGemm(g) {
		GemmData(dx, dy, w, g)
	} else {
		DirectData(dx, dy, w, g)
	}
}

// Filter writes dw = the filter gradient of conv at x for output cotangent dy.
func Filter(dw, x, dy []float32, g *Geom) {
	if UseGemm(g) {
		GemmFilter(dw, x, dy, g)
	} else {
		DirectFilter(dw, x, dy, g)
	}
}

// Modes of tapLoop: which of the three operands is accumulated.
const (
	modeForward = iota // yc += wc ⋆ xc
	modeData           // xc += wc ⋆ᵀ yc
	modeFilter         // wc += xc ⋆ yc
)

// axisRange returns the outputs [lo, hi) along axis a whose input position
// for tap k lies inside the input, and that input position at lo.
func axisRange(g *Geom, a, k int) (lo, hi, i int) {
	off := k*g.Dil[a] - g.PadLo[a] // input position of output 0
	s := g.Stride[a]
	if s == 1 {
		lo, hi = max(-off, 0), min(g.In[a]-off, g.Out[a])
		hi = max(hi, lo)
		return lo, hi, lo + off
	}
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if last := g.In[a] - 1 - off; last >= 0 {
		hi = min(last/s+1, g.Out[a])
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi, lo*s + off
}

// tapLoop runs one (input channel, output channel) pair of the direct
// kernels: for each kernel tap it walks the rows of valid output positions,
// so the innermost loop is a strided axpy (or dot) with no bounds tests.
func tapLoop(g *Geom, mode int, yc, xc, wc []float32) {
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	in1, in2, out1, out2 := g.In[1], g.In[2], g.Out[1], g.Out[2]
	k := 0
	for k0 := 0; k0 < g.K[0]; k0++ {
		lo0, hi0, i0 := axisRange(g, 0, k0)
		for k1 := 0; k1 < g.K[1]; k1++ {
			lo1, hi1, i1 := axisRange(g, 1, k1)
			for k2 := 0; k2 < g.K[2]; k2++ {
				lo2, hi2, i2 := axisRange(g, 2, k2)
				n := hi2 - lo2
				if n <= 0 || hi1 <= lo1 || hi0 <= lo0 {
					k++
					continue
				}
				var acc float32
				wv := wc[k]
				for o0, x0 := lo0, i0; o0 < hi0; o0, x0 = o0+1, x0+s0 {
					for o1, x1 := lo1, i1; o1 < hi1; o1, x1 = o1+1, x1+s1 {
						yr := yc[(o0*out1+o1)*out2+lo2:][:n]
						xb := (x0*in1+x1)*in2 + i2
						xr := xc[xb : xb+(n-1)*s2+1]
						switch {
						case mode == modeForward && s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								yr[j] += wv * xr[j]
							}
						case mode == modeForward:
							for j := range yr {
								yr[j] += wv * xr[j*s2]
							}
						case mode == modeData && s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								xr[j] += wv * yr[j]
							}
						case mode == modeData:
							for j := range yr {
								xr[j*s2] += wv * yr[j]
							}
						case s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								acc += xr[j] * yr[j]
							}
						default:
							for j := range yr {
								acc += xr[j*s2] * yr[j]
							}
						}
					}
				}
				if mode == modeFilter {
					wc[k] += acc
				}
				k++
			}
		}
	}
}

// direct runs tapLoop over every batch item and channel pair.
func direct(mode int, y, x, w []float32, g *Geom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			yc := y[(n*g.Cout+co)*ov:][:ov]
			for ci := 0; ci < cig; ci++ {
				xc := x[(n*g.Cin+grp*cig+ci)*iv:][:iv]
				wc := w[(co*cig+ci)*kv:][:kv]
				tapLoop(g, mode, yc, xc, wc)
			}
		}
	}
}

// DirectForward is Forward by direct loops.
func DirectForward(y, x, w []float32, g *Geom) {
	y = y[:g.N*g.Cout*g.OutVol()]
	if small(g) {
		smallForward(y, x, w, g)
		return
	}
	if wd, ok := wideOf(g); ok {
		wideForward(y, x, w, g, &wd)
		return
	}
	clear(y)
	direct(modeForward, y, x, w, g)
}

// DirectData is Data by direct loops.
func DirectData(dx, dy, w []float32, g *Geom) {
	dx = dx[:g.N*g.Cin*g.InVol()]
	if small(g) {
		smallData(dx, dy, w, g)
		return
	}
	if wd, ok := wideOf(g); ok {
		wideData(dx, dy, w, g, &wd)
		return
	}
	clear(dx)
	direct(modeData, dy, dx, w, g)
}

// DirectFilter is Filter by direct loops.
func DirectFilter(dw, x, dy []float32, g *Geom) {
	dw = dw[:g.Cout*g.CinG()*g.KVol()]
	clear(dw)
	if small(g) {
		smallFilter(dw, x, dy, g)
		return
	}
	if wd, ok := wideOf(g); ok {
		wideFilter(dw, x, dy, g, &wd)
		return
	}
	direct(modeFilter, dy, x, dw, g)
}

// SmallMaxOut is the largest number of output positions for which the
// direct kernels take the small path. On planes this small (deepchain's
// 2×2 images) the vector kernels would work on rows of a few values and a
// dense im2col matrix would be mostly padding, so the small path walks a
// cached list of the (kernel tap, output, input) triples that exist
// (smallTable) and keeps the sums of four output channels in registers.
const SmallMaxOut = 16

// small reports whether g takes the small path.
func small(g *Geom) bool { return g.OutVol() <= SmallMaxOut }

// smallTable lists, for a small geometry, every triple (r, o, i) of a
// group's im2col row r = ci·KVol + k, output position o and input offset
// i = ci·InVol + spatial that the convolution multiplies (taps in the
// padding are left out), three times, sorted for each kernel: by o for the
// forward pass (oR, oI: the rows and inputs of output o at
// oStart[o]:oStart[o+1]), by i for the data gradient (iR, iO) and by r for
// the filter gradient (rO, rI). It depends on the geometry only, not on N.
type smallTable struct {
	key            Geom // the geometry with N = 0
	oStart, oR, oI []int32
	iStart, iR, iO []int32
	rStart, rO, rI []int32
	rR             []int32 // the row of each triple in r order
}

// tables caches the tables of the last few small geometries; entries are
// immutable once published, so concurrent kernels share them.
var (
	tables    [8]atomic.Pointer[smallTable]
	tableNext atomic.Uint32
)

// tableFor returns the table of g, building it on first use.
func tableFor(g *Geom) *smallTable {
	key := *g
	key.N = 0
	for i := range tables {
		if t := tables[i].Load(); t != nil && t.key == key {
			return t
		}
	}
	t := buildTable(g)
	t.key = key
	tables[tableNext.Add(1)%uint32(len(tables))].Store(t)
	return t
}

func buildTable(g *Geom) *smallTable {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	ck := cig * kv
	// The triples in (r, o) order, which is the filter kernel's.
	var rs, os, is []int32
	t := &smallTable{rStart: make([]int32, ck+1)}
	for ci := 0; ci < cig; ci++ {
		for k := 0; k < kv; k++ {
			k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
			r := ci*kv + k
			for o := 0; o < ov; o++ {
				o0, o1, o2 := o/(g.Out[1]*g.Out[2]), o/g.Out[2]%g.Out[1], o%g.Out[2]
				i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
				i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
				i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
				if i0 < 0 || i0 >= g.In[0] || i1 < 0 || i1 >= g.In[1] || i2 < 0 || i2 >= g.In[2] {
					continue
				}
				rs = append(rs, int32(r))
				os = append(os, int32(o))
				is = append(is, int32(ci*iv+(i0*g.In[1]+i1)*g.In[2]+i2))
			}
			t.rStart[r+1] = int32(len(rs))
		}
	}
	t.rO, t.rI, t.rR = os, is, rs
	// Counting sorts by o and by i; stable, so each list stays in r order.
	sortBy := func(key []int32, n int, a, b []int32) (start, sa, sb []int32) {
		start = make([]int32, n+1)
		for _, v := range key {
			start[v+1]++
		}
		for j := 0; j < n; j++ {
			start[j+1] += start[j]
		}
		next := append([]int32(nil), start[:n]...)
		sa, sb = make([]int32, len(key)), make([]int32, len(key))
		for e, v := range key {
			sa[next[v]], sb[next[v]] = a[e], b[e]
			next[v]++
		}
		return start, sa, sb
	}
	t.oStart, t.oR, t.oI = sortBy(os, ov, rs, is)
	t.iStart, t.iR, t.iO = sortBy(is, cig*iv, rs, os)
	return t
}

// smallForward is DirectForward for small outputs: for each output
// position, the sum over its triples, for four output channels at a time.
func smallForward(y, x, w []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	t := tableFor(g)
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			xg := x[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			co := grp * cog
			end := co + cog
			for ; co+4 <= end; co += 4 {
				w0, w1, w2, w3 := w[co*ck:][:ck], w[(co+1)*ck:][:ck], w[(co+2)*ck:][:ck], w[(co+3)*ck:][:ck]
				y0, y1, y2, y3 := y[(n*g.Cout+co)*ov:][:ov], y[(n*g.Cout+co+1)*ov:][:ov], y[(n*g.Cout+co+2)*ov:][:ov], y[(n*g.Cout+co+3)*ov:][:ov]
				for o := range y0 {
					lo, hi := t.oStart[o], t.oStart[o+1]
					rr, ii := t.oR[lo:hi], t.oI[lo:hi]
					ii = ii[:len(rr)]
					var s0, s1, s2, s3 float32
					for e, r := range rr {
						xv := xg[ii[e]]
						s0 += w0[r] * xv
						s1 += w1[r] * xv
						s2 += w2[r] * xv
						s3 += w3[r] * xv
					}
					y0[o], y1[o], y2[o], y3[o] = s0, s1, s2, s3
				}
			}
			for ; co < end; co++ {
				wc := w[co*ck:][:ck]
				yc := y[(n*g.Cout+co)*ov:][:ov]
				for o := range yc {
					lo, hi := t.oStart[o], t.oStart[o+1]
					rr, ii := t.oR[lo:hi], t.oI[lo:hi]
					ii = ii[:len(rr)]
					var s float32
					for e, r := range rr {
						s += wc[r] * xg[ii[e]]
					}
					yc[o] = s
				}
			}
		}
	}
}

// smallData is DirectData for small outputs: for each input position, the
// sum over its triples and over the output channels of its group.
func smallData(dx, dy, w []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	t := tableFor(g)
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			dxg := dx[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			dyg := dy[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			wg := w[grp*cog*ck:][:cog*ck]
			clear(dxg)
			c := 0
			for ; c+4 <= cog; c += 4 {
				w0, w1, w2, w3 := wg[c*ck:][:ck], wg[(c+1)*ck:][:ck], wg[(c+2)*ck:][:ck], wg[(c+3)*ck:][:ck]
				d0, d1, d2, d3 := dyg[c*ov:][:ov], dyg[(c+1)*ov:][:ov], dyg[(c+2)*ov:][:ov], dyg[(c+3)*ov:][:ov]
				for i := range dxg {
					lo, hi := t.iStart[i], t.iStart[i+1]
					rr, oo := t.iR[lo:hi], t.iO[lo:hi]
					oo = oo[:len(rr)]
					var s0, s1, s2, s3 float32
					for e, r := range rr {
						o := oo[e]
						s0 += w0[r] * d0[o]
						s1 += w1[r] * d1[o]
						s2 += w2[r] * d2[o]
						s3 += w3[r] * d3[o]
					}
					dxg[i] += (s0 + s1) + (s2 + s3)
				}
			}
			for ; c < cog; c++ {
				wc, dc := wg[c*ck:][:ck], dyg[c*ov:][:ov]
				for i := range dxg {
					lo, hi := t.iStart[i], t.iStart[i+1]
					rr, oo := t.iR[lo:hi], t.iO[lo:hi]
					oo = oo[:len(rr)]
					var s float32
					for e, r := range rr {
						s += wc[r] * dc[oo[e]]
					}
					dxg[i] += s
				}
			}
		}
	}
}

// smallFilter is DirectFilter for small outputs, adding into a cleared dw:
// for each im2col row, the sum over its triples, for four output channels
// at a time.
func smallFilter(dw, x, dy []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	t := tableFor(g)
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			xg := x[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			co := grp * cog
			end := co + cog
			for ; co+4 <= end; co += 4 {
				d0, d1, d2, d3 := dy[(n*g.Cout+co)*ov:][:ov], dy[(n*g.Cout+co+1)*ov:][:ov], dy[(n*g.Cout+co+2)*ov:][:ov], dy[(n*g.Cout+co+3)*ov:][:ov]
				w0, w1, w2, w3 := dw[co*ck:][:ck], dw[(co+1)*ck:][:ck], dw[(co+2)*ck:][:ck], dw[(co+3)*ck:][:ck]
				// One pass over the triples in row order, flushing the four
				// sums when the row changes: rows have few triples each
				// (deepchain: 0 to 4), too few for a loop per row.
				rr, oo, ii := t.rR, t.rO[:len(t.rR)], t.rI[:len(t.rR)]
				if len(rr) == 0 {
					continue
				}
				cur := rr[0]
				var s0, s1, s2, s3 float32
				for e, r := range rr {
					if r != cur {
						w0[cur] += s0
						w1[cur] += s1
						w2[cur] += s2
						w3[cur] += s3
						s0, s1, s2, s3 = 0, 0, 0, 0
						cur = r
					}
					o := oo[e]
					xv := xg[ii[e]]
					s0 += d0[o] * xv
					s1 += d1[o] * xv
					s2 += d2[o] * xv
					s3 += d3[o] * xv
				}
				w0[cur] += s0
				w1[cur] += s1
				w2[cur] += s2
				w3[cur] += s3
			}
			for ; co < end; co++ {
				dc := dy[(n*g.Cout+co)*ov:][:ov]
				wc := dw[co*ck:][:ck]
				for r := range wc {
					lo, hi := t.rStart[r], t.rStart[r+1]
					oo, ii := t.rO[lo:hi], t.rI[lo:hi]
					ii = ii[:len(oo)]
					var s float32
					for e, o := range oo {
						s += dc[o] * xg[ii[e]]
					}
					wc[r] += s
				}
			}
		}
	}
}

// The wide-plane layout of the direct kernels, for stride 1 on every axis
// (any padding and dilation). Each channel's input is laid out in a plane
// of the padded extent e = In + PadLo + PadHi on every axis (the input
// itself when there is no padding, a zero-padded copy otherwise), and each
// output position (o0, o1, o2) is given the wide index o0·p0 + o1·p1 + o2
// with the plane's pitches p1 = e2, p0 = e1·e2. Then the input value that
// tap k multiplies into the output at wide index j is at j + shift(k) of the
// plane, for every j: one kernel tap over a whole channel is one axpy (or
// dot) of length l, the wide index of the last output + 1, between the
// output and the input plane shifted by shift(k). The wide indices between
// rows (o2 ≥ Out2, and rows o1 ≥ Out1 in 3-D) are outputs that do not
// exist: forward computes them into a scratch plane and drops them
// (compact), and the adjoints read them as zeros (expand).
type wideGeom struct {
	e             [3]int // padded extent per axis
	p0, p1, plane int    // pitches of axes 0 and 1; e0·e1·e2
	l             int    // (Out0−1)·p0 + (Out1−1)·p1 + Out2
	padded        bool   // the input needs a zero-padded copy
	sparse        bool   // wide indices differ from dense ones: l ≠ OutVol
}

// wideOf returns the wide layout of g, or false if a stride is not 1.
func wideOf(g *Geom) (wd wideGeom, ok bool) {
	for a := 0; a < 3; a++ {
		if g.Stride[a] != 1 {
			return wd, false
		}
		wd.e[a] = g.Out[a] + g.Dil[a]*(g.K[a]-1)
		if g.PadLo[a] != 0 || wd.e[a] != g.In[a] {
			wd.padded = true
		}
	}
	wd.p1 = wd.e[2]
	wd.p0 = wd.e[1] * wd.e[2]
	wd.plane = wd.e[0] * wd.p0
	wd.l = (g.Out[0]-1)*wd.p0 + (g.Out[1]-1)*wd.p1 + g.Out[2]
	wd.sparse = wd.l != g.OutVol()
	return wd, true
}

// shift returns the plane offset of the input read by tap (k0, k1, k2).
func (wd *wideGeom) shift(g *Geom, k0, k1, k2 int) int {
	return k0*g.Dil[0]*wd.p0 + k1*g.Dil[1]*wd.p1 + k2*g.Dil[2]
}

// vecMin is the length from which a call into flat's assembly kernels beats
// a Go loop.
const vecMin = 24

// axpy is y += a·x for len(x) ≤ len(y).
func axpy(a float32, x, y []float32) {
	if len(x) >= vecMin {
		flat.Axpy(a, x, y[:len(x)])
		return
	}
	y = y[:len(x)]
	for j, v := range x {
		y[j] += a * v
	}
}

// pitch returns the distance between the input planes the wide kernels
// read: the padded plane's, or the input's own.
func (wd *wideGeom) pitch(g *Geom) int {
	if wd.padded {
		return wd.plane
	}
	return g.InVol()
}

// inputPlanes returns batch item n's input planes in the wide layout: x's
// own, or copied with their padding into xp.
func (wd *wideGeom) inputPlanes(xp, x []float32, g *Geom, n int) []float32 {
	xs := x[n*g.Cin*g.InVol():][:g.Cin*g.InVol()]
	if wd.padded {
		padPlanes(xp, xs, g, wd, g.Cin)
		return xp
	}
	return xs
}

// padPlanes copies c input channels (In each) into zero-padded planes.
func padPlanes(xp, x []float32, g *Geom, wd *wideGeom, c int) {
	iv := g.InVol()
	n0, n1, n2 := min(g.In[0], wd.e[0]-g.PadLo[0]), min(g.In[1], wd.e[1]-g.PadLo[1]), min(g.In[2], wd.e[2]-g.PadLo[2])
	for ch := 0; ch < c; ch++ {
		dst := xp[ch*wd.plane:][:wd.plane]
		src := x[ch*iv:][:iv]
		clear(dst)
		for i0 := 0; i0 < n0; i0++ {
			for i1 := 0; i1 < n1; i1++ {
				d := (i0+g.PadLo[0])*wd.p0 + (i1+g.PadLo[1])*wd.p1 + g.PadLo[2]
				copy(dst[d:d+n2], src[(i0*g.In[1]+i1)*g.In[2]:])
			}
		}
	}
}

// cropPlane is the adjoint of padPlanes for one channel: dx (In) takes the
// values of the padded plane dxp at its positions.
func cropPlane(dx, dxp []float32, g *Geom, wd *wideGeom) {
	n0, n1, n2 := min(g.In[0], wd.e[0]-g.PadLo[0]), min(g.In[1], wd.e[1]-g.PadLo[1]), min(g.In[2], wd.e[2]-g.PadLo[2])
	if n0 < g.In[0] || n1 < g.In[1] || n2 < g.In[2] {
		clear(dx) // inputs that reach no output
	}
	for i0 := 0; i0 < n0; i0++ {
		for i1 := 0; i1 < n1; i1++ {
			d := (i0+g.PadLo[0])*wd.p0 + (i1+g.PadLo[1])*wd.p1 + g.PadLo[2]
			copy(dx[(i0*g.In[1]+i1)*g.In[2]:][:n2], dxp[d:d+n2])
		}
	}
}

// expandPlanes copies c output channels (OutVol each) into wide planes of
// length l with zeros at the wide indices that are not outputs.
func expandPlanes(dyw, dy []float32, g *Geom, wd *wideGeom, c int) {
	ov := g.OutVol()
	for ch := 0; ch < c; ch++ {
		dst := dyw[ch*wd.l:][:wd.l]
		src := dy[ch*ov:][:ov]
		clear(dst)
		o := 0
		for o0 := 0; o0 < g.Out[0]; o0++ {
			for o1 := 0; o1 < g.Out[1]; o1++ {
				copy(dst[o0*wd.p0+o1*wd.p1:][:g.Out[2]], src[o:o+g.Out[2]])
				o += g.Out[2]
			}
		}
	}
}

// expandPlanesAt is expandPlanes into planes of the given pitch, each
// plane's wide index 0 at offset base; the caller clears dst.
func expandPlanesAt(dst, dy []float32, g *Geom, wd *wideGeom, c, pitch, base int) {
	ov := g.OutVol()
	for ch := 0; ch < c; ch++ {
		dc := dst[ch*pitch+base:][:wd.l]
		src := dy[ch*ov:][:ov]
		o := 0
		for o0 := 0; o0 < g.Out[0]; o0++ {
			for o1 := 0; o1 < g.Out[1]; o1++ {
				copy(dc[o0*wd.p0+o1*wd.p1:][:g.Out[2]], src[o:o+g.Out[2]])
				o += g.Out[2]
			}
		}
	}
}

// compactPlane is the inverse of expandPlanes for one channel: y (OutVol)
// takes the outputs of the wide plane acc.
func compactPlane(y, acc []float32, g *Geom, wd *wideGeom) {
	o := 0
	for o0 := 0; o0 < g.Out[0]; o0++ {
		for o1 := 0; o1 < g.Out[1]; o1++ {
			copy(y[o:o+g.Out[2]], acc[o0*wd.p0+o1*wd.p1:])
			o += g.Out[2]
		}
	}
}

// The wide kernels make one tap-kernel call per (batch item, channel): see
// accTaps and dotTaps (taps.go).

// tapOffsets fills offs[ci·KVol+k] with ci·pitch + base + sign·shift(k),
// the plane offsets of every (channel, tap) pair of c channels.
func tapOffsets(offs []int, g *Geom, wd *wideGeom, c, pitch, base, sign int) {
	t := 0
	for ci := 0; ci < c; ci++ {
		for k0 := 0; k0 < g.K[0]; k0++ {
			for k1 := 0; k1 < g.K[1]; k1++ {
				for k2 := 0; k2 < g.K[2]; k2++ {
					offs[t] = ci*pitch + base + sign*wd.shift(g, k0, k1, k2)
					t++
				}
			}
		}
	}
}

// wideForward is DirectForward for stride 1: per (batch item, output
// channel), acc = Σ over (input channel, tap) of the weight times the
// input plane shifted by the tap.
func wideForward(y, x, w []float32, g *Geom, wd *wideGeom) {
	ov, kv, l := g.OutVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, na := 0, 0
	if wd.padded {
		np = g.Cin * wd.plane
	}
	if wd.sparse {
		na = l
	}
	ps := getScratch(np + na)
	xp, acc := (*ps)[:np], (*ps)[np:]
	pitch := wd.pitch(g)
	po := getInts(cig * kv)
	offs := *po
	tapOffsets(offs, g, wd, cig, pitch, 0, 1)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			yc := y[(n*g.Cout+co)*ov:][:ov]
			a := yc
			if wd.sparse {
				a = acc
			}
			a = a[:l]
			clear(a)
			accTaps(a, xs[grp*cig*pitch:][:cig*pitch], offs, w[co*cig*kv:][:cig*kv])
			if wd.sparse {
				compactPlane(yc, acc, g, wd)
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// wideData is DirectData for stride 1: per (batch item, input channel),
// the sum over (output channel, tap) of the weight times the output
// channel's wide plane shifted back by the tap. Each output plane is laid
// out with a margin of zeros as long as the largest shift before it (and
// enough after), so that the shifted reads stay inside.
func wideData(dx, dy, w []float32, g *Geom, wd *wideGeom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	m := wd.shift(g, g.K[0]-1, g.K[1]-1, g.K[2]-1)
	dpitch := wd.plane + m
	nd, np := g.Cout*dpitch, 0
	if wd.padded {
		np = wd.plane
	}
	ps := getScratch(nd + np + cog*kv)
	d, dxp, ws := (*ps)[:nd], (*ps)[nd:nd+np], (*ps)[nd+np:]
	po := getInts(cog * kv)
	offs := *po
	tapOffsets(offs, g, wd, cog, dpitch, m, -1)
	for n := 0; n < g.N; n++ {
		clear(d)
		expandPlanesAt(d, dy[n*g.Cout*ov:][:g.Cout*ov], g, wd, g.Cout, dpitch, m)
		for c := 0; c < g.Cin; c++ {
			grp, ci := c/cig, c%cig
			for cl := 0; cl < cog; cl++ {
				copy(ws[cl*kv:][:kv], w[((grp*cog+cl)*cig+ci)*kv:][:kv])
			}
			dxc := dx[(n*g.Cin+c)*iv:][:iv]
			acc := dxc
			if wd.padded {
				acc = dxp
			}
			acc = acc[:wd.plane]
			clear(acc)
			accTaps(acc, d[grp*cog*dpitch:][:cog*dpitch], offs, ws)
			if wd.padded {
				cropPlane(dxc, acc, g, wd)
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// wideFilter is DirectFilter for stride 1, adding into a cleared dw: per
// (batch item, output channel), the dot products of the output channel's
// wide plane with the input planes shifted by every tap.
func wideFilter(dw, x, dy []float32, g *Geom, wd *wideGeom) {
	ov, kv, l := g.OutVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, nw := 0, 0
	if wd.padded {
		np = g.Cin * wd.plane
	}
	if wd.sparse {
		nw = g.Cout * l
	}
	ps := getScratch(np + nw)
	xp, dyw := (*ps)[:np], (*ps)[np:]
	pitch := wd.pitch(g)
	po := getInts(cig * kv)
	offs := *po
	tapOffsets(offs, g, wd, cig, pitch, 0, 1)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		dys, dpitch := dy[n*g.Cout*ov:][:g.Cout*ov], ov
		if wd.sparse {
			expandPlanes(dyw, dys, g, wd, g.Cout)
			dys, dpitch = dyw, l
		}
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			dotTaps(dw[co*cig*kv:][:cig*kv], dys[co*dpitch:][:l], xs[grp*cig*pitch:][:cig*pitch], offs)
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// ints holds the tap offset lists.
var ints freelist.List[[]int]

func getInts(n int) *[]int {
	p := ints.Get()
	if cap(*p) < n {
		*p = make([]int, n)
	}
	*p = (*p)[:n]
	return p
}

// scratch is a free list rather than a sync.Pool: a pool allocates now and
// then when goroutines move between processors, and empties at each GC.
var scratch freelist.List[[]float32]

func getScratch(n int) *[]float32 {
	p := scratch.Get()
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// colRow holds, per spatial axis, the outputs [lo, hi) whose input for
// one kernel tap lies inside the input, and that input position at lo.
type colRow struct {
	lo0, hi0, i0, lo1, hi1, i1, lo2, hi2, i2 int
}

// tapRanges returns the colRow of tap (k0, k1, k2).
func tapRanges(g *Geom, k0, k1, k2 int) colRow {
	var r colRow
	r.lo0, r.hi0, r.i0 = axisRange(g, 0, k0)
	r.lo1, r.hi1, r.i1 = axisRange(g, 1, k1)
	r.lo2, r.hi2, r.i2 = axisRange(g, 2, k2)
	return r
}

// im2col fills cols (CinG·KVol × OutVol, row-major) from the CinG channels
// of xg, with zeros where a tap falls in the padding: one copy (or strided
// gather) per (channel, tap, output row). The valid ranges of a tap are
// computed once for all channels.
func im2col(cols, xg []float32, g *Geom) {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	out1, out2, in1, in2 := g.Out[1], g.Out[2], g.In[1], g.In[2]
	k := 0
	for k0 := 0; k0 < g.K[0]; k0++ {
		for k1 := 0; k1 < g.K[1]; k1++ {
			for k2 := 0; k2 < g.K[2]; k2++ {
				r := tapRanges(g, k0, k1, k2)
				empty := r.lo2 >= r.hi2 || r.lo1 >= r.hi1 || r.lo0 >= r.hi0
				n := r.hi2 - r.lo2
				for ci := 0; ci < cig; ci++ {
					row := cols[(ci*kv+k)*ov:][:ov]
					if empty {
						clear(row)
						continue
					}
					xc := xg[ci*iv:][:iv]
					o := 0
					for o0 := 0; o0 < g.Out[0]; o0++ {
						if o0 < r.lo0 || o0 >= r.hi0 {
							clear(row[o : o+out1*out2])
							o += out1 * out2
							continue
						}
						x0 := r.i0 + (o0-r.lo0)*s0
						for o1 := 0; o1 < out1; o1++ {
							rr := row[o : o+out2]
							o += out2
							if o1 < r.lo1 || o1 >= r.hi1 {
								clear(rr)
								continue
							}
							x1 := r.i1 + (o1-r.lo1)*s1
							clear(rr[:r.lo2])
							clear(rr[r.hi2:])
							xb := (x0*in1+x1)*in2 + r.i2
							dst := rr[r.lo2:r.hi2]
							switch {
							case s2 == 1 && n >= 8:
								copy(dst, xc[xb:xb+n])
							case s2 == 1:
								src := xc[xb : xb+n]
								for j := range dst {
									dst[j] = src[j]
								}
							default:
								src := xc[xb : xb+(n-1)*s2+1]
								for j := range dst {
									dst[j] = src[j*s2]
								}
							}
						}
					}
				}
				k++
			}
		}
	}
}

// col2im adds cols back into the CinG channels of dxg: the adjoint of
// im2col.
func col2im(dxg, cols []float32, g *Geom) {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	out1, out2, in1, in2 := g.Out[1], g.Out[2], g.In[1], g.In[2]
	k := 0
	for k0 := 0; k0 < g.K[0]; k0++ {
		for k1 := 0; k1 < g.K[1]; k1++ {
			for k2 := 0; k2 < g.K[2]; k2++ {
				r := tapRanges(g, k0, k1, k2)
				if r.lo2 >= r.hi2 || r.lo1 >= r.hi1 || r.lo0 >= r.hi0 {
					k++
					continue
				}
				n := r.hi2 - r.lo2
				for ci := 0; ci < cig; ci++ {
					dc := dxg[ci*iv:][:iv]
					row := cols[(ci*kv+k)*ov:][:ov]
					for o0 := r.lo0; o0 < r.hi0; o0++ {
						x0 := r.i0 + (o0-r.lo0)*s0
						for o1 := r.lo1; o1 < r.hi1; o1++ {
							x1 := r.i1 + (o1-r.lo1)*s1
							src := row[(o0*out1+o1)*out2+r.lo2:][:n]
							xb := (x0*in1+x1)*in2 + r.i2
							if s2 == 1 {
								axpy(1, src, dc[xb:xb+n])
							} else {
								dst := dc[xb : xb+(n-1)*s2+1]
								for j, v := range src {
									dst[j*s2] += v
								}
							}
						}
					}
				}
				k++
			}
		}
	}
}

// GemmForward is Forward by GEMM: for stride 1 by the wide im2col and one
// GEMM per image (colGemmForward), or per kernel tap where that matrix
// would be too large (tapGemmForward); by im2col and one GEMM otherwise.
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
	p := getScratch(ck * ov)
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

// GemmData is Data by GEMM: per kernel tap for stride 1 (tapGemm), by one
// GEMM and col2im otherwise.
func GemmData(dx, dy, w []float32, g *Geom) {
	dx = dx[:g.N*g.Cin*g.InVol()]
	if wd, ok := wideOf(g); ok {
		tapGemmData(dx, dy, w, g, &wd)
		return
	}
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	clear(dx)
	p := getScratch(ck * ov)
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

// GemmFilter is Filter by GEMM: per kernel tap for stride 1 (tapGemm), by
// im2col and one GEMM otherwise.
func GemmFilter(dw, x, dy []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	dw = dw[:g.Cout*ck]
	if g.N == 0 {
		clear(dw)
		return
	}
	if wd, ok := wideOf(g); ok {
		tapGemmFilter(dw, x, dy, g, &wd)
		return
	}
	p := getScratch(ck * ov)
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
// where W_k = w[:, :, k] is repacked once per call (tap-major), and X_k and
// dX_k are the (padded) input planes read from offset shift(k) with the
// plane as leading dimension: strided views, not copies. Each is one GEMM
// per (image, group, tap), of depth Cin, Cout and l: the copy that im2col
// makes (and reads back) of prod(k) times the input is gone.

// packTaps writes w (Cout, CinG, KVol) tap-major into wt (KVol, Cout, CinG).
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
	nw, np, ny := g.Cout*cig*kv, 0, 0
	if wd.padded {
		np = g.Cin * wd.plane
	}
	if wd.sparse {
		ny = cog * l
	}
	ps := getScratch(nw + np + ny)
	wt, xp, yw := (*ps)[:nw], (*ps)[nw:nw+np], (*ps)[nw+np:]
	packTaps(wt, w, g)
	for n := 0; n < g.N; n++ {
		xs, pitch := x[n*g.Cin*iv:][:g.Cin*iv], iv
		if wd.padded {
			padPlanes(xp, xs, g, wd, g.Cin)
			xs, pitch = xp, wd.plane
		}
		for grp := 0; grp < g.Groups; grp++ {
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			c, ldc := yg, ov
			if wd.sparse {
				c, ldc = yw, l
			}
			xg := xs[grp*cig*pitch:][:cig*pitch]
			for k := 0; k < kv; k++ {
				k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
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
	iv, ov, kv, l := g.InVol(), g.OutVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	nw, nd, np := g.Cout*cig*kv, 0, 0
	if wd.sparse {
		nd = g.Cout * l
	}
	if wd.padded {
		np = cig * wd.plane
	}
	ps := getScratch(nw + nd + np)
	wt, dyw, dxp := (*ps)[:nw], (*ps)[nw:nw+nd], (*ps)[nw+nd:]
	packTaps(wt, w, g)
	for n := 0; n < g.N; n++ {
		dys, pitch := dy[n*g.Cout*ov:][:g.Cout*ov], ov
		if wd.sparse {
			expandPlanes(dyw, dys, g, wd, g.Cout)
			dys, pitch = dyw, l
		}
		for grp := 0; grp < g.Groups; grp++ {
			dxg := dx[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			acc := dxg
			if wd.padded {
				acc = dxp
			}
			clear(acc)
			dyg := dys[grp*cog*pitch:][:cog*pitch]
			for k := 0; k < kv; k++ {
				k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
				sh := wd.shift(g, k0, k1, k2)
				a := wt[(k*g.Cout+grp*cog)*cig:][:cog*cig]
				flat.Gemm(true, false, cig, l, cog, 1, a, cig, dyg, pitch, 1, acc[sh:], wd.plane)
			}
			if wd.padded {
				for ci := 0; ci < cig; ci++ {
					cropPlane(dxg[ci*iv:][:iv], dxp[ci*wd.plane:][:wd.plane], g, wd)
				}
			}
		}
	}
	scratch.Put(ps)
}

// tapGemmFilter is GemmFilter for stride 1: per batch item, one product
// per kernel tap of the (wide) output cotangent with the input shifted by
// the tap, accumulated over the batch into a tap-major buffer. The taps'
// sums are disjoint, so large filters split the taps over goroutines
// (flat.ParallelFor), each going through the whole batch for its own taps:
// every sum is accumulated in the same order on any number of goroutines,
// so the result has the same bits.
func tapGemmFilter(dw, x, dy []float32, g *Geom, wd *wideGeom) {
	kv := g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	nw := g.Cout * cig * kv
	pw := getScratch(nw)
	wt := *pw
	j := filterJobs.Get()
	if j.run == nil {
		j.run = j.scaled // bound once: a method value made per call would allocate
	}
	// The product's columns are the larger of the two channel counts:
	// flat.Gemm's widest micro-kernel is 32 columns wide.
	byCin := cig >= cog
	*j = filterJob{run: j.run, wt: wt, x: x, dy: dy, g: *g, wd: *wd, byCin: byCin}
	work := g.N * g.Cout * cig * wd.l // multiply-adds per tap
	if kv > 1 && work >= 1<<18 {
		flat.ParallelFor(kv*itemScale, itemScale, j.run)
	} else {
		j.taps(0, kv)
	}
	*j = filterJob{run: j.run}
	filterJobs.Put(j)
	// Unpack tap-major, (KVol, Cout, CinG) or (KVol, CinG, Cout) per group,
	// into (Cout, CinG, KVol).
	for co := 0; co < g.Cout; co++ {
		grp, cl := co/cog, co%cog
		for ci := 0; ci < cig; ci++ {
			dst := dw[(co*cig+ci)*kv:][:kv]
			for k := range dst {
				if byCin {
					dst[k] = wt[(k*g.Cout+co)*cig+ci]
				} else {
					dst[k] = wt[(k*g.Cout+grp*cog)*cig+ci*cog+cl]
				}
			}
		}
	}
	scratch.Put(pw)
}

// filterJob is one tapGemmFilter call, shared by the goroutines that
// compute its taps.
type filterJob struct {
	run       func(lo, hi int) // j.scaled, bound once per job
	wt, x, dy []float32
	g         Geom
	wd        wideGeom
	byCin     bool
}

var filterJobs freelist.List[filterJob]

// scaled computes the taps of ParallelFor's range [lo, hi) (itemScale
// indices per tap).
func (j *filterJob) scaled(lo, hi int) { j.taps(lo/itemScale, hi/itemScale) }

// taps accumulates the tap-major sums of taps [lo, hi) over the batch.
func (j *filterJob) taps(lo, hi int) {
	g, wd := &j.g, &j.wd
	iv, ov, l := g.InVol(), g.OutVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, nd := 0, 0
	if wd.padded {
		np = g.Cin * wd.plane
	}
	if wd.sparse {
		nd = g.Cout * l
	}
	ps := getScratch(np + nd)
	xp, dyw := (*ps)[:np], (*ps)[np:]
	for n := 0; n < g.N; n++ {
		var beta float32
		if n > 0 {
			beta = 1
		}
		xs, pitch := j.x[n*g.Cin*iv:][:g.Cin*iv], iv
		if wd.padded {
			padPlanes(xp, xs, g, wd, g.Cin)
			xs, pitch = xp, wd.plane
		}
		dys, dpitch := j.dy[n*g.Cout*ov:][:g.Cout*ov], ov
		if wd.sparse {
			expandPlanes(dyw, dys, g, wd, g.Cout)
			dys, dpitch = dyw, l
		}
		for grp := 0; grp < g.Groups; grp++ {
			xg := xs[grp*cig*pitch:][:cig*pitch]
			dyg := dys[grp*cog*dpitch:][:cog*dpitch]
			for k := lo; k < hi; k++ {
				k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
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
