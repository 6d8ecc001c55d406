package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// DenseLayer is a fully connected layer; see Dense.
type DenseLayer struct {
	inC, outC int // in and out features, as given to Dense
	affine
}

// Dense returns the affine layer y = x·Wᵀ + b, PyTorch's Linear. The
// weight W is (out, in) and the bias b has out values. It applies to the
// last axis of x: x is (…, in) and y is (…, out). Options: NoBias,
// WeightInit, BiasInit, Activation. The default initialisation is
// PyTorch's: both uniform on ±1/√in.
func Dense(in, out int, opts ...DenseOption) *DenseLayer {
	l := &DenseLayer{inC: in, outC: out}
	o := collect(opts)
	if in <= 0 || out <= 0 {
		l.affine = affine{opt: o, err: fmt.Errorf("Dense: in %d, out %d; want both > 0", in, out)}
	} else {
		l.affine = newAffine(o, out, out, in)
	}
	return l
}

// Declare declares "weight" of shape (out, in) and, unless NoBias, "bias"
// of out values.
func (d *DenseLayer) Declare(b *layout.Builder) error { return d.declare(b) }

// Init draws the weight and bias, with PyTorch's defaults unless an option
// overrides them.
func (d *DenseLayer) Init(θ []float32, rng *rand.Rand) { d.init(θ, rng, d.inC, d.outC) }

// Apply returns x·Wᵀ + b over the last axis of x.
func (d *DenseLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	if !canApply(d.err, "Dense", p, x, d.nParams()) {
		return fail(x, nil)
	}
	s := x.Shape()
	if len(s) == 0 || s[len(s)-1] != d.inC {
		return fail(x, errorf("Dense(%d, %d): input shape %v, want (…, %d)", d.inC, d.outC, s, d.inC))
	}
	w := d.weight(p)
	var y ad.Var
	if len(s) == 2 {
		y = ad.MatMulT(x, w, false, true)
	} else {
		// Flatten the leading axes into one batch axis and back; a
		// vector is a batch of one.
		var buf [8]int
		y = ad.MatMulT(ad.Reshape(x, -1, d.inC), w, false, true)
		out := append(buf[:0], s[:len(s)-1]...)
		y = ad.Reshape(y, append(out, d.outC)...)
	}
	return d.finish(y, p, 0)
}
