package ad

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/internal/geom"
)

// Pooling over the spatial axes of an (N, C, spatial…) tensor, with one,
// two or three spatial axes.
//
// MaxPool saves the argmax of each window as a flat index into its input,
// so its rules are index ops: the tangent is Gather-ed from the chosen
// positions and the cotangent is scattered back to them (MaxPoolScatter, a
// ScatterAdd that knows each index stays in its plane); since those two
// are each other's adjoints, derivatives of any order compose.
//
// MeanPool (and AdaptiveMeanPool) is a linear primitive whose VJP is its
// transpose ("MeanPoolT", "AdaptiveMeanPoolT": spreading each output evenly
// back over its window), whose VJP is the pool again; each one's JVP
// applies itself to the tangent.
//
// Attributes. MaxPool and MeanPool: [d, kernel[d], stride[d], padLo[d],
// padHi[d]]; AdaptiveMeanPool: [d, outSize[d], 0…] of the same length. The
// transposes append the spatial shape of their output (the pooled tensor's
// input).

// maxPoolDims bounds the number of spatial axes.
const maxPoolDims = 3

// PoolGeom is the geometry of a pooling window over the spatial axes, in
// the axis order of the input. Kernel is required, one entry per spatial
// axis. The other fields follow ConvGeom's rule: each holds one value per
// spatial axis, or a single value used for every axis, or is empty for the
// default. An empty Stride means Stride = Kernel: non-overlapping windows,
// as in PyTorch. An empty PadLo means no padding before, and an empty PadHi
// the same padding as PadLo. Padding on each side must be smaller than the
// kernel, so that every window holds at least one cell of the input. The
// output size along an axis of size L is, as with PyTorch's ceil_mode =
// False:
//
//	floor((L + padLo + padHi − kernel)/stride) + 1
type PoolGeom struct {
	Kernel, Stride, PadLo, PadHi []int
}

type (
	maxPoolPrim  struct{}
	meanPoolPrim struct{ adaptive, transposed bool }
)

var (
	maxPoolOp           = &maxPoolPrim{}
	meanPoolOp          = &meanPoolPrim{false, false}
	meanPoolTOp         = &meanPoolPrim{false, true}
	adaptiveMeanPoolOp  = &meanPoolPrim{true, false}
	adaptiveMeanPoolTOp = &meanPoolPrim{true, true}
)

// meanPoolOps are the MeanPool primitives by [adaptive][transposed].
var meanPoolOps = [2][2]*meanPoolPrim{{meanPoolOp, meanPoolTOp}, {adaptiveMeanPoolOp, adaptiveMeanPoolTOp}}

// poolAttrs encodes g as [d, kernel, stride, padLo, padHi] into buf and
// returns the used part, or an error if a field's length does not fit.
func poolAttrs(buf *[1 + 4*maxPoolDims]int, g PoolGeom) ([]int, error) {
	d := len(g.Kernel)
	if d < 1 || d > maxPoolDims {
		return nil, fmt.Errorf("Kernel has %d entries, want 1 to %d (one per spatial axis)", d, maxPoolDims)
	}
	buf[0] = d
	k, s, lo, hi := buf[1:1+d], buf[1+d:1+2*d], buf[1+2*d:1+3*d], buf[1+3*d:1+4*d]
	copy(k, g.Kernel)
	copy(s, g.Kernel)
	if len(g.Stride) != 0 {
		if err := geom.Axes(s, "PoolGeom.Stride", g.Stride, 0); err != nil {
			return nil, err
		}
	}
	if err := geom.Pads(lo, hi, "PoolGeom.PadLo", "PoolGeom.PadHi", g.PadLo, g.PadHi); err != nil {
		return nil, err
	}
	return buf[:1+4*d], nil
}

// poolFail records a geometry error on x's tape (or passes x's failure on).
func poolFail(op string, x Var, err error) Var {
	if x.t == nil {
		panic("ad: " + op + " of the zero Var")
	}
	if x.t.err != nil {
		return x.t.failed()
	}
	return x.t.fail(errorf("%s: %w", op, err))
}

// MaxPool returns the maximum of x (N, C, spatial…) over each window of the
// geometry g, with 1 to 3 spatial axes. Padded cells never win (they count
// as −Inf). Ties choose the first cell of the window in row-major order; a
// NaN is chosen over any number. The derivative flows to the chosen cell.
func MaxPool(x Var, g PoolGeom) Var { return applyPool("MaxPool", maxPoolOp, x, g) }

// MeanPool returns the mean of x (N, C, spatial…) over each window of the
// geometry g, with 1 to 3 spatial axes. Padded cells count as zeros and are
// included in the divisor (PyTorch's count_include_pad = True): the divisor
// is always the product of the kernel sizes.
func MeanPool(x Var, g PoolGeom) Var { return applyPool("MeanPool", meanPoolOp, x, g) }

// applyPool applies the pooling op p with the attributes of g to x, or
// records g's error as the op what's.
func applyPool(what string, p Primitive, x Var, g PoolGeom) Var {
	var buf [1 + 4*maxPoolDims]int
	ints, err := poolAttrs(&buf, g)
	if err != nil {
		return poolFail(what, x, err)
	}
	return Apply(p, Attrs{Ints: ints}, x)
}

// AdaptiveMeanPool returns the mean of x, of shape (N, C, spatial…), over
// windows chosen to give the spatial output size outSize, as PyTorch's
// AdaptiveAvgPool. outSize has one entry per spatial axis, 1 to 3. Along an
// axis of size L, output i of out averages the cells
//
//	[floor(i·L/out), ceil((i+1)·L/out))
func AdaptiveMeanPool(x Var, outSize ...int) Var {
	d := len(outSize)
	if d < 1 || d > maxPoolDims {
		return poolFail("AdaptiveMeanPool", x, fmt.Errorf("%d output sizes, want 1 to %d (one per spatial axis)", d, maxPoolDims))
	}
	var buf [1 + 4*maxPoolDims]int
	buf[0] = d
	copy(buf[1:], outSize)
	return Apply(adaptiveMeanPoolOp, Attrs{Ints: buf[:1+4*d]}, x)
}

// GlobalMeanPool returns the mean of x, of shape (N, C, spatial…), over
// all its spatial axes. The result has shape (N, C, 1, …, 1).
func GlobalMeanPool(x Var) Var {
	s := x.Shape()
	if x.t == nil || x.t.err != nil || s == nil {
		return x.failedOn("GlobalMeanPool")
	}
	if len(s) < 3 || len(s) > maxRank {
		return x.t.fail(errorf("GlobalMeanPool: input of rank %d, want 3 to %d (N, C, spatial…)", len(s), maxRank))
	}
	var axes, shape [maxRank]int
	r := len(s)
	for i := 2; i < r; i++ {
		axes[i-2] = i
		shape[i] = 1
	}
	shape[0], shape[1] = s[0], s[1]
	return Reshape(Mean(x, axes[:r-2]...), shape[:r]...)
}

// poolDims is a decoded pooling geometry, padded to three spatial axes:
// missing leading axes have size 1 and a window of one cell.
type poolDims struct {
	adaptive          bool
	d                 int
	k, s, lo, hi      [maxPoolDims]int
	in, out           [maxPoolDims]int
	planes, inN, outN int // N·C, and the spatial sizes of input and output
}

// window returns the cells [a, b) of the input along padded axis j covered
// by output o, clipped to the input, and the divisor of that axis.
func (p *poolDims) window(j, o int) (a, b, div int) {
	if p.adaptive {
		a = o * p.in[j] / p.out[j]
		b = ((o+1)*p.in[j] + p.out[j] - 1) / p.out[j]
		return a, b, b - a
	}
	a = o*p.s[j] - p.lo[j]
	b = a + p.k[j]
	return max(a, 0), min(b, p.in[j]), p.k[j]
}

// decodePool decodes and checks attributes for an input of shape x (the
// pooled tensor's input: for MeanPoolT, the attributes' trailing shape).
// adaptive selects adaptive windows. Error messages copy the slices they
// print, so that the callers' arrays stay on the stack.
func decodePool(p *poolDims, a []int, x []int, adaptive bool) error {
	p.adaptive = adaptive
	if len(a) < 1 || a[0] < 1 || a[0] > maxPoolDims || len(a) != 1+4*a[0] {
		return fmt.Errorf("attributes %v; want [d (1 to %d), kernel[d], stride[d], padLo[d], padHi[d]]", slices.Clone(a), maxPoolDims)
	}
	d := a[0]
	p.d = d
	if len(x) != 2+d {
		return fmt.Errorf("input shape %v has rank %d, want %d (N, C and %d spatial axes)", slices.Clone(x), len(x), 2+d, d)
	}
	p.planes = x[0] * x[1]
	p.inN, p.outN = 1, 1
	off := maxPoolDims - d
	for j := range maxPoolDims {
		p.k[j], p.s[j], p.lo[j], p.hi[j], p.in[j], p.out[j] = 1, 1, 0, 0, 1, 1
		if j < off {
			continue
		}
		i := j - off
		L := x[2+i]
		p.in[j] = L
		if L < 1 {
			return fmt.Errorf("spatial axis %d of input shape %v is empty; want at least one cell", i, slices.Clone(x))
		}
		if p.adaptive {
			o := a[1+i]
			if o < 1 {
				return fmt.Errorf("output size %d on spatial axis %d, want at least 1", o, i)
			}
			p.out[j] = o
		} else {
			k, s, lo, hi := a[1+i], a[1+d+i], a[1+2*d+i], a[1+3*d+i]
			switch {
			case k < 1:
				return fmt.Errorf("kernel %d on spatial axis %d, want at least 1", k, i)
			case s < 1:
				return fmt.Errorf("stride %d on spatial axis %d, want at least 1", s, i)
			case lo < 0 || hi < 0:
				return fmt.Errorf("padding %d, %d on spatial axis %d, want non-negative", lo, hi, i)
			case lo >= k || hi >= k:
				return fmt.Errorf("padding %d, %d on spatial axis %d, want each smaller than the kernel %d", lo, hi, i, k)
			case L+lo+hi < k:
				return fmt.Errorf("spatial axis %d has size %d, padded %d+%d; want at least the kernel %d", i, L, lo, hi, k)
			}
			p.k[j], p.s[j], p.lo[j], p.hi[j] = k, s, lo, hi
			p.out[j] = (L+lo+hi-k)/s + 1
		}
		p.inN *= L
		p.outN *= p.out[j]
	}
	return nil
}

// appendOut appends the pooled shape (N, C, out…) to dst.
func (p *poolDims) appendOut(dst []int, n, c int) []int {
	dst = append(dst, n, c)
	return append(dst, p.out[maxPoolDims-p.d:]...)
}

func (*maxPoolPrim) Name() string { return "MaxPool" }
func (*maxPoolPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	var p poolDims
	if err := decodePool(&p, a.Ints, in[0], false); err != nil {
		return dst, err
	}
	return p.appendOut(dst, in[0][0], in[0][1]), nil
}

func (*maxPoolPrim) Forward(f *Forward) {
	var p poolDims
	_ = decodePool(&p, f.Attrs.Ints, f.In[0].Shape, false)
	arg := f.Save(len(f.Out.Data))
	poolRun(poolJob{mode: poolMax, p: p, x: f.In[0].Data, out: f.Out.Data, arg: arg})
}

// JVP: the tangent at each window's winner.
func (*maxPoolPrim) JVP(r *Rule) Var {
	return Gather(r.Tangent(0), r.Saved, r.Out.Shape()...)
}

// VJP: each output's cotangent added at its window's winner,
// MaxPoolScatter(c, x) with the saved winners.
func (*maxPoolPrim) VJP(r *Rule, c Var) {
	r.AddGrad(0, applySharedInts(maxPoolScatterOp, r.Saved, c, r.In[0]))
}

// maxPoolScatterPrim is MaxPool's cotangent map. Its inputs are c and x,
// and its Ints are the pool's saved winners, flat positions in x, one per
// output, never copied. Its output is zeros of x's shape plus each c[k] at
// winner k.
// It is ScatterAdd for indices that stay in their output's plane, which
// lets it split planes over goroutines and skip checking the indices
// (they come from the pool's kernel). x gives only the shape. Linear in c,
// with Gather by the same indices as its transpose; nothing flows to x.
type maxPoolScatterPrim struct{}

var maxPoolScatterOp = &maxPoolScatterPrim{}

func (*maxPoolScatterPrim) Name() string { return "MaxPoolScatter" }

func (*maxPoolScatterPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, x := in[0], in[1]
	if len(c) != len(x) || len(c) < 3 || c[0] != x[0] || c[1] != x[1] || len(a.Ints) != sizeOf(c) {
		return dst, fmt.Errorf("c of shape %v, x of shape %v and %d winners; want (N, C, pooled…), (N, C, spatial…) and one winner per element of c",
			slices.Clone(c), slices.Clone(x), len(a.Ints))
	}
	return append(dst, x...), nil
}

func (*maxPoolScatterPrim) Forward(f *Forward) {
	c, x := f.In[0].Shape, f.In[1].Shape
	p := poolDims{planes: c[0] * c[1], inN: sizeOf(x[2:]), outN: sizeOf(c[2:])}
	poolRun(poolJob{mode: poolMaxScatter, p: p, v: f.In[0].Data, out: f.Out.Data, arg: f.Attrs.Ints})
}

func (*maxPoolScatterPrim) JVP(r *Rule) Var {
	tc := r.Tangent(0)
	if tc.IsZero() {
		return Var{}
	}
	return applySharedInts(maxPoolScatterOp, r.Attrs.Ints, tc, r.In[1])
}

func (*maxPoolScatterPrim) VJP(r *Rule, c Var) {
	if r.Need(0) {
		r.AddGrad(0, Gather(c, r.Attrs.Ints, r.In[0].Shape()...))
	}
}

func (q *meanPoolPrim) Name() string {
	switch {
	case q.adaptive && q.transposed:
		return "AdaptiveMeanPoolT"
	case q.adaptive:
		return "AdaptiveMeanPool"
	case q.transposed:
		return "MeanPoolT"
	}
	return "MeanPool"
}

// decode decodes the attributes of a mean pool or its transpose applied to
// an input of shape in into p (always the geometry of the pool, from its
// input to its output); for a transpose it checks that in is the pooled
// shape.
func (q *meanPoolPrim) decode(p *poolDims, a []int, in []int) error {
	if !q.transposed {
		return decodePool(p, a, in, q.adaptive)
	}
	if len(a) < 1 {
		return fmt.Errorf("attributes are empty; want [d, 4×d geometry, d output sizes]")
	}
	d := a[0]
	if d < 1 || d > maxPoolDims || len(a) != 1+5*d {
		return fmt.Errorf("attributes %v; want %d entries [d, 4×d geometry, d output sizes]", slices.Clone(a), 1+5*max(d, 1))
	}
	if len(in) != 2+d {
		return fmt.Errorf("input shape %v has rank %d, want %d (N, C and %d spatial axes)", slices.Clone(in), len(in), 2+d, d)
	}
	var xs [2 + maxPoolDims]int
	xs[0], xs[1] = in[0], in[1]
	copy(xs[2:], a[1+4*d:])
	if err := decodePool(p, a[:1+4*d], xs[:2+d], q.adaptive); err != nil {
		return err
	}
	for i := range d {
		if in[2+i] != p.out[maxPoolDims-d+i] {
			return fmt.Errorf("input shape %v, want pooled spatial shape %v", slices.Clone(in), slices.Clone(p.out[maxPoolDims-d:]))
		}
	}
	return nil
}

func (q *meanPoolPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	var p poolDims
	if err := q.decode(&p, a.Ints, in[0]); err != nil {
		return dst, err
	}
	if q.transposed {
		d := p.d
		dst = append(dst, in[0][0], in[0][1])
		return append(dst, a.Ints[1+4*d:]...), nil
	}
	return p.appendOut(dst, in[0][0], in[0][1]), nil
}

func (q *meanPoolPrim) Forward(f *Forward) {
	var p poolDims
	_ = q.decode(&p, f.Attrs.Ints, f.In[0].Shape)
	if q.transposed {
		poolRun(poolJob{mode: poolMeanT, p: p, v: f.In[0].Data, out: f.Out.Data})
		return
	}
	poolRun(poolJob{mode: poolMean, p: p, x: f.In[0].Data, out: f.Out.Data})
}

func (q *meanPoolPrim) JVP(r *Rule) Var {
	return Apply(q, r.Attrs, r.Tangent(0))
}

func (q *meanPoolPrim) VJP(r *Rule, c Var) {
	if q.transposed {
		d := r.Attrs.Ints[0]
		r.AddGrad(0, Apply(meanPoolOps[b2i(q.adaptive)][0], Attrs{Ints: r.Attrs.Ints[:1+4*d]}, c))
		return
	}
	var buf [1 + 5*maxPoolDims]int
	n := copy(buf[:], r.Attrs.Ints)
	n += copy(buf[n:], r.In[0].Shape()[2:])
	r.AddGrad(0, Apply(meanPoolOps[b2i(q.adaptive)][1], Attrs{Ints: buf[:n]}, c))
}
