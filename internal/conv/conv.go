// Package conv holds the raw convolution kernels behind ad's conv family:
// the forward convolution, its data gradient (transposed convolution) and
// its filter gradient, for 1-, 2- and 3-D spatial inputs with stride,
// padding, dilation and groups, in PyTorch's layout:
//
//	x: (N, Cin, spatial…)   w: (Cout, Cin/Groups, k…)   y: (N, Cout, out…)
//
// Each operation has two implementations: direct loops, for small channel
// counts, and im2col followed by flat.Gemm, for a large inner dimension.
// UseGemm is the cost rule that chooses between them. The im2col scratch
// buffers come from a sync.Pool, so the kernels allocate nothing once warm.
//
// The package is imported only by ad.
package conv

import (
	"sync"

	"github.com/flatkit/flatkit/flat"
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

// GemmMinInner is the smallest inner dimension Cin/Groups·prod(k) for which
// UseGemm picks the im2col + GEMM path.
const GemmMinInner = 32

// UseGemm is the cost rule: im2col + GEMM when the inner dimension of the
// product, Cin/Groups·prod(k), is at least GemmMinInner and there is more
// than one output position; the direct loops otherwise. The direct kernel
// does one strided axpy per (channel pair, tap, output row), so its cost per
// multiply-add falls as rows lengthen but it never reaches GEMM's register
// blocking; the im2col copy and GEMM packing cost about Cin/Groups·prod(k)
// per output position once. BenchmarkForward (2-D, 3×3): direct wins at
// Cin·k = 9 and 27 (the convchain layers), GEMM at 36 and above (deepchain's
// 4→4, 8→8, 16→32).
func UseGemm(g *Geom) bool {
	return g.CinG()*g.KVol() >= GemmMinInner && g.OutVol() > 1
}

// Forward writes y = conv(x, w).
func Forward(y, x, w []float32, g *Geom) {
	if UseGemm(g) {
		GemmForward(y, x, w, g)
	} else {
		DirectForward(y, x, w, g)
	}
}

// Data writes dx = convᵀ(dy, w), the data gradient (transposed convolution).
func Data(dx, dy, w []float32, g *Geom) {
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

// visit calls fn(outIndex, inIndex, kIndex) for every (output position,
// kernel tap) pair whose input position lies inside the (unpadded) input,
// with indices relative to one channel's spatial block.
func visit(g *Geom, fn func(o, i, k int)) {
	o := 0
	for o0 := 0; o0 < g.Out[0]; o0++ {
		for o1 := 0; o1 < g.Out[1]; o1++ {
			for o2 := 0; o2 < g.Out[2]; o2++ {
				k := 0
				for k0 := 0; k0 < g.K[0]; k0++ {
					i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
					if i0 < 0 || i0 >= g.In[0] {
						k += g.K[1] * g.K[2]
						continue
					}
					for k1 := 0; k1 < g.K[1]; k1++ {
						i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
						if i1 < 0 || i1 >= g.In[1] {
							k += g.K[2]
							continue
						}
						for k2 := 0; k2 < g.K[2]; k2++ {
							i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
							if i2 >= 0 && i2 < g.In[2] {
								fn(o, (i0*g.In[1]+i1)*g.In[2]+i2, k)
							}
							k++
						}
					}
				}
				o++
			}
		}
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
	clear(y[:g.N*g.Cout*g.OutVol()])
	direct(modeForward, y, x, w, g)
}

// DirectData is Data by direct loops.
func DirectData(dx, dy, w []float32, g *Geom) {
	clear(dx[:g.N*g.Cin*g.InVol()])
	direct(modeData, dy, dx, w, g)
}

// DirectFilter is Filter by direct loops.
func DirectFilter(dw, x, dy []float32, g *Geom) {
	clear(dw[:g.Cout*g.CinG()*g.KVol()])
	direct(modeFilter, dy, x, dw, g)
}

var scratch = sync.Pool{New: func() any { return new([]float32) }}

func getScratch(n int) *[]float32 {
	p := scratch.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// im2col fills cols (CinG·KVol × OutVol, row-major) from the CinG channels
// of xg, with zeros where a tap falls in the padding.
func im2col(cols, xg []float32, g *Geom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	clear(cols)
	for ci := 0; ci < g.CinG(); ci++ {
		xc := xg[ci*iv:][:iv]
		cc := cols[ci*kv*ov:][:kv*ov]
		visit(g, func(o, i, k int) { cc[k*ov+o] = xc[i] })
	}
}

// col2im adds cols back into the CinG channels of dxg.
func col2im(dxg, cols []float32, g *Geom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	for ci := 0; ci < g.CinG(); ci++ {
		dc := dxg[ci*iv:][:iv]
		cc := cols[ci*kv*ov:][:kv*ov]
		visit(g, func(o, i, k int) { dc[i] += cc[k*ov+o] })
	}
}

// GemmForward is Forward by im2col and GEMM.
func GemmForward(y, x, w []float32, g *Geom) {
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

// GemmData is Data by GEMM and col2im.
func GemmData(dx, dy, w []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	dx = dx[:g.N*g.Cin*iv]
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

// GemmFilter is Filter by im2col and GEMM.
func GemmFilter(dw, x, dy []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	dw = dw[:g.Cout*ck]
	if g.N == 0 {
		clear(dw)
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
