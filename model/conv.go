package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// ConvLayer is a 1-, 2- or 3-D convolution; see Conv.
type ConvLayer struct {
	Kernel  []int
	In, Out int
	opt     options
	geom    ad.ConvGeom
	err     error
	nw      int // weight size
}

// Conv returns a convolution layer with the given kernel size (one entry per
// spatial axis, 1 to 3) from in to out channels, PyTorch's Conv1d/2d/3d:
// x is (N, in, spatial…), the weight is (out, in/groups, kernel…), the bias
// (out). Options: Stride, Pad, PadSides, Dilation, Groups, NoBias,
// WeightInit, BiasInit, Activation. Default initialisation is PyTorch's:
// uniform on ±1/√fanIn with fanIn = in/groups·prod(kernel).
func Conv(kernel []int, in, out int, opts ...Option) *ConvLayer {
	l := &ConvLayer{Kernel: kernel, In: in, Out: out, opt: collect(opts)}
	l.geom, l.err = convGeom("Conv", &l.opt, kernel, in, out,
		optStride|optPad|optDilation|optGroups|optBias|optWeightInit|optBiasInit|optActivation)
	l.nw = l.weightSize()
	return l
}

// convGeom validates a convolution's configuration and returns its geometry.
func convGeom(name string, o *options, kernel []int, in, out int, allowed optKind) (ad.ConvGeom, error) {
	var g ad.ConvGeom
	if err := o.check(name, allowed); err != nil {
		return g, err
	}
	d := len(kernel)
	if d < 1 || d > 3 {
		return g, fmt.Errorf("%s: kernel %v has %d spatial axes, want 1 to 3", name, kernel, d)
	}
	for i, k := range kernel {
		if k <= 0 {
			return g, fmt.Errorf("%s: kernel %v has %d on axis %d, want > 0", name, kernel, k, i)
		}
	}
	groups := o.groups
	if groups == 0 {
		groups = 1
	}
	if in <= 0 || out <= 0 || groups < 0 || in%groups != 0 || out%groups != 0 {
		return g, fmt.Errorf("%s: in %d, out %d channels, groups %d; want channels > 0 divisible by groups", name, in, out, groups)
	}
	var err error
	g.Groups = groups
	if g.Stride, err = spatial(name, "Stride", o.stride, d, 1, 1); err != nil {
		return g, err
	}
	if g.PadLo, err = spatial(name, "Pad", o.padLo, d, 0, 0); err != nil {
		return g, err
	}
	if g.PadHi, err = spatial(name, "Pad", o.padHi, d, 0, 0); err != nil {
		return g, err
	}
	if g.Dilation, err = spatial(name, "Dilation", o.dilation, d, 1, 1); err != nil {
		return g, err
	}
	return g, nil
}

func (l *ConvLayer) weightSize() int {
	n := l.Out * max(l.In, 0)
	if l.opt.groups > 1 {
		n /= l.opt.groups
	}
	for _, k := range l.Kernel {
		n *= k
	}
	return n
}

func (l *ConvLayer) nParams() int {
	if l.opt.noBias {
		return l.nw
	}
	return l.nw + l.Out
}

// Declare declares "weight" (out, in/groups, kernel…) and, unless NoBias,
// "bias" (out).
func (l *ConvLayer) Declare(b *layout.Builder) error {
	if l.err != nil {
		return l.err
	}
	b.Add("weight", l.wShape()...)
	if !l.opt.noBias {
		b.Add("bias", l.Out)
	}
	return nil
}

func (l *ConvLayer) wShape() []int {
	return append([]int{l.Out, l.In / l.geom.Groups}, l.Kernel...)
}

// Init draws the weight and bias (PyTorch's defaults unless overridden).
func (l *ConvLayer) Init(θ []float32, rng *rand.Rand) {
	fanIn := l.nw / l.Out
	fanOut := l.nw / (l.In / l.geom.Groups)
	l.opt.initWeights(rng, θ[:l.nw], θ[l.nw:], fanIn, fanOut)
}

// Apply returns the convolution of x plus the bias, per channel.
func (l *ConvLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	if l.err != nil {
		return fail(x, fmt.Errorf("model: %w", l.err))
	}
	if !checkParams("Conv", p, x, l.nParams()) {
		return fail(x, nil)
	}
	d := len(l.Kernel)
	var ws [5]int
	ws[0], ws[1] = l.Out, l.In/l.geom.Groups
	copy(ws[2:], l.Kernel)
	y := ad.Conv(x, ad.View(p, 0, ws[:2+d]...), l.geom)
	if !l.opt.noBias {
		bs := [4]int{l.Out, 1, 1, 1}
		y = ad.Add(y, ad.View(p, l.nw, bs[:1+d]...))
	}
	if l.opt.act != nil {
		y = l.opt.act(y)
	}
	return y
}
