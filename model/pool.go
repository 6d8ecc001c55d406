package model

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// PoolLayer is a max or mean pooling layer over fixed windows; see MaxPool
// and MeanPool.
type PoolLayer struct {
	kernel []int  // a copy of the kernel given to MaxPool or MeanPool
	name   string // "MaxPool" or "MeanPool"
	max    bool
	opt    options
	geom   ad.PoolGeom
	err    error
}

// MaxPool returns the layer that takes the maximum of x over each window
// of the given kernel size: PyTorch's MaxPool1d/2d/3d with ceil_mode =
// False. x is (N, C, spatial…), and kernel has one entry per spatial axis,
// 1 to 3 of them. Padded cells never win. The derivative flows to each
// window's maximum; on a tie, to the first in row-major order. Options:
// Stride, whose default is the kernel size; Pad and PadSides, each side
// smaller than the kernel.
func MaxPool(kernel []int, opts ...PoolOption) *PoolLayer {
	return newPool("MaxPool", true, kernel, opts)
}

// MeanPool returns the layer that averages x over each window of the
// given kernel size: PyTorch's AvgPool1d/2d/3d with ceil_mode = False and
// count_include_pad = True. x is (N, C, spatial…), and kernel has one
// entry per spatial axis, 1 to 3 of them. Padded cells count as zeros, and
// the divisor is always the kernel's volume. Options: Stride, whose
// default is the kernel size; Pad and PadSides, each side smaller than the
// kernel.
func MeanPool(kernel []int, opts ...PoolOption) *PoolLayer {
	return newPool("MeanPool", false, kernel, opts)
}

func newPool(name string, isMax bool, kernel []int, opts []PoolOption) *PoolLayer {
	l := &PoolLayer{kernel: slices.Clone(kernel), name: name, max: isMax, opt: collect(opts)}
	l.err = l.setup()
	return l
}

// setup validates the configuration and builds the geometry once.
func (l *PoolLayer) setup() error {
	d := len(l.kernel)
	if d < 1 || d > 3 {
		return fmt.Errorf("%s: kernel %v has %d spatial axes, want 1 to 3", l.name, l.kernel, d)
	}
	for i, k := range l.kernel {
		if k <= 0 {
			return fmt.Errorf("%s: kernel %v has %d on axis %d, want > 0", l.name, l.kernel, k, i)
		}
	}
	var g ad.PoolGeom
	var err error
	g.Kernel = slices.Clone(l.kernel)
	g.Stride = slices.Clone(l.kernel)
	if l.opt.stride != nil {
		if g.Stride, err = spatial(l.name, "Stride", l.opt.stride, d, 1, 1); err != nil {
			return err
		}
	}
	if g.PadLo, err = spatial(l.name, "Pad", l.opt.padLo, d, 0, 0); err != nil {
		return err
	}
	if g.PadHi, err = spatial(l.name, "Pad", l.opt.padHi, d, 0, 0); err != nil {
		return err
	}
	for i, k := range l.kernel {
		if g.PadLo[i] >= k || g.PadHi[i] >= k {
			return fmt.Errorf("%s: padding %d before and %d after on axis %d, want each < the kernel %d (every window must hold a cell of the input)", l.name, g.PadLo[i], g.PadHi[i], i, k)
		}
	}
	l.geom = g
	return nil
}

// Declare declares no parameters; it reports a configuration error.
func (l *PoolLayer) Declare(*layout.Builder) error { return l.err }

// Init does nothing: the layer has no parameters.
func (*PoolLayer) Init([]float32, *rand.Rand) {}

// Apply returns the pooled x, of shape (N, C, out…). On each spatial axis,
// out is ⌊(size + padLo + padHi − kernel)/stride⌋ + 1.
func (l *PoolLayer) Apply(_ *Ctx, _, x ad.Var) ad.Var {
	s, failed := poolInput(l.err, l.name, l.kernel, x)
	if s == nil {
		return failed
	}
	for i, k := range l.kernel {
		if n := s[2+i] + l.geom.PadLo[i] + l.geom.PadHi[i]; n < k {
			return fail(x, errorf("%s(%v): input shape %v: spatial axis %d has size %d padded to %d, want ≥ the kernel %d", l.name, l.kernel, s, i, s[2+i], n, k))
		}
	}
	if l.max {
		return ad.MaxPool(x, l.geom)
	}
	return ad.MeanPool(x, l.geom)
}

// AdaptiveMeanPoolLayer averages over windows chosen for a fixed output
// size; see AdaptiveMeanPool.
type AdaptiveMeanPoolLayer struct {
	outSize []int // a copy of the size given to AdaptiveMeanPool
	err     error
}

// AdaptiveMeanPool returns the layer that averages x over windows chosen
// to give the spatial output size outSize: PyTorch's
// AdaptiveAvgPool1d/2d/3d. x is (N, C, spatial…), and outSize has one
// entry per spatial axis, 1 to 3 of them. Along an axis of size L, output
// i averages the cells from ⌊i·L/out⌋ up to ⌈(i+1)·L/out⌉, exclusive.
// AdaptiveMeanPool(1, 1) of a 2-D input is GlobalMeanPool.
func AdaptiveMeanPool(outSize ...int) *AdaptiveMeanPoolLayer {
	l := &AdaptiveMeanPoolLayer{outSize: slices.Clone(outSize)}
	if d := len(outSize); d < 1 || d > 3 {
		l.err = fmt.Errorf("AdaptiveMeanPool: output size %v has %d spatial axes, want 1 to 3", outSize, d)
	}
	for i, o := range outSize {
		if o < 1 && l.err == nil {
			l.err = fmt.Errorf("AdaptiveMeanPool: output size %v has %d on axis %d, want ≥ 1", outSize, o, i)
		}
	}
	return l
}

// Declare declares no parameters; it reports a configuration error.
func (l *AdaptiveMeanPoolLayer) Declare(*layout.Builder) error { return l.err }

// Init does nothing: the layer has no parameters.
func (*AdaptiveMeanPoolLayer) Init([]float32, *rand.Rand) {}

// Apply returns the pooled x, (N, C, outSize…).
func (l *AdaptiveMeanPoolLayer) Apply(_ *Ctx, _, x ad.Var) ad.Var {
	if s, failed := poolInput(l.err, "AdaptiveMeanPool", l.outSize, x); s == nil {
		return failed
	}
	return ad.AdaptiveMeanPool(x, l.outSize...)
}

// poolInput returns x's shape if a pooling layer with the configuration
// error err, or nil, can apply to it. x must be (N, C, spatial…), with one
// spatial axis per entry of size. size is the kernel or output size that
// the layer's errors name it by. Otherwise poolInput records why on x's
// tape and returns a nil shape and the failed Var.
func poolInput(err error, name string, size []int, x ad.Var) ([]int, ad.Var) {
	if err != nil {
		return nil, fail(x, errorf("%w", err))
	}
	s := x.Shape()
	if s == nil {
		return nil, deadInput(name, x)
	}
	if d := len(size); len(s) != 2+d {
		return nil, fail(x, errorf("%s(%v): input shape %v, want (N, C, %d spatial axes)", name, size, s, d))
	}
	return s, ad.Var{}
}

// GlobalMeanPool is the layer that averages x over all its spatial axes,
// like PyTorch's AdaptiveAvgPool with output size 1. It maps (N, C,
// spatial…) to (N, C, 1, …, 1); follow it with Flatten for (N, C).
func GlobalMeanPool() *FuncLayer { return Func("GlobalMeanPool", ad.GlobalMeanPool) }

// deadInput records that a layer was given an input that is not a live
// value, unless the tape already holds an error. The zero Var and a Var
// from before Tape.Reset are not live.
func deadInput(name string, x ad.Var) ad.Var {
	if t := x.Tape(); t != nil && t.Err() == nil {
		return t.Fail(errorf("%s: the input is not a live value (the zero Var, or a Var from before Tape.Reset)", name))
	}
	return fail(x, nil)
}
