package model

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// ConvLayer is a 1-, 2- or 3-D convolution; see Conv.
type ConvLayer struct {
	kernel    []int // a copy of the kernel given to Conv
	inC, outC int   // in and out channels, as given to Conv
	affine
	geom ad.ConvGeom
}

// Conv returns a convolution layer from in to out channels, PyTorch's
// Conv1d/2d/3d. kernel has one entry per spatial axis, 1 to 3 of them.
// The input x is (N, in, spatial…). The weight is (out, in/groups,
// kernel…) and the bias has out values. Options: Stride, Pad, PadSides,
// Dilation, Groups, NoBias, WeightInit, BiasInit, Activation. The default
// initialisation is PyTorch's: uniform on ±1/√fanIn, where fanIn is
// in/groups times the kernel's volume.
func Conv(kernel []int, in, out int, opts ...ConvOption) *ConvLayer {
	l := &ConvLayer{kernel: slices.Clone(kernel), inC: in, outC: out}
	o := collect(opts)
	g, err := convGeom("Conv", &o, kernel, in, out)
	if err != nil {
		l.affine = affine{opt: o, err: err}
		return l
	}
	l.geom = g
	l.affine = newAffine(o, out, append([]int{out, in / g.Groups}, kernel...)...)
	return l
}

// convGeom validates a convolution's configuration and returns its geometry.
func convGeom(name string, o *options, kernel []int, in, out int) (ad.ConvGeom, error) {
	var g ad.ConvGeom
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

// Declare declares "weight" of shape (out, in/groups, kernel…) and, unless
// NoBias, "bias" of out values.
func (l *ConvLayer) Declare(b *layout.Builder) error { return l.declare(b) }

// Init draws the weight and bias, with PyTorch's defaults unless an option
// overrides them.
func (l *ConvLayer) Init(θ []float32, rng *rand.Rand) {
	l.init(θ, rng, l.nw/l.outC, l.nw/(l.inC/l.geom.Groups))
}

// Apply returns the convolution of x plus the bias, per channel, as one
// op (ad.ConvBias).
func (l *ConvLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var { return l.apply(p, x, false) }

// fusesRelu reports whether a Relu after the layer can be taken into its
// op (ad.ConvBiasRelu): when it has a bias and no activation of its own
// comes between.
func (l *ConvLayer) fusesRelu() bool { return l.err == nil && l.opt.act == nil && !l.opt.noBias }

// apply is Apply followed by Relu when relu is set. Chain fuses a Conv and
// the Relu layer after it into one op, ad.ConvBiasRelu.
func (l *ConvLayer) apply(p, x ad.Var, relu bool) ad.Var {
	if !canApply(l.err, "Conv", p, x, l.nParams()) {
		return fail(x, nil)
	}
	w := l.weight(p)
	if l.opt.noBias {
		return l.finish(ad.Conv(x, w, l.geom), p, len(l.kernel)) // relu is never set: see fusesRelu
	}
	b := ad.View(p, l.nw, l.out)
	if relu {
		return ad.ConvBiasRelu(x, w, b, l.geom)
	}
	y := ad.ConvBias(x, w, b, l.geom)
	if l.opt.act != nil {
		y = l.opt.act(y)
	}
	return y
}
