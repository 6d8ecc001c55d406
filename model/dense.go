package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// DenseLayer is a fully connected layer; see Dense.
type DenseLayer struct {
	In, Out int
	opt     options
}

// Dense returns the affine layer y = x·Wᵀ + b (PyTorch's Linear) with
// weight W (out, in) and bias b (out), applied to the last axis of x: x is
// (…, in) and y is (…, out). Options: NoBias, WeightInit, BiasInit,
// Activation. Default initialisation is PyTorch's: both uniform on
// ±1/√in.
func Dense(in, out int, opts ...Option) *DenseLayer {
	return &DenseLayer{In: in, Out: out, opt: collect(opts)}
}

// Declare declares "weight" (out, in) and, unless NoBias, "bias" (out).
func (d *DenseLayer) Declare(b *layout.Builder) error {
	if err := d.opt.check("Dense", optBias|optWeightInit|optBiasInit|optActivation); err != nil {
		return err
	}
	if d.In <= 0 || d.Out <= 0 {
		return fmt.Errorf("Dense: in %d, out %d; want both > 0", d.In, d.Out)
	}
	b.Add("weight", d.Out, d.In)
	if !d.opt.noBias {
		b.Add("bias", d.Out)
	}
	return nil
}

func (d *DenseLayer) nParams() int {
	if d.opt.noBias {
		return d.Out * d.In
	}
	return d.Out*d.In + d.Out
}

// Init draws the weight and bias (PyTorch's defaults unless overridden).
func (d *DenseLayer) Init(θ []float32, rng *rand.Rand) {
	nw := d.Out * d.In
	d.opt.initWeights(rng, θ[:nw], θ[nw:], d.In, d.Out)
}

// Apply returns x·Wᵀ + b over the last axis of x.
func (d *DenseLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	if !checkParams("Dense", p, x, d.nParams()) {
		return fail(x, nil)
	}
	s := x.Shape()
	if len(s) == 0 || s[len(s)-1] != d.In {
		return fail(x, fmt.Errorf("model: Dense(%d, %d): input shape %v, want (…, %d)", d.In, d.Out, s, d.In))
	}
	w := ad.View(p, 0, d.Out, d.In)
	var y ad.Var
	if len(s) == 2 {
		y = ad.MatMulT(x, w, false, true)
	} else {
		// Flatten the leading axes into one batch axis and back; a
		// vector is a batch of one.
		var buf [8]int
		y = ad.MatMulT(ad.Reshape(x, -1, d.In), w, false, true)
		out := append(buf[:0], s[:len(s)-1]...)
		y = ad.Reshape(y, append(out, d.Out)...)
	}
	if !d.opt.noBias {
		y = ad.Add(y, ad.View(p, d.Out*d.In, d.Out))
	}
	if d.opt.act != nil {
		y = d.opt.act(y)
	}
	return y
}
