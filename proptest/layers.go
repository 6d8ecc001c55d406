package proptest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// Kind names a kind of layer that Stacks draws.
type Kind string

// The kinds of layers Stacks draws. Relu, LeakyRelu, Elu and MaxPool are
// not twice differentiable everywhere (their kinks and ties); the others
// are smooth.
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

// kindOrder is every kind in a fixed order (map order is random, and
// draws must replay).
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
	// MaxDepth bounds how deep containers (Chain, Skip, Parallel) nest
	// below the top chain. 0 means 2; a negative value means no
	// containers.
	MaxDepth int
	// MaxLayers bounds the number of layers drawn for each chain, the top
	// one and the nested ones (a shape-preserving chain may add one layer
	// to restore its input's channels). 0 means 4.
	MaxLayers int
	// MaxElems bounds the number of elements of the input and of every
	// activation. 0 means 256.
	MaxElems int
	// MaxChannels bounds the channels the layers choose (a Dense's
	// features: MaxChannels + 2); the input has at most min(MaxChannels,
	// 4) channels. 0 means 4. Wider convolutions (Cin/groups·prod(kernel)
	// ≥ 32) take ad's im2col + GEMM path instead of its direct loops.
	MaxChannels int
	// Smooth draws only layers that are twice differentiable everywhere
	// (SmoothKinds), for second-derivative checks.
	Smooth bool
	// Kinds restricts the kinds drawn (intersected with SmoothKinds when
	// Smooth is set). Nil means all. A shape-preserving chain (inside Skip
	// and Parallel) may add a 1×…×1 Conv (ConvTranspose if Conv is not
	// listed) or a Dense to restore its input's channels, only after a
	// listed Conv, ConvTranspose or Dense changed them.
	Kinds []Kind
	// Spatial lists the numbers of spatial axes the input may have: 0 for
	// (N, features), 1 to 3 for (N, C, spatial…). Nil means 0 to 3;
	// numbers for which no listed kind applies are dropped.
	Spatial []int
}

// Stack is a drawn network with the shapes it maps between.
type Stack struct {
	// Net is the network, a model.Chain of the model's layers, except
	// that the non-smooth ones report their decisions to Kinks: Relu,
	// LeakyRelu and Elu are model.Func layers of the same ad ops as
	// model.Relu() and the others, and each model.MaxPool is wrapped.
	Net model.Layer
	// In is the shape of the input, Out the shape of the output.
	In, Out []int
	// Desc describes the stack, e.g. "Chain(Conv2d k=[3 1] 2→4 pad=[1
	// 0]/[1 0], Relu, Flatten, Dense 40→3) on [2 2 5 2]", for failures.
	Desc string
	// Kinds lists the kinds the stack holds, each once, in AllKinds order.
	Kinds []Kind
	// Kinks watches the decisions of the non-smooth layers (ReLU signs,
	// max-pool winners); nil when the stack has none.
	Kinks *Kinks
}

// String returns s.Desc.
func (s Stack) String() string { return s.Desc }

// Ctx returns a fresh context to apply s.Net with: training or test mode,
// a new state buffer from model.InitState (BatchNorm's running statistics,
// which training mode updates in place) and an RNG of a fixed seed (so
// that a random layer draws the same in every pass). Use a new one for
// each pass of a derivative check: each pass then computes the same
// function.
func (s Stack) Ctx(train bool) *model.Ctx {
	st, _ := model.InitState(s.Net) // a drawn stack has a valid state layout
	return &model.Ctx{Train: train, State: st, RNG: rand.New(rand.NewPCG(1, 2))}
}

// Has reports whether the stack holds a layer of kind k.
func (s Stack) Has(k Kind) bool { return slices.Contains(s.Kinds, k) }

// Kinks records the decisions that the non-smooth layers of a Stack take
// on each forward pass: which inputs of a Relu, LeakyRelu or Elu are
// positive, which inputs of a MaxPool win. A finite difference is only
// valid if every pass it makes takes the same decisions as the pass at
// the point itself; Crossed tells whether some pass since Reset did not,
// in which case a derivative check that failed is inconclusive, not
// wrong. A Kinks is safe for concurrent use.
type Kinks struct {
	mu      sync.Mutex
	first   []uint64 // per watched layer: the decisions of its first pass
	seen    []bool
	crossed bool
}

// Reset forgets the decisions recorded so far.
func (k *Kinks) Reset() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.seen)
	k.crossed = false
}

// Crossed reports whether some layer took different decisions in two
// passes since Reset. It is false for a nil Kinks.
func (k *Kinks) Crossed() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.crossed
}

func (k *Kinks) watch() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.first = append(k.first, 0)
	k.seen = append(k.seen, false)
	return len(k.first) - 1
}

func (k *Kinks) record(id int, h uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case !k.seen[id]:
		k.first[id], k.seen[id] = h, true
	case k.first[id] != h:
		k.crossed = true
	}
}

// positiveHash hashes which elements of x are positive.
func positiveHash(x []float32) uint64 {
	h := fnv.New64a()
	var b byte
	for i, v := range x {
		if v > 0 {
			b |= 1 << (i % 8)
		}
		if i%8 == 7 || i == len(x)-1 {
			h.Write([]byte{b})
			b = 0
		}
	}
	return h.Sum64()
}

// winnersHash hashes which input won each window of a max-pool: per
// (n, c) plane and output, the first position of the plane of x that holds
// the output's value (the winner itself when the plane has no ties).
func winnersHash(x, y []float32, planes int) uint64 {
	h := fnv.New64a()
	if planes == 0 || len(x)%planes != 0 || len(y)%planes != 0 {
		return 0
	}
	nx, ny := len(x)/planes, len(y)/planes
	var buf [2]byte
	for p := range planes {
		xs := x[p*nx : (p+1)*nx]
		for _, v := range y[p*ny : (p+1)*ny] {
			i := slices.Index(xs, v)
			buf[0], buf[1] = byte(i), byte(i>>8)
			h.Write(buf[:])
		}
	}
	return h.Sum64()
}

// watchedFunc is an activation that reports which of its inputs are
// positive to k.
func watchedFunc(k *Kinks, name string, f func(ad.Var) ad.Var) model.Layer {
	id := k.watch()
	return model.Func(name, func(x ad.Var) ad.Var {
		if d := x.Data(); d != nil {
			k.record(id, positiveHash(d))
		}
		return f(x)
	})
}

// watchedPool wraps a max-pool layer so that it reports its winners to k.
type watchedPool struct {
	model.Layer
	k  *Kinks
	id int
}

// Apply applies the wrapped layer and records which inputs won.
func (w *watchedPool) Apply(c *model.Ctx, p, x ad.Var) ad.Var {
	y := w.Layer.Apply(c, p, x)
	if s := x.Shape(); len(s) >= 2 && x.Data() != nil && y.Data() != nil {
		w.k.record(w.id, winnersHash(x.Data(), y.Data(), s[0]*s[1]))
	}
	return y
}

// Stacks draws random valid networks: a model.Chain of Dense, Conv and
// ConvTranspose (1-3 D, random kernel, stride, per-side padding, dilation,
// output padding and groups, depthwise included), MaxPool, MeanPool,
// AdaptiveMeanPool, GlobalMeanPool, Flatten, LayerNorm (over 1 to all but
// the batch axis), BatchNorm, Dropout and activation layers, nested
// Chains, Skip connections (ad.Add around a shape-preserving chain) and
// Parallel branches (of equal output shapes, combined with ad.Add).
//
// The generator tracks the activation's shape, so every stack applies to
// its In without error and gives Out, in test and in training mode (with
// a Ctx from Stack.Ctx). Tensors stay small (MaxElems) so that derivative
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
// ties (NoTies), so that no ReLU or max-pool right after the input sits on
// its kink.
func InputFor(s Stack) *rapid.Generator[[]float32] { return NoTies(numel(s.In)) }

// ParamsFor draws parameters for s: model.Init with a drawn seed, PyTorch's
// default initialisations, so that activations neither vanish nor
// saturate.
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

// stackGen is the state of one draw.
type stackGen struct {
	t     *rapid.T
	o     StackOptions
	allow map[Kind]bool
	used  map[Kind]bool
	kinks *Kinks
}

// drawn is a drawn layer: make builds it (again, with the same geometry and
// fresh watchers: Parallel uses one drawn tail on every branch), out is its
// output shape.
type drawn struct {
	make func() model.Layer
	out  []int
	desc string
}

func numel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// input draws an input shape with d spatial axes.
func (g *stackGen) input(d int) []int {
	t := g.t
	s := []int{rapid.IntRange(1, 2).Draw(t, "batch")}
	if d == 0 {
		s = append(s, rapid.IntRange(1, 8).Draw(t, "features"))
	} else {
		s = append(s, rapid.IntRange(1, min(g.o.MaxChannels, 4)).Draw(t, "channels"))
		hi := [4]int{0, 10, 6, 4}[d]
		for range d {
			s = append(s, rapid.IntRange(1, hi).Draw(t, "size"))
		}
	}
	for numel(s) > g.o.MaxElems {
		i := 0
		for j := range s {
			if s[j] > s[i] {
				i = j
			}
		}
		s[i]--
	}
	return s
}

// candidates lists the kinds that apply to shape s; with preserve, only
// those that keep the spatial shape (channels may change: the chain
// restores them).
func (g *stackGen) candidates(s []int, depth int, preserve bool) []Kind {
	var out []Kind
	spatial := len(s) > 2
	for _, k := range kindOrder {
		i := kinds[k]
		if !g.allow[k] || spatial && !i.spatial || !spatial && !i.flat {
			continue
		}
		if i.container {
			if depth >= g.o.MaxDepth || (k != Chain || preserve) && len(g.candidates(s, g.o.MaxDepth, true)) == 0 {
				continue
			}
		}
		if k == BatchNorm && numel(s) < minNormGroup*s[1] || k == LayerNorm && numel(s) < minNormGroup*s[0] {
			continue
		}
		if preserve {
			switch k {
			case GlobalMeanPool:
				if numel(s[2:]) != 1 {
					continue
				}
			case Flatten:
				if spatial {
					continue
				}
			}
		}
		out = append(out, k)
	}
	return out
}

// chain draws a chain of layers on input shape in. With preserve its
// output has the shape of its input.
func (g *stackGen) chain(in []int, depth int, preserve bool) drawn {
	t := g.t
	n := rapid.IntRange(1, g.o.MaxLayers).Draw(t, "layers")
	var parts []drawn
	cur := in
	for range n {
		c := g.candidates(cur, depth, preserve)
		if len(c) == 0 {
			break
		}
		d := g.layer(rapid.SampledFrom(weighted(c)).Draw(t, "kind"), cur, depth, preserve)
		parts = append(parts, d)
		cur = d.out
	}
	if preserve && !slices.Equal(cur, in) {
		parts = append(parts, g.restore(cur, in))
		cur = in
	}
	descs := make([]string, len(parts))
	for i, p := range parts {
		descs[i] = p.desc
	}
	return drawn{
		make: func() model.Layer {
			ls := make([]model.Layer, len(parts))
			for i, p := range parts {
				ls[i] = p.make()
			}
			return model.Chain(ls...)
		},
		out:  cur,
		desc: "Chain(" + strings.Join(descs, ", ") + ")",
	}
}

// restore maps cur back to in; they differ only in the channels (axis 1),
// which only a Dense (on (N, features)), a Conv or a ConvTranspose
// changed.
func (g *stackGen) restore(cur, in []int) drawn {
	if len(cur) == 2 {
		a, b := cur[1], in[1]
		return drawn{func() model.Layer { return model.Dense(a, b) }, in, fmt.Sprintf("Dense %d→%d", a, b)}
	}
	d := len(cur) - 2
	k := make([]int, d)
	for i := range k {
		k[i] = 1
	}
	a, b := cur[1], in[1]
	if !g.allow[Conv] {
		return drawn{func() model.Layer { return model.ConvTranspose(k, a, b) }, in, fmt.Sprintf("ConvTranspose%dd k=%v %d→%d", d, k, a, b)}
	}
	return drawn{func() model.Layer { return model.Conv(k, a, b) }, in, fmt.Sprintf("Conv%dd k=%v %d→%d", d, k, a, b)}
}

// layer draws one layer of kind k on shape s.
func (g *stackGen) layer(k Kind, s []int, depth int, preserve bool) drawn {
	t := g.t
	g.used[k] = true
	same := func(f func() model.Layer, desc string) drawn { return drawn{f, s, desc} }
	switch k {
	case Dense:
		return g.dense(s, preserve)
	case Conv:
		return g.conv(s, preserve, false)
	case ConvTranspose:
		return g.conv(s, preserve, true)
	case MeanPool, MaxPool:
		return g.pool(k, s, preserve)
	case AdaptiveMeanPool:
		out := slices.Clone(s)
		for i := 2; i < len(s); i++ {
			if !preserve {
				out[i] = rapid.IntRange(1, s[i]).Draw(t, "adaptiveSize")
			}
		}
		size := slices.Clone(out[2:])
		return drawn{func() model.Layer { return model.AdaptiveMeanPool(size...) }, out, fmt.Sprintf("AdaptiveMeanPool %v", size)}
	case GlobalMeanPool:
		out := slices.Clone(s)
		for i := 2; i < len(s); i++ {
			out[i] = 1
		}
		return drawn{func() model.Layer { return model.GlobalMeanPool() }, out, "GlobalMeanPool"}
	case Flatten:
		return drawn{func() model.Layer { return model.Flatten() }, []int{s[0], numel(s[1:])}, "Flatten"}
	case LayerNorm, BatchNorm:
		eps := rapid.SampledFrom(normEps).Draw(t, "eps")
		opts := []model.Option{model.Eps(eps)}
		desc := fmt.Sprintf(" eps=%g", eps)
		if rapid.IntRange(0, 3).Draw(t, "noAffine") == 0 {
			opts = append(opts, model.NoAffine())
			desc += " noaffine"
		}
		if k == BatchNorm {
			c := s[1]
			return same(func() model.Layer { return model.BatchNorm(c, opts...) }, fmt.Sprintf("BatchNorm %d", c)+desc)
		}
		// Normalise over 1 to all but the batch axis, at least
		// minNormGroup values.
		least := 1
		for numel(s[len(s)-least:]) < minNormGroup {
			least++
		}
		shape := slices.Clone(s[len(s)-rapid.IntRange(least, len(s)-1).Draw(t, "normAxes"):])
		return same(func() model.Layer { return model.LayerNorm(shape, opts...) }, fmt.Sprintf("LayerNorm %v", shape)+desc)
	case Dropout:
		p := rapid.SampledFrom([]float32{0.25, 0.5, 0}).Draw(t, "dropP")
		return same(func() model.Layer { return model.Dropout(p) }, fmt.Sprintf("Dropout(%g)", p))
	case Tanh:
		return same(func() model.Layer { return model.Tanh() }, "Tanh")
	case Sigmoid:
		return same(func() model.Layer { return model.Sigmoid() }, "Sigmoid")
	case Softplus:
		return same(func() model.Layer { return model.Softplus() }, "Softplus")
	case Gelu:
		return same(func() model.Layer { return model.Gelu() }, "Gelu")
	case Swish:
		return same(func() model.Layer { return model.Swish() }, "Swish")
	case Relu:
		return same(func() model.Layer { return watchedFunc(g.kinks, "Relu", ad.Relu) }, "Relu")
	case LeakyRelu:
		a := rapid.SampledFrom([]float32{0.01, 0.1, 0.3}).Draw(t, "slope")
		return same(func() model.Layer {
			return watchedFunc(g.kinks, "LeakyRelu", func(x ad.Var) ad.Var { return ad.LeakyRelu(x, a) })
		}, fmt.Sprintf("LeakyRelu(%g)", a))
	case Elu:
		a := rapid.SampledFrom([]float32{1, 0.5}).Draw(t, "alpha")
		return same(func() model.Layer {
			return watchedFunc(g.kinks, "Elu", func(x ad.Var) ad.Var { return ad.Elu(x, a) })
		}, fmt.Sprintf("Elu(%g)", a))
	case Skip:
		in := g.chain(s, depth+1, true)
		return same(func() model.Layer { return model.Skip(in.make(), ad.Add) }, "Skip("+in.desc+", Add)")
	case Parallel:
		return g.parallel(s, depth, preserve)
	case Chain:
		return g.chain(s, depth+1, preserve)
	}
	panic("proptest: unknown layer kind " + string(k))
}

// dense draws a Dense on the last axis of s.
func (g *stackGen) dense(s []int, preserve bool) drawn {
	in := s[len(s)-1]
	out := in
	if !preserve || len(s) == 2 {
		hi := min(g.o.MaxChannels+2, g.o.MaxElems*in/numel(s))
		out = rapid.IntRange(1, max(hi, 1)).Draw(g.t, "denseOut")
	}
	noBias := rapid.IntRange(0, 4).Draw(g.t, "noBias") == 0
	o := slices.Clone(s)
	o[len(o)-1] = out
	desc := fmt.Sprintf("Dense %d→%d", in, out)
	if noBias {
		desc += " nobias"
	}
	return drawn{func() model.Layer {
		if noBias {
			return model.Dense(in, out, model.NoBias())
		}
		return model.Dense(in, out)
	}, o, desc}
}

// normEps are the Eps of the normalisation layers drawn, and minNormGroup
// the fewest values they normalise together: a group of two or three
// values, or of nearly equal ones with PyTorch's eps of 1e-5, makes the
// layer's derivatives vary on a scale that float32 finite differences
// cannot resolve (the rules are the same for any eps and group).
var normEps = []float32{0.1, 0.5}

const minNormGroup = 4

// weights make the layers that change shapes and hold parameters more
// frequent than the eight activations; a kind not listed has weight 1.
var weights = map[Kind]int{Dense: 4, Conv: 6, ConvTranspose: 3, MeanPool: 2, MaxPool: 2, Skip: 2, Parallel: 2}

// weighted repeats each kind of c by its weight, for a uniform draw.
func weighted(c []Kind) []Kind {
	var out []Kind
	for _, k := range c {
		for range max(weights[k], 1) {
			out = append(out, k)
		}
	}
	return out
}

// divisors returns the divisors of n in increasing order.
func divisors(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// conv draws a convolution (or, with transpose, a transposed convolution)
// on s = (N, C, spatial…): kernel 1-3, stride 1-2, per-side padding,
// dilation 1-2, output padding, groups (depthwise sometimes). With
// preserve the stride is 1 and the padding keeps the spatial size.
func (g *stackGen) conv(s []int, preserve, transpose bool) drawn {
	t := g.t
	d := len(s) - 2
	kernel, stride, lo, hi, dil, opad := make([]int, d), make([]int, d), make([]int, d), make([]int, d), make([]int, d), make([]int, d)
	out := slices.Clone(s)
	for i := range d {
		size := s[2+i]
		k := rapid.IntRange(1, 3).Draw(t, "kernel")
		dl := 1
		if k > 1 && rapid.IntRange(0, 2).Draw(t, "dilated") == 0 {
			dl = 2
		}
		st, pl, ph, op := 1, 0, 0, 0
		switch {
		case preserve:
			pl = rapid.IntRange(0, dl*(k-1)).Draw(t, "padLo")
			ph = dl*(k-1) - pl
		case transpose:
			st = rapid.IntRange(1, 2).Draw(t, "stride")
			pl = rapid.IntRange(0, k-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, k-1).Draw(t, "padHi")
			op = rapid.IntRange(0, max(st, dl)-1).Draw(t, "outputPad")
			for (size-1)*st-pl-ph+dl*(k-1)+op+1 < 1 {
				if pl > 0 {
					pl--
				} else {
					ph--
				}
			}
		default:
			st = rapid.IntRange(1, 2).Draw(t, "stride")
			pl = rapid.IntRange(0, k-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, k-1).Draw(t, "padHi")
			if size+pl+ph < dl*(k-1)+1 {
				dl = 1
				k = min(k, size+pl+ph)
			}
		}
		kernel[i], stride[i], lo[i], hi[i], dil[i], opad[i] = k, st, pl, ph, dl, op
		if transpose {
			out[2+i] = (size-1)*st - pl - ph + dl*(k-1) + op + 1
		} else {
			out[2+i] = (size+pl+ph-dl*(k-1)-1)/st + 1
		}
	}
	if numel(out[2:])*s[0] > g.o.MaxElems {
		// Padding or upsampling grew the activation past the bound: fall
		// back to a 1×…×1 kernel, no padding.
		for i := range d {
			kernel[i], stride[i], lo[i], hi[i], dil[i], opad[i] = 1, 1, 0, 0, 1, 0
			out[2+i] = s[2+i]
		}
	}
	cin := s[1]
	maxC := max(min(g.o.MaxChannels, g.o.MaxElems/(s[0]*numel(out[2:]))), 1)
	var groups, cout int
	if cin <= maxC && rapid.IntRange(0, 3).Draw(t, "depthwise") == 0 {
		groups, cout = cin, cin
	} else {
		var ok []int
		for _, v := range divisors(cin) {
			if v <= maxC {
				ok = append(ok, v)
			}
		}
		groups = rapid.SampledFrom(ok).Draw(t, "groups")
		cout = groups * rapid.IntRange(1, maxC/groups).Draw(t, "outPerGroup")
	}
	out[1] = cout
	noBias := rapid.IntRange(0, 4).Draw(t, "noBias") == 0
	name := "Conv"
	if transpose {
		name = "ConvTranspose"
	}
	desc := fmt.Sprintf("%s%dd k=%v %d→%d", name, d, kernel, cin, cout)
	opts := []model.Option{model.PadSides(lo, hi)}
	notAll := func(v []int, x int) bool { return slices.ContainsFunc(v, func(y int) bool { return y != x }) }
	if notAll(stride, 1) {
		desc += fmt.Sprintf(" stride=%v", stride)
		opts = append(opts, model.Stride(stride...))
	}
	if notAll(lo, 0) || notAll(hi, 0) {
		desc += fmt.Sprintf(" pad=%v/%v", lo, hi)
	}
	if notAll(dil, 1) {
		desc += fmt.Sprintf(" dil=%v", dil)
		opts = append(opts, model.Dilation(dil...))
	}
	if notAll(opad, 0) {
		desc += fmt.Sprintf(" outpad=%v", opad)
		opts = append(opts, model.OutputPad(opad...))
	}
	if groups > 1 {
		desc += fmt.Sprintf(" groups=%d", groups)
		opts = append(opts, model.Groups(groups))
	}
	if noBias {
		desc += " nobias"
		opts = append(opts, model.NoBias())
	}
	if transpose {
		return drawn{func() model.Layer { return model.ConvTranspose(kernel, cin, cout, opts...) }, out, desc}
	}
	return drawn{func() model.Layer { return model.Conv(kernel, cin, cout, opts...) }, out, desc}
}

// pool draws a max- or mean-pool on s: kernel 1-3 (at most the size),
// stride 1 to the kernel, padding on each side smaller than the kernel.
// With preserve the stride is 1 and the padding keeps the spatial size.
func (g *stackGen) pool(k Kind, s []int, preserve bool) drawn {
	t := g.t
	d := len(s) - 2
	geom := ad.PoolGeom{Kernel: make([]int, d), Stride: make([]int, d), PadLo: make([]int, d), PadHi: make([]int, d)}
	out := slices.Clone(s)
	for i := range d {
		size := s[2+i]
		kk := rapid.IntRange(1, min(3, size)).Draw(t, "poolKernel")
		st, pl, ph := 1, 0, 0
		if preserve {
			pl = rapid.IntRange(0, kk-1).Draw(t, "padLo")
			ph = kk - 1 - pl
		} else {
			st = rapid.IntRange(1, kk).Draw(t, "poolStride")
			pl = rapid.IntRange(0, kk-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, kk-1).Draw(t, "padHi")
		}
		geom.Kernel[i], geom.Stride[i], geom.PadLo[i], geom.PadHi[i] = kk, st, pl, ph
		out[2+i] = (size+pl+ph-kk)/st + 1
	}
	if numel(out) > g.o.MaxElems {
		for i := range d {
			geom.PadLo[i], geom.PadHi[i], geom.Stride[i] = 0, 0, geom.Kernel[i]
			out[2+i] = (s[2+i]-geom.Kernel[i])/geom.Kernel[i] + 1
		}
	}
	desc := fmt.Sprintf("%s k=%v stride=%v pad=%v/%v", k, geom.Kernel, geom.Stride, geom.PadLo, geom.PadHi)
	opts := []model.Option{model.Stride(geom.Stride...), model.PadSides(geom.PadLo, geom.PadHi)}
	if k == MeanPool {
		return drawn{func() model.Layer { return model.MeanPool(geom.Kernel, opts...) }, out, desc}
	}
	return drawn{func() model.Layer {
		return &watchedPool{Layer: model.MaxPool(geom.Kernel, opts...), k: g.kinks, id: g.kinks.watch()}
	}, out, desc}
}

// parallel draws 2 or 3 branches on s. Each is a shape-preserving chain,
// followed (unless preserve) by a tail of one drawn geometry, made anew
// for each branch, so that the branches' outputs have equal shapes.
func (g *stackGen) parallel(s []int, depth int, preserve bool) drawn {
	t := g.t
	n := rapid.IntRange(2, 3).Draw(t, "branches")
	var tail *drawn
	out := s
	if !preserve && rapid.Bool().Draw(t, "tail") {
		var c []Kind
		for _, k := range g.candidates(s, g.o.MaxDepth, false) {
			if !kinds[k].container {
				c = append(c, k)
			}
		}
		if len(c) > 0 {
			d := g.layer(rapid.SampledFrom(c).Draw(t, "tailKind"), s, depth, false)
			tail, out = &d, d.out
		}
	}
	branches := make([]drawn, n)
	descs := make([]string, n)
	for i := range branches {
		branches[i] = g.chain(s, depth+1, true)
		descs[i] = branches[i].desc
		if tail != nil {
			descs[i] = "Chain(" + descs[i] + ", " + tail.desc + ")"
		}
	}
	return drawn{func() model.Layer {
		ls := make([]model.Layer, n)
		for i, b := range branches {
			ls[i] = b.make()
			if tail != nil {
				ls[i] = model.Chain(ls[i], tail.make())
			}
		}
		return model.Parallel(ad.Add, ls...)
	}, out, "Parallel(Add, " + strings.Join(descs, ", ") + ")"}
}
