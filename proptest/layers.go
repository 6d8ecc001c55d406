package proptest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/model"
)

// Kind names a kind of layer that Stacks draws.
type Kind string

// The kinds of layers Stacks draws. Relu, LeakyRelu, Elu and MaxPool are
// not twice differentiable everywhere, because of their kinks and ties.
// The others are smooth.
const (
	Dense            Kind = "Dense"
	Conv             Kind = "Conv"
	ConvTranspose    Kind = "ConvTranspose"
	MeanPool         Kind = "MeanPool"
	MaxPool          Kind = "MaxPool"
	AdaptiveMeanPool Kind = "AdaptiveMeanPool"
	GlobalMeanPool   Kind = "GlobalMeanPool"
	Flatten          Kind = "Flatten"
	LayerNorm        Kind = "LayerNorm"
	BatchNorm        Kind = "BatchNorm"
	Dropout          Kind = "Dropout"
	Tanh             Kind = "Tanh"
	Sigmoid          Kind = "Sigmoid"
	Softplus         Kind = "Softplus"
	Gelu             Kind = "Gelu"
	Swish            Kind = "Swish"
	Elu              Kind = "Elu"
	LeakyRelu        Kind = "LeakyRelu"
	Relu             Kind = "Relu"
	Skip             Kind = "Skip"
	Parallel         Kind = "Parallel"
	Chain            Kind = "Chain"
)

// kindInfo says where a kind applies and what it is.
type kindInfo struct {
	flat, spatial bool // applies to (N, features) and to (N, C, spatial…)
	kink          bool // not twice differentiable everywhere
	container     bool
}

var kinds = map[Kind]kindInfo{
	Dense:            {flat: true, spatial: true},
	Conv:             {spatial: true},
	ConvTranspose:    {spatial: true},
	MeanPool:         {spatial: true},
	MaxPool:          {spatial: true, kink: true},
	AdaptiveMeanPool: {spatial: true},
	GlobalMeanPool:   {spatial: true},
	Flatten:          {flat: true, spatial: true},
	LayerNorm:        {flat: true, spatial: true},
	BatchNorm:        {flat: true, spatial: true},
	Dropout:          {flat: true, spatial: true},
	Tanh:             {flat: true, spatial: true},
	Sigmoid:          {flat: true, spatial: true},
	Softplus:         {flat: true, spatial: true},
	Gelu:             {flat: true, spatial: true},
	Swish:            {flat: true, spatial: true},
	Elu:              {flat: true, spatial: true, kink: true},
	LeakyRelu:        {flat: true, spatial: true, kink: true},
	Relu:             {flat: true, spatial: true, kink: true},
	Skip:             {flat: true, spatial: true, container: true},
	Parallel:         {flat: true, spatial: true, container: true},
	Chain:            {flat: true, spatial: true, container: true},
}

// kindOrder is every kind in a fixed order: map order is random, and
// draws must replay.
var kindOrder = []Kind{
	Dense, Conv, ConvTranspose, MeanPool, MaxPool, AdaptiveMeanPool, GlobalMeanPool,
	Flatten, LayerNorm, BatchNorm, Dropout, Tanh, Sigmoid, Softplus, Gelu, Swish, Elu, LeakyRelu, Relu,
	Skip, Parallel, Chain,
}

// AllKinds returns every kind Stacks can draw, in a fixed order.
func AllKinds() []Kind { return slices.Clone(kindOrder) }

// SmoothKinds returns the kinds that are twice differentiable everywhere:
// AllKinds without Relu, LeakyRelu, Elu and MaxPool.
func SmoothKinds() []Kind {
	var out []Kind
	for _, k := range kindOrder {
		if !kinds[k].kink {
			out = append(out, k)
		}
	}
	return out
}

// StackOptions configures Stacks. The zero value draws every kind, chains
// of up to 4 layers nested 2 deep, activations of at most 256 elements.
type StackOptions struct {
	// MaxDepth bounds how deep the containers Chain, Skip and Parallel
	// nest below the top chain. 0 means 2; a negative value means no
	// containers.
	MaxDepth int
	// MaxLayers bounds the number of layers drawn for each chain, the top
	// one and the nested ones. A shape-preserving chain may add one layer
	// to restore its input's channels. 0 means 4.
	MaxLayers int
	// MaxElems bounds the number of elements of the input and of every
	// activation. 0 means 256.
	MaxElems int
	// MaxChannels bounds the channels the layers choose; a Dense may have
	// MaxChannels + 2 features. The input has at most MaxChannels channels,
	// and at most 4. 0 means 4. Wider convolutions take ad's im2col + GEMM
	// path instead of its direct loops: those whose Cin/groups times the
	// kernel's volume is 32 or more.
	MaxChannels int
	// Smooth draws only layers that are twice differentiable everywhere,
	// the SmoothKinds, for second-derivative checks.
	Smooth bool
	// Kinds restricts the kinds drawn, intersected with SmoothKinds when
	// Smooth is set. Nil means all. A shape-preserving chain inside Skip
	// and Parallel may add a Dense or a 1×…×1 Conv to restore its input's
	// channels; a ConvTranspose if Conv is not listed. It does so only
	// after a listed Conv, ConvTranspose or Dense changed them.
	Kinds []Kind
	// Spatial lists the numbers of spatial axes the input may have. 0
	// means an input (N, features); 1 to 3 mean (N, C, spatial…). Nil means
	// 0 to 3. Numbers for which no listed kind applies are dropped.
	Spatial []int
}

// Stack is a drawn network with the shapes it maps between.
type Stack struct {
	// Net is the network, a model.Chain of the model's layers, except
	// that the non-smooth ones report their decisions to Kinks. Relu,
	// LeakyRelu and Elu are model.Func layers of the same ad ops as
	// model.Relu() and the others. Each model.MaxPool is wrapped.
	Net model.Layer
	// In is the shape of the input, Out the shape of the output.
	In, Out []int
	// Desc describes the stack for failures, for example "Chain(Conv2d
	// k=[3 1] 2→4 pad=[1 0]/[1 0], Relu, Flatten, Dense 40→3) on [2 2 5
	// 2]".
	Desc string
	// Kinds lists the kinds the stack holds, each once, in AllKinds order.
	Kinds []Kind
	// Kinks watches the decisions of the non-smooth layers: ReLU signs and
	// max-pool winners. It is nil when the stack has none.
	Kinks *Kinks
}

// String returns s.Desc.
func (s Stack) String() string { return s.Desc }

// Ctx returns a fresh context to apply s.Net with. It holds training or
// test mode, a new state buffer from model.InitState and an RNG of a
// fixed seed. The state holds BatchNorm's running statistics, which
// training mode updates in place. The fixed seed makes a random layer draw
// the same in every pass. Use a new Ctx for each pass of a derivative
// check: each pass then computes the same function.
func (s Stack) Ctx(train bool) *model.Ctx {
	st, _ := model.InitState(s.Net) // a drawn stack has a valid state layout
	return &model.Ctx{Train: train, State: st, RNG: rand.New(rand.NewPCG(1, 2))}
}

// Stacks draws random valid networks: a model.Chain of layers of every
// kind. Dense, Conv and ConvTranspose come in 1 to 3 spatial dimensions,
// with a random kernel, stride, per-side padding, dilation, output padding
// and groups, depthwise included. Then MaxPool, MeanPool,
// AdaptiveMeanPool, GlobalMeanPool, Flatten, BatchNorm, Dropout and the
// activations. LayerNorm normalises over 1 to all but the batch axis. Skip
// connections add a shape-preserving chain to its input with ad.Add.
// Parallel branches have equal output shapes and are combined with ad.Add.
// Chains nest.
//
// The generator tracks the activation's shape. So every stack applies to
// its In without error and gives Out, in test and in training mode, with a
// Ctx from Stack.Ctx. Tensors stay within MaxElems, so that derivative
// checks through the stacks are fast. LayerNorm and BatchNorm normalise
// groups of at least four values with Eps 0.1 or 0.5, so that finite
// differences resolve them.
func Stacks(opts StackOptions) *rapid.Generator[Stack] {
	o := opts
	if o.MaxDepth == 0 {
		o.MaxDepth = 2
	}
	if o.MaxLayers <= 0 {
		o.MaxLayers = 4
	}
	if o.MaxElems <= 0 {
		o.MaxElems = 256
	}
	if o.MaxChannels <= 0 {
		o.MaxChannels = 4
	}
	allow := map[Kind]bool{}
	for _, k := range kindOrder {
		if (o.Kinds == nil || slices.Contains(o.Kinds, k)) && !(o.Smooth && kinds[k].kink) {
			allow[k] = true
		}
	}
	var dims []int
	for _, d := range []int{0, 1, 2, 3} {
		if o.Spatial != nil && !slices.Contains(o.Spatial, d) {
			continue
		}
		for _, k := range kindOrder {
			if i := kinds[k]; allow[k] && !i.container && (d == 0 && i.flat || d > 0 && i.spatial) {
				dims = append(dims, d)
				break
			}
		}
	}
	return rapid.Custom(func(t *rapid.T) Stack {
		if len(dims) == 0 {
			t.Fatalf("proptest: Stacks: no layer kind in %v (Smooth %v) applies to inputs with %v spatial axes", o.Kinds, o.Smooth, o.Spatial)
		}
		g := &stackGen{t: t, o: o, allow: allow, used: map[Kind]bool{}, kinks: &Kinks{}}
		in := g.input(rapid.SampledFrom(dims).Draw(t, "spatialAxes"))
		d := g.chain(in, 0, false)
		s := Stack{Net: d.make(), In: in, Out: d.out, Desc: d.desc + " on " + fmt.Sprint(in)}
		for _, k := range kindOrder {
			if g.used[k] {
				s.Kinds = append(s.Kinds, k)
			}
		}
		if g.kinks.first != nil {
			s.Kinks = g.kinks
		}
		return s
	})
}

// InputFor draws an input for s: values of shape s.In in ±[0.1, 2] without
// ties, by NoTies. So no ReLU or max-pool right after the input sits on its
// kink.
func InputFor(s Stack) *rapid.Generator[[]float32] { return NoTies(numel(s.In)) }

// ParamsFor draws parameters for s by model.Init with a drawn seed.
// PyTorch's default initialisations keep the activations from vanishing or
// saturating.
func ParamsFor(s Stack) *rapid.Generator[[]float32] {
	return rapid.Custom(func(t *rapid.T) []float32 {
		seed := rapid.Uint64().Draw(t, "seed")
		θ, err := model.Init(s.Net, rand.New(rand.NewPCG(seed, 0x5eed)))
		if err != nil {
			t.Fatalf("proptest: ParamsFor: %v\nstack: %s", err, s.Desc)
		}
		return θ
	})
}
