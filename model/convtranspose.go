package model

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// ConvTransposeLayer is a 1-, 2- or 3-D transposed convolution; see
// ConvTranspose.
type ConvTransposeLayer struct {
	kernel    []int // a copy of the kernel given to ConvTranspose
	inC, outC int   // in and out channels, as given to ConvTranspose
	affine
	d int // spatial axes
	// geom is the geometry of the convolution from Out to In channels
	// that this layer transposes. Its PadHi is lowered by OutputPad where
	// that padding allows; see ConvTranspose.
	geom ad.ConvGeom
	// per spatial axis: the output size is (i−1)·stride + extra[j]. The
	// last crop[j] output rows are unreachable from the input; they are
	// zeros added after the transposed convolution.
	stride, extra, crop [3]int
	cropped             bool
}

// ConvTranspose returns a transposed convolution layer from in to out
// channels, PyTorch's ConvTranspose1d/2d/3d. kernel has one entry per
// spatial axis, 1 to 3 of them. The input x is (N, in, spatial…). The
// weight is (in, out/groups, kernel…), PyTorch's layout, and the bias has
// out values. The layer is the adjoint of a convolution from out to in
// channels with the same weight, so it upsamples by the stride. Along
// each spatial axis of size i the output has size
//
//	(i − 1)·stride − padLo − padHi + dilation·(kernel − 1) + outputPad + 1.
//
// Options: Stride, Pad, PadSides, Dilation, Groups, OutputPad, NoBias,
// WeightInit, BiasInit, Activation. By PyTorch's rule, each OutputPad
// value is smaller than the stride or the dilation of its axis. The
// default initialisation is PyTorch's: uniform on ±1/√fanIn, where fanIn
// is out/groups times the kernel's volume, PyTorch's fan-in of a weight
// of this shape.
func ConvTranspose(kernel []int, in, out int, opts ...ConvTransposeOption) *ConvTransposeLayer {
	l := &ConvTransposeLayer{kernel: slices.Clone(kernel), inC: in, outC: out}
	l.affine.opt = collect(opts)
	if err := l.setup(); err != nil {
		l.affine = affine{opt: l.opt, err: err}
	}
	return l
}

// setup validates the configuration and precomputes the geometry.
func (l *ConvTransposeLayer) setup() error {
	const name = "ConvTranspose"
	g, err := convGeom(name, &l.opt, l.kernel, l.inC, l.outC)
	if err != nil {
		return err
	}
	l.d = len(l.kernel)
	op, err := spatial(name, "OutputPad", l.opt.outputPad, l.d, 0, 0)
	if err != nil {
		return err
	}
	for j := range l.d {
		if op[j] >= g.Stride[j] && op[j] >= g.Dilation[j] {
			return fmt.Errorf("%s: OutputPad %v has %d on axis %d, want < stride %d or < dilation %d", name, l.opt.outputPad, op[j], j, g.Stride[j], g.Dilation[j])
		}
	}
	// ad.ConvTranspose computes output row o = i·stride − padLo + dilation·t
	// from input row i and tap t, into a target whose convolution gives back
	// the input's size. Output padding raises the output size without
	// moving any row: it is padHi lowered by outputPad, and where padHi is
	// too small for that, rows past the last reachable one, left zero.
	hi := make([]int, l.d)
	for j := range l.d {
		k, s, dil, lo, ph := l.kernel[j], g.Stride[j], g.Dilation[j], g.PadLo[j], g.PadHi[j]
		l.stride[j] = s
		l.extra[j] = -lo - ph + dil*(k-1) + op[j] + 1
		hi[j] = max(ph-op[j], 0)
		l.crop[j] = max(op[j]-ph, 0)
		l.cropped = l.cropped || l.crop[j] > 0
	}
	g.PadHi = hi
	l.geom = g
	l.affine = newAffine(l.opt, l.outC, append([]int{l.inC, l.outC / g.Groups}, l.kernel...)...)
	return nil
}

// Declare declares "weight" of shape (in, out/groups, kernel…) and, unless
// NoBias, "bias" of out values.
func (l *ConvTransposeLayer) Declare(b *layout.Builder) error { return l.declare(b) }

// Init draws the weight and bias, with PyTorch's defaults unless an option
// overrides them. As in PyTorch, the fans come from the weight's shape:
// fan-in is out/groups times the kernel's volume, fan-out in times it.
func (l *ConvTransposeLayer) Init(θ []float32, rng *rand.Rand) {
	fanIn := l.nw / l.inC
	fanOut := l.nw / (l.outC / l.geom.Groups)
	l.init(θ, rng, fanIn, fanOut)
}

// Apply returns the transposed convolution of x plus the bias, per
// channel.
func (l *ConvTransposeLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	if !canApply(l.err, "ConvTranspose", p, x, l.nParams()) {
		return fail(x, nil)
	}
	s := x.Shape()
	if s == nil {
		return deadInput("ConvTranspose", x)
	}
	d := l.d
	if len(s) != 2+d || s[1] != l.inC {
		return fail(x, errorf("ConvTranspose(%v, %d, %d): input shape %v, want (N, %d, %d spatial axes)", l.kernel, l.inC, l.outC, s, l.inC, d))
	}
	var tsBuf [5]int
	ts := tsBuf[:len(s)]
	if err := l.target(ts, s); err != nil {
		return fail(x, err)
	}
	var pads [10]int
	for j := range d {
		pads[2*(2+j)+1] = l.crop[j]
	}
	y := ad.ConvTranspose(x, l.weight(p), l.geom, ts...)
	if l.cropped {
		y = ad.Pad(y, pads[:2*(2+d)]...)
	}
	return l.finish(y, p, d)
}

// target writes into ts, of len(s), the shape that ad.ConvTranspose
// computes for an input of shape s: (N, out, size − crop…). The zeros
// added after it make the output.
func (l *ConvTransposeLayer) target(ts, s []int) error {
	ts[0], ts[1] = s[0], l.outC
	for j := range l.d {
		o := (s[2+j]-1)*l.stride[j] + l.extra[j]
		if o-l.crop[j] < 1 {
			return errorf("ConvTranspose(%v, %d, %d): input shape %v gives output size %d on spatial axis %d, want ≥ %d (padding too large)", l.kernel, l.inC, l.outC, slices.Clone(s), o, j, l.crop[j]+1)
		}
		ts[2+j] = o - l.crop[j]
	}
	return nil
}
