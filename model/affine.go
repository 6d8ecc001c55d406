package model

import (
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// affine is what Dense, Conv and ConvTranspose share: a weight, an optional
// bias per output channel after it, initialisers and a fused activation.
type affine struct {
	opt    options
	err    error // the configuration error, if any
	wShape []int // the weight's shape
	nw     int   // the weight's size
	out    int   // output channels: the bias's size
}

func newAffine(opt options, out int, wShape ...int) affine {
	a := affine{opt: opt, wShape: wShape, nw: 1, out: out}
	for _, d := range wShape {
		a.nw *= d
	}
	return a
}

func (a *affine) nParams() int {
	if a.opt.noBias {
		return a.nw
	}
	return a.nw + a.out
}

// declare declares "weight" and, unless NoBias, "bias" of out values.
func (a *affine) declare(b *layout.Builder) error {
	if a.err != nil {
		return a.err
	}
	b.Add("weight", a.wShape...)
	if !a.opt.noBias {
		b.Add("bias", a.out)
	}
	return nil
}

// init draws the weight and bias with the chosen or PyTorch's default
// initialisers.
func (a *affine) init(θ []float32, rng *rand.Rand, fanIn, fanOut int) {
	a.opt.initWeights(rng, θ[:a.nw], θ[a.nw:], fanIn, fanOut)
}

// weight returns the Var of the weight in the layer's parameters p.
func (a *affine) weight(p ad.Var) ad.Var { return ad.View(p, 0, a.wShape...) }

// finish adds the bias to y along axis 1, followed by spatial axes of size
// 1, and applies the fused activation. With spatial 0, y is (N, out).
func (a *affine) finish(y, p ad.Var, spatial int) ad.Var {
	if !a.opt.noBias {
		bs := [4]int{a.out, 1, 1, 1}
		y = ad.Add(y, ad.View(p, a.nw, bs[:1+spatial]...))
	}
	if a.opt.act != nil {
		y = a.opt.act(y)
	}
	return y
}
