package model

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// ranges holds where each child's parameters and state start, computed
// once when a container is made, so applying it costs nothing beyond the
// children themselves.
type ranges struct {
	param, state []int // len(children)+1 offsets
	err          error // the first child's configuration error
}

func rangesOf(children []Layer) ranges {
	r := ranges{param: make([]int, len(children)+1), state: make([]int, len(children)+1)}
	for i, l := range children {
		np, ns, err := sizes(l)
		if err != nil && r.err == nil {
			r.err = atIndex(i, err)
		}
		r.param[i+1] = r.param[i] + np
		r.state[i+1] = r.state[i] + ns
	}
	return r
}

// indexed is what Chain and Parallel share: child layers whose parameters
// and state are the groups named by their indices.
type indexed struct {
	layers []Layer
	r      ranges
}

func newIndexed(layers []Layer) indexed { return indexed{layers: layers, r: rangesOf(layers)} }

// Layers returns the child layers. It is not a copy: do not modify it.
func (c *indexed) Layers() []Layer { return c.layers }

// DeclareState declares each layer's state in the group named by its index.
func (c *indexed) DeclareState(b *layout.Builder) error {
	return declareIndexed(b, c.layers, true)
}

// Init initialises each layer's range in order.
func (c *indexed) Init(θ []float32, rng *rand.Rand) {
	for i, l := range c.layers {
		l.Init(θ[c.r.param[i]:c.r.param[i+1]], rng)
	}
}

// InitState initialises each layer's state range.
func (c *indexed) InitState(s []float32) { initStateEach(c.layers, c.r, s) }

// ChainLayer applies its layers in order; see Chain.
type ChainLayer struct {
	indexed
	fused []bool // fused[i]: layer i is a Conv whose op takes the Relu at i+1
}

// Chain returns the layers applied in order, like PyTorch's nn.Sequential
// and Flux's Chain. Layer i's parameters are the group "i", as in
// "0.weight" and "3.bias". A layer without parameters still takes its
// index. A chain of any depth is a slice: applying it costs one parameter
// view per layer with parameters, nothing more. A Conv with a bias
// followed by Relu() is applied as one op, ad.ConvBiasRelu, which spares a
// pass over the activations. Parameters and paths are unchanged.
func Chain(layers ...Layer) *ChainLayer {
	c := &ChainLayer{indexed: newIndexed(layers), fused: make([]bool, len(layers))}
	for i := 0; i+1 < len(layers); i++ {
		cv, ok := layers[i].(*ConvLayer)
		r, isRelu := layers[i+1].(*FuncLayer)
		c.fused[i] = ok && cv != nil && cv.fusesRelu() && isRelu && r != nil && r.relu
	}
	return c
}

// Declare declares each layer's parameters in the group named by its index.
func (c *ChainLayer) Declare(b *layout.Builder) error {
	return declareIndexed(b, c.layers, false)
}

// Apply applies the layers in order.
func (c *ChainLayer) Apply(ctx *Ctx, p, x ad.Var) ad.Var {
	if !c.r.ok("Chain", p, x) {
		return fail(x, nil)
	}
	for i := 0; i < len(c.layers); i++ {
		clean := tapeClean(x)
		if c.fused[i] {
			x = c.layers[i].(*ConvLayer).apply(c.r.sub(p, i), x, true)
			nameFailure(x, clean, i)
			i++ // the Relu
			continue
		}
		x = ApplyChild(ctx, c.layers[i], c.r.sub(p, i), x, c.r.state[i], c.r.state[i+1])
		nameFailure(x, clean, i)
	}
	return x
}

// ok checks the configuration and the parameter Var's size on x's tape.
func (r *ranges) ok(name string, p, x ad.Var) bool {
	if r.err != nil {
		fail(x, errorf("%s: %w", name, r.err))
		return false
	}
	return checkParams(name, p, x, r.param[len(r.param)-1])
}

// sub returns the Var of child i's parameters, or the zero Var if it has
// none.
func (r *ranges) sub(p ad.Var, i int) ad.Var {
	lo, hi := r.param[i], r.param[i+1]
	switch {
	case lo == hi:
		return ad.Var{}
	case lo == 0 && hi == r.param[len(r.param)-1]:
		return p
	}
	return ad.Slice(p, lo, hi)
}

func declareIndexed(b *layout.Builder, layers []Layer, state bool) error {
	for i, l := range layers {
		g := b.Group(strconv.Itoa(i))
		var err error
		if !state {
			err = l.Declare(g)
		} else if s, ok := l.(Stateful); ok {
			err = s.DeclareState(g)
		}
		if err != nil {
			return atIndex(i, err)
		}
	}
	return nil
}

func initStateEach(layers []Layer, r ranges, s []float32) {
	for i, l := range layers {
		if st, ok := l.(Stateful); ok {
			st.InitState(s[r.state[i]:r.state[i+1]])
		}
	}
}

// SkipLayer is a skip connection; see Skip.
type SkipLayer struct {
	layer   Layer
	combine func(a, b ad.Var) ad.Var
	r       ranges
}

// Skip returns a skip connection, Flux's SkipConnection: it applies
// combine to the layer's output and x. With combine = ad.Add it is a
// residual block. The layer's parameters keep their own paths: Skip adds
// no group.
func Skip(layer Layer, combine func(a, b ad.Var) ad.Var) *SkipLayer {
	return &SkipLayer{layer: layer, combine: combine, r: rangesOf([]Layer{layer})}
}

// Declare declares the wrapped layer's parameters.
func (s *SkipLayer) Declare(b *layout.Builder) error {
	if s.combine == nil {
		return fmt.Errorf("Skip: combine is nil; use ad.Add for a residual connection")
	}
	return s.layer.Declare(b)
}

// DeclareState declares the wrapped layer's state.
func (s *SkipLayer) DeclareState(b *layout.Builder) error {
	if st, ok := s.layer.(Stateful); ok {
		return st.DeclareState(b)
	}
	return nil
}

// Init initialises the wrapped layer.
func (s *SkipLayer) Init(θ []float32, rng *rand.Rand) { s.layer.Init(θ, rng) }

// InitState initialises the wrapped layer's state.
func (s *SkipLayer) InitState(st []float32) { initStateEach([]Layer{s.layer}, s.r, st) }

// Apply returns combine(layer(x), x).
func (s *SkipLayer) Apply(c *Ctx, p, x ad.Var) ad.Var {
	if s.combine == nil {
		return fail(x, errorf("Skip: combine is nil"))
	}
	if !s.r.ok("Skip", p, x) {
		return fail(x, nil)
	}
	y := ApplyChild(c, s.layer, s.r.sub(p, 0), x, 0, s.r.state[1])
	return s.combine(y, x)
}

// ParallelLayer applies several layers to one input; see Parallel.
type ParallelLayer struct {
	indexed
	combine func(a, b ad.Var) ad.Var
}

// Parallel returns the layers applied to the same input, their outputs
// folded from the left with combine. For three layers the output is
// combine(combine(y0, y1), y2), where yi is layer i's output. Layer i's
// parameters are the group "i", as in Chain.
func Parallel(combine func(a, b ad.Var) ad.Var, layers ...Layer) *ParallelLayer {
	return &ParallelLayer{newIndexed(layers), combine}
}

// Declare declares each branch's parameters in the group named by its index.
func (q *ParallelLayer) Declare(b *layout.Builder) error {
	if len(q.layers) == 0 {
		return fmt.Errorf("Parallel: no layers, want at least 1")
	}
	if q.combine == nil && len(q.layers) > 1 {
		return fmt.Errorf("Parallel: combine is nil, want one to fold the outputs of its %d layers (e.g. ad.Add)", len(q.layers))
	}
	return declareIndexed(b, q.layers, false)
}

// Apply applies every branch to x and folds the outputs with combine.
func (q *ParallelLayer) Apply(c *Ctx, p, x ad.Var) ad.Var {
	if len(q.layers) == 0 || q.combine == nil && len(q.layers) > 1 {
		return fail(x, errorf("Parallel: no layers or nil combine"))
	}
	if !q.r.ok("Parallel", p, x) {
		return fail(x, nil)
	}
	var y ad.Var
	for i, l := range q.layers {
		clean := tapeClean(x)
		yi := ApplyChild(c, l, q.r.sub(p, i), x, q.r.state[i], q.r.state[i+1])
		nameFailure(x, clean, i)
		if i == 0 {
			y = yi
		} else {
			y = q.combine(y, yi)
		}
	}
	return y
}
