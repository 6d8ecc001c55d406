package model

import (
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// Layer is one step of a network. Its parameters are one contiguous range of
// the flat parameter buffer, declared on a layout.Builder; it initialises
// that range and applies itself to a Var of it.
//
// A Layer is a configuration, not a container of numbers: it holds no
// parameters and no mutable state, so one Layer may be applied by several
// goroutines at once, each with its own tape and Ctx.
type Layer interface {
	// Declare adds the layer's parameters to b under paths relative to the
	// layer: "weight", "bias", or "0.weight" inside a Chain. It returns an
	// error naming what is wrong if the configuration is invalid.
	Declare(b *layout.Builder) error
	// Init writes initial values into θ, drawing from rng. θ is the
	// layer's own range, as long as its declared layout.
	Init(θ []float32, rng *rand.Rand)
	// Apply returns the layer's output for the input x. p is the Var of the
	// layer's own parameter range, of rank 1, or the zero Var for a layer
	// without parameters. c may be nil: inference, no state.
	Apply(c *Ctx, p, x ad.Var) ad.Var
}

// Stateful is implemented by layers that keep state outside the
// parameters, such as BatchNorm's running statistics. The state lives in a
// second flat buffer laid out by StateLayout and passed in Ctx.State.
type Stateful interface {
	Layer
	// DeclareState adds the layer's state to b, like Declare.
	DeclareState(b *layout.Builder) error
	// InitState writes the initial state into s, the layer's own range.
	InitState(s []float32)
}

// Ctx carries what a forward pass needs besides the parameters: the mode,
// the randomness and the state. A nil *Ctx means inference without state.
// A Ctx is used by one goroutine at a time.
type Ctx struct {
	// Train selects training mode: Dropout drops and BatchNorm normalises
	// with the batch's statistics and updates its running ones. The zero
	// value is test (inference) mode.
	Train bool
	// RNG draws Dropout's masks; it is needed only in training mode by
	// networks with Dropout.
	RNG *rand.Rand
	// State is the state buffer laid out by StateLayout(net), from
	// InitState. Layers update it in place in training mode. Nil for
	// networks without state.
	State []float32

	cur     []float32 // the range of State of the layer being applied
	entered bool      // cur is set (inside a container)
}

// Training reports whether c selects training mode; false for a nil c.
func (c *Ctx) Training() bool { return c != nil && c.Train }

// LayerState returns the state range of the layer being applied: the
// layer's own part of c.State. It is nil for a nil c or a Ctx without
// state.
func (c *Ctx) LayerState() []float32 {
	switch {
	case c == nil:
		return nil
	case c.entered:
		return c.cur
	default:
		return c.State
	}
}

// ApplyChild applies child to x for a container layer. p is the child's
// parameter Var, or the zero Var if it has none. [stateLo, stateHi) is the
// child's range of the container's own state, as LayerState returns it.
// ApplyChild records an error on x's tape if the state is shorter than
// that range.
func ApplyChild(c *Ctx, child Layer, p, x ad.Var, stateLo, stateHi int) ad.Var {
	if c == nil || stateLo == stateHi && !c.entered && c.State == nil {
		return child.Apply(c, p, x)
	}
	base := c.LayerState()
	if stateHi > len(base) {
		if t := x.Tape(); t != nil {
			return t.Fail(errorf("the state buffer is too short: a layer needs state [%d, %d) of a range of %d floats (make Ctx.State with InitState(net))", stateLo, stateHi, len(base)))
		}
		return x
	}
	saved, savedEntered := c.cur, c.entered
	c.cur, c.entered = base[stateLo:stateHi:stateHi], true
	y := child.Apply(c, p, x)
	c.cur, c.entered = saved, savedEntered
	return y
}

// Layout returns the layout of net's parameters, with PyTorch-style paths
// such as "0.weight" and "3.bias". It validates the configuration of every
// layer; the error names the layer by its path.
func Layout(net Layer) (*layout.Layout, error) {
	lay, err := build(net.Declare)
	if err != nil {
		return nil, errorf("%w", err)
	}
	return lay, nil
}

// StateLayout returns the layout of net's state buffer, such as
// BatchNorm's running statistics at paths like "1.running_mean". A network
// without state has an empty layout, of Len 0.
func StateLayout(net Layer) (*layout.Layout, error) {
	// A network without state declares none, but its configuration is
	// still checked.
	declare := func(*layout.Builder) error { return net.Declare(layout.NewBuilder()) }
	if s, ok := net.(Stateful); ok {
		declare = s.DeclareState
	}
	lay, err := build(declare)
	if err != nil {
		return nil, errorf("%w", err)
	}
	return lay, nil
}

// build returns the layout that declare declares.
func build(declare func(*layout.Builder) error) (*layout.Layout, error) {
	b := layout.NewBuilder()
	if err := declare(b); err != nil {
		return nil, err
	}
	return b.Build()
}

// Init returns a new parameter buffer for net, laid out by Layout(net). Each
// layer's initialiser fills its range from rng. The initialisers are
// PyTorch's defaults unless an option says otherwise.
func Init(net Layer, rng *rand.Rand) ([]float32, error) {
	if rng == nil {
		return nil, errorf("Init: rng is nil; pass rand.New(rand.NewPCG(seed1, seed2))")
	}
	lay, err := Layout(net)
	if err != nil {
		return nil, err
	}
	θ := make([]float32, lay.Len())
	net.Init(θ, rng)
	return θ, nil
}

// InitState returns a new state buffer for net, laid out by
// StateLayout(net) and set to each layer's initial state. BatchNorm's
// starts at mean 0 and variance 1. It is empty for a network without
// state.
func InitState(net Layer) ([]float32, error) {
	lay, err := StateLayout(net)
	if err != nil {
		return nil, err
	}
	s := make([]float32, lay.Len())
	if st, ok := net.(Stateful); ok {
		st.InitState(s)
	}
	return s, nil
}

// sizes returns how many parameters and state values l declares.
func sizes(l Layer) (params, state int, err error) {
	lay, err := build(l.Declare)
	if err != nil {
		return 0, 0, err
	}
	params = lay.Len()
	if s, ok := l.(Stateful); ok {
		lay, err := build(s.DeclareState)
		if err != nil {
			return 0, 0, err
		}
		state = lay.Len()
	}
	return params, state, nil
}

// fail records err on x's tape and returns a failed Var. A nil err keeps
// the error already recorded.
func fail(x ad.Var, err error) ad.Var {
	t := x.Tape()
	if t == nil {
		return x
	}
	if err == nil {
		err = t.Err()
	}
	return t.Fail(err)
}

// canApply reports on x's tape whether a layer with n parameters and the
// configuration error err, or nil, can apply to x with p. A non-nil err,
// wrapped, is the layer's failure; otherwise checkParams decides.
func canApply(err error, name string, p, x ad.Var, n int) bool {
	if err != nil {
		fail(x, errorf("%w", err))
		return false
	}
	return checkParams(name, p, x, n)
}

// checkParams reports on x's tape whether p holds exactly n parameters.
func checkParams(name string, p, x ad.Var, n int) bool {
	if n == 0 {
		return true
	}
	if p.IsZero() {
		fail(x, errorf("%s: no parameter Var given; the layer needs %d parameters", name, n))
		return false
	}
	if s := p.Shape(); len(s) != 1 || s[0] != n {
		fail(x, errorf("%s: parameter Var has shape %v, want (%d) (the layer's range of the layout)", name, s, n))
		return false
	}
	return true
}
