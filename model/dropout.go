package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// DropoutLayer zeroes random elements in training mode; see Dropout.
type DropoutLayer struct {
	// P is the probability that an element is dropped. It may be changed
	// between steps: it sizes nothing, and Declare and Apply check it.
	P float32
}

// Dropout returns PyTorch's Dropout with drop probability p in [0, 1).
//
// In training mode, when Ctx.Train is set, each element of the input is
// kept with probability 1 − p and scaled by 1/(1 − p), or else zeroed.
// Every Apply draws a fresh mask from Ctx.RNG. The mask is a constant of
// the tape, so derivatives are those of x·mask. In test mode, or with a
// nil Ctx, the layer is the identity. Training mode without Ctx.RNG is an
// error, except for p = 0, which is the identity in both modes.
func Dropout(p float32) *DropoutLayer { return &DropoutLayer{P: p} }

func (l *DropoutLayer) check() error {
	if !(l.P >= 0 && l.P < 1) {
		return fmt.Errorf("Dropout: p is %v, want 0 ≤ p < 1", l.P)
	}
	return nil
}

// Declare declares nothing; p outside [0, 1) is a configuration error.
func (l *DropoutLayer) Declare(*layout.Builder) error { return l.check() }

// Init does nothing: the layer has no parameters.
func (*DropoutLayer) Init([]float32, *rand.Rand) {}

// Apply returns x·mask/(1 − p) in training mode and x otherwise.
func (l *DropoutLayer) Apply(c *Ctx, _, x ad.Var) ad.Var {
	if err := l.check(); err != nil {
		return fail(x, errorf("%w", err))
	}
	s := x.Shape()
	if s == nil {
		return fail(x, nil)
	}
	if !c.Training() || l.P == 0 {
		return x
	}
	if c.RNG == nil {
		return fail(x, errorf("Dropout(%v): training mode needs Ctx.RNG to draw the mask; set it, e.g. RNG: rand.New(rand.NewPCG(seed1, seed2))", l.P))
	}
	mask := ad.FullLike(x, 0, s...) // in x's precision
	keep, scale := 1-float64(l.P), 1/(1-l.P)
	if d := mask.Data(); d != nil {
		for i := range d {
			if c.RNG.Float64() < keep {
				d[i] = scale
			}
		}
	} else {
		d := mask.Data64()
		for i := range d {
			if c.RNG.Float64() < keep {
				d[i] = float64(scale)
			}
		}
	}
	return ad.Mul(x, mask)
}
