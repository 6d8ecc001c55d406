package conv

// Geometry, the cost rule between the two families, and the exported
// entry points that dispatch to them.

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/vmath"
)

// Geom is a convolution's geometry with the spatial axes padded to three.
// A 1-D or 2-D convolution has leading spatial axes of size 1, with kernel
// 1, stride 1, no padding and dilation 1. Out implies the high-side
// padding, which the kernels do not need.
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

// tap returns the kernel position k0, k1, k2 of tap k, in KVol's row-major
// order.
func (g *Geom) tap(k int) (k0, k1, k2 int) {
	return k / (g.K[1] * g.K[2]), k / g.K[2] % g.K[1], k % g.K[2]
}

// InVol returns the number of input spatial positions.
func (g *Geom) InVol() int { return g.In[0] * g.In[1] * g.In[2] }

// OutVol returns the number of output spatial positions.
func (g *Geom) OutVol() int { return g.Out[0] * g.Out[1] * g.Out[2] }

// The cost rule's thresholds; see UseGemm.
const (
	// GemmMinInner and GemmMinCout are the least inner dimension and
	// output channels per group for GEMM, against the per-row direct
	// loops. The inner dimension is Cin/Groups times the kernel's volume.
	// They apply to strides other than 1, and to stride 1 without AVX-512.
	GemmMinInner = 32
	GemmMinCout  = 8
	// TapGemmMinInner and TapGemmMinCout: the same for stride 1 with
	// AVX-512, against the direct tap kernels.
	TapGemmMinInner = 128
	TapGemmMinCout  = 16
)

// UseGemm is the cost rule between the two families. Outputs of at most
// SmallMaxOut positions always take the direct small path. Even 64→64
// channels on a 2×2 image run faster there than through im2col and a GEMM
// that has four columns. For stride 1 with AVX-512, the direct tap kernels
// stream every plane once per output channel. They are slower than GEMM
// per multiply-add but skip its packing, so GEMM pays only with enough
// depth and rows. BenchmarkKernels measures the crossing: the direct
// kernels lead on few channels, such as 4→4, 4→16 and 8→8, and GEMM from
// 16→32 on. Otherwise the direct kernels are scalar per-row loops or one
// axpy per tap. GEMM takes over at an inner dimension of 32 and 8 output
// channels.
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

// Forward writes y = conv(x, w). The blocked direct kernel blockForward
// runs ahead of both families where it applies. That is stride 1 with
// AVX-512, output channels per group a multiple of 8, and outputs of more
// than SmallMaxOut positions. BenchmarkForwardPaths compares it with the
// GEMM paths and the direct tap kernels on the batch-64 convchain's
// layers.
func Forward(y, x, w []float32, g *Geom) { forward(y, x, w, g, epilogue{}) }

// ForwardBias writes y = conv(x, w) + bias, then y = max(y, 0) if relu.
// The bias has Cout values, added along the channel axis, or is nil for
// none. The blocked kernel starts its sums at the bias and applies ReLU in
// registers before it stores them. The other paths add both in one pass
// over y.
func ForwardBias(y, x, w, bias []float32, relu bool, g *Geom) {
	if bias != nil && len(bias) != g.Cout {
		panic(fmt.Sprintf("conv: ForwardBias: bias has %d values, want Cout = %d", len(bias), g.Cout))
	}
	forward(y, x, w, g, epilogue{bias: bias, relu: relu})
}

func forward(y, x, w []float32, g *Geom, ep epilogue) {
	if usePointwise(g) {
		pointwiseForward(y, x, w, g)
		ep.apply(y, g)
		return
	}
	if useBlock(g) && !small(g) {
		// Any stride: a strided input is split into phase planes first
		// (phasedOf), after which every tap is one contiguous read again.
		wd := phasedOf(g)
		blockForward(y[:g.N*g.Cout*g.OutVol()], x, w, g, &wd, ep)
		return
	}
	switch {
	case useSmallGemm(g):
		smallGemmForward(y, x, w, g)
	case UseGemm(g):
		GemmForward(y, x, w, g)
	default:
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

// Data writes the data gradient dx = convᵀ(dy, w), a transposed
// convolution. As in Forward, the blocked direct kernel blockData runs
// ahead of both families for stride 1 with AVX-512 and input channels per
// group a multiple of 8.
func Data(dx, dy, w []float32, g *Geom) {
	if usePointwise(g) {
		pointwiseData(dx, dy, w, g)
		return
	}
	if wd, ok := wideOf(g); ok && useBlockData(g) && !small(g) {
		blockData(dx[:g.N*g.Cin*g.InVol()], dy, w, g, &wd)
		return
	}
	switch {
	case useSmallGemm(g):
		smallGemmData(dx, dy, w, g)
	case UseGemm(g):
		GemmData(dx, dy, w, g)
	default:
		DirectData(dx, dy, w, g)
	}
}

// Filter writes dw = the filter gradient of conv at x for output cotangent dy.
func Filter(dw, x, dy []float32, g *Geom) {
	switch {
	case usePointwise(g):
		pointwiseFilter(dw, x, dy, g)
	case useSmallGemm(g):
		smallGemmFilter(dw, x, dy, g)
	case UseGemm(g):
		GemmFilter(dw, x, dy, g)
	default:
		DirectFilter(dw, x, dy, g)
	}
}
