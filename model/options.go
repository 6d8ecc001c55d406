package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/funcopt"
	"github.com/flatkit/flatkit/internal/geom"
)

// The options of a layer are typed, so that an option that does not apply
// to a layer does not compile; the package doc's Options section has the
// table of kinds and layers.

// WindowOption is an option of the layers that slide a window, Conv,
// ConvTranspose, MaxPool and MeanPool: Stride, Pad and PadSides.
type WindowOption func(*options)

// KernelOption is an option of the convolutions only: Dilation and Groups.
type KernelOption func(*options)

// TransposeOption is an option of ConvTranspose only: OutputPad.
type TransposeOption func(*options)

// AffineOption is an option of the affine layers, Conv, ConvTranspose and
// Dense: NoBias, BiasInit and Activation.
type AffineOption func(*options)

// WeightOption is an option of the layers with a learnable weight, the
// affine layers and Embedding: WeightInit.
type WeightOption func(*options)

// NormOption is an option of the normalisation layers, LayerNorm and
// BatchNorm: NormEps and NoAffine.
type NormOption func(*options)

// MomentumOption is an option of BatchNorm only: BNMomentum.
type MomentumOption func(*options)

// ConvOption is an option of Conv: a WindowOption, KernelOption,
// AffineOption or WeightOption.
type ConvOption interface {
	applier
	convOption()
}

// ConvTransposeOption is an option of ConvTranspose: a ConvOption's kinds
// or a TransposeOption.
type ConvTransposeOption interface {
	applier
	convTransposeOption()
}

// DenseOption is an option of Dense: an AffineOption or a WeightOption.
type DenseOption interface {
	applier
	denseOption()
}

// EmbeddingOption is an option of Embedding: a WeightOption.
type EmbeddingOption interface {
	applier
	embeddingOption()
}

// LayerNormOption is an option of LayerNorm: a NormOption.
type LayerNormOption interface {
	applier
	layerNormOption()
}

// BatchNormOption is an option of BatchNorm: a NormOption or a
// MomentumOption.
type BatchNormOption interface {
	applier
	batchNormOption()
}

// PoolOption is an option of MaxPool and MeanPool: a WindowOption.
type PoolOption interface {
	applier
	poolOption()
}

// applier is what every option interface has: how it sets the options.
type applier interface{ apply(*options) }

// Which layers each kind of option applies to.
var (
	_ ConvOption          = WindowOption(nil)
	_ ConvTransposeOption = WindowOption(nil)
	_ PoolOption          = WindowOption(nil)

	_ ConvOption          = KernelOption(nil)
	_ ConvTransposeOption = KernelOption(nil)

	_ ConvTransposeOption = TransposeOption(nil)

	_ ConvOption          = AffineOption(nil)
	_ ConvTransposeOption = AffineOption(nil)
	_ DenseOption         = AffineOption(nil)

	_ ConvOption          = WeightOption(nil)
	_ ConvTransposeOption = WeightOption(nil)
	_ DenseOption         = WeightOption(nil)
	_ EmbeddingOption     = WeightOption(nil)

	_ LayerNormOption = NormOption(nil)
	_ BatchNormOption = NormOption(nil)

	_ BatchNormOption = MomentumOption(nil)
)

func (o WindowOption) apply(c *options)    { funcopt.Call(o, c) }
func (o KernelOption) apply(c *options)    { funcopt.Call(o, c) }
func (o TransposeOption) apply(c *options) { funcopt.Call(o, c) }
func (o AffineOption) apply(c *options)    { funcopt.Call(o, c) }
func (o WeightOption) apply(c *options)    { funcopt.Call(o, c) }
func (o NormOption) apply(c *options)      { funcopt.Call(o, c) }
func (o MomentumOption) apply(c *options)  { funcopt.Call(o, c) }

func (WindowOption) convOption()             {}
func (WindowOption) convTransposeOption()    {}
func (WindowOption) poolOption()             {}
func (KernelOption) convOption()             {}
func (KernelOption) convTransposeOption()    {}
func (TransposeOption) convTransposeOption() {}
func (AffineOption) convOption()             {}
func (AffineOption) convTransposeOption()    {}
func (AffineOption) denseOption()            {}
func (WeightOption) convOption()             {}
func (WeightOption) convTransposeOption()    {}
func (WeightOption) denseOption()            {}
func (WeightOption) embeddingOption()        {}
func (NormOption) layerNormOption()          {}
func (NormOption) batchNormOption()          {}
func (MomentumOption) batchNormOption()      {}

// collect applies opts in order to zero options and returns them. A nil
// option is skipped, as applyFunc does.
func collect[O applier](opts []O) options {
	var c options
	for _, o := range opts {
		if op := applier(o); op != nil {
			op.apply(&c)
		}
	}
	return c
}

type options struct {
	stride      []int
	padLo       []int
	padHi       []int
	dilation    []int
	outputPad   []int
	groups      int
	noBias      bool
	noAffine    bool
	weightInit  Initializer
	biasInit    Initializer
	act         func(ad.Var) ad.Var
	eps         float32
	epsSet      bool // NormEps was given: eps 0 is then a value, not the default
	momentum    float32
	momentumSet bool // BNMomentum was given
}

// Stride sets the step between windows: one value for every spatial axis
// or one per axis. A convolution's default is 1; a pooling layer's is its
// kernel size.
func Stride(s ...int) WindowOption {
	return func(o *options) { o.stride = s }
}

// Pad adds p zeros on both sides of the spatial axes: one value for every
// axis or one per axis. Default 0.
func Pad(p ...int) WindowOption {
	return func(o *options) { o.padLo, o.padHi = p, p }
}

// PadSides adds lo zeros before and hi zeros after each spatial axis, for
// asymmetric padding. Each takes one value for every axis or one per axis.
func PadSides(lo, hi []int) WindowOption {
	return func(o *options) { o.padLo, o.padHi = lo, hi }
}

// Dilation sets the spacing of a convolution's kernel taps. Default 1.
func Dilation(d ...int) KernelOption {
	return func(o *options) { o.dilation = d }
}

// Groups splits a convolution's channels into g groups (g = in = out is
// depthwise). Default 1.
func Groups(g int) KernelOption {
	return func(o *options) { o.groups = g }
}

// OutputPad adds rows at the high end of a ConvTranspose's output, as
// PyTorch's output_padding does: one value for every axis or one per axis.
// It picks among the input sizes that a strided convolution maps to the
// same output size.
func OutputPad(p ...int) TransposeOption {
	return func(o *options) { o.outputPad = p }
}

// NoBias leaves out a layer's bias.
func NoBias() AffineOption {
	return func(o *options) { o.noBias = true }
}

// NoAffine leaves out a normalisation layer's learnable scale and shift.
func NoAffine() NormOption {
	return func(o *options) { o.noAffine = true }
}

// WeightInit replaces a layer's default weight initialiser.
func WeightInit(f Initializer) WeightOption {
	return func(o *options) { o.weightInit = f }
}

// BiasInit replaces a layer's default bias initialiser.
func BiasInit(f Initializer) AffineOption {
	return func(o *options) { o.biasInit = f }
}

// Activation fuses an activation f into a layer, whose output becomes f
// of the layer's. A fused activation takes no index in a Chain's paths. To
// mirror a PyTorch nn.Sequential exactly, write activations as their own
// layers.
func Activation(f func(ad.Var) ad.Var) AffineOption {
	return func(o *options) { o.act = f }
}

// NormEps sets the small constant that LayerNorm and BatchNorm add to the
// variance. Default 1e-5.
func NormEps(eps float32) NormOption {
	return func(o *options) { o.eps, o.epsSet = eps, true }
}

// BNMomentum sets BatchNorm's running-statistics update:
// running = (1 − m)·running + m·batch. Default 0.1 (PyTorch's).
func BNMomentum(m float32) MomentumOption {
	return func(o *options) { o.momentum, o.momentumSet = m, true }
}

// An Initializer fills w, a weight of the given fan-in and fan-out,
// drawing from rng. Fans are PyTorch's: per group, fan-in is in times the
// kernel's volume and fan-out is out times it.
type Initializer func(rng *rand.Rand, w []float32, fanIn, fanOut int)

// Uniform draws from the uniform distribution on [lo, hi).
func Uniform(lo, hi float64) Initializer {
	return func(rng *rand.Rand, w []float32, _, _ int) {
		for i := range w {
			w[i] = float32(lo + (hi-lo)*rng.Float64())
		}
	}
}

// Normal draws from the normal distribution with the given mean and
// standard deviation.
func Normal(mean, std float64) Initializer {
	return func(rng *rand.Rand, w []float32, _, _ int) {
		for i := range w {
			w[i] = float32(mean + std*rng.NormFloat64())
		}
	}
}

// ConstantInit sets every element to v.
func ConstantInit(v float32) Initializer {
	return func(_ *rand.Rand, w []float32, _, _ int) {
		for i := range w {
			w[i] = v
		}
	}
}

// KaimingUniform is He initialisation for a leaky-ReLU of negative slope a:
// it draws uniformly on ±b, where b² = 6 / ((1 + a²)·fanIn). PyTorch's
// default weight initialiser for Linear and Conv is KaimingUniform(√5),
// which is uniform on ±1/√fanIn.
func KaimingUniform(a float64) Initializer {
	return func(rng *rand.Rand, w []float32, fanIn, _ int) {
		b := math.Sqrt(6 / ((1 + a*a) * float64(max(fanIn, 1))))
		Uniform(-b, b)(rng, w, 0, 0)
	}
}

// KaimingNormal is He initialisation for a leaky-ReLU of negative slope a,
// with a normal distribution: its variance is 2 / ((1 + a²)·fanIn).
func KaimingNormal(a float64) Initializer {
	return func(rng *rand.Rand, w []float32, fanIn, _ int) {
		Normal(0, math.Sqrt(2/((1+a*a)*float64(max(fanIn, 1)))))(rng, w, 0, 0)
	}
}

// GlorotUniform is Xavier initialisation: it draws uniformly on ±gain·b,
// where b² = 6 / (fanIn + fanOut).
func GlorotUniform(gain float64) Initializer {
	return func(rng *rand.Rand, w []float32, fanIn, fanOut int) {
		b := gain * math.Sqrt(6/float64(max(fanIn+fanOut, 1)))
		Uniform(-b, b)(rng, w, 0, 0)
	}
}

// GlorotNormal is Xavier initialisation with a normal distribution: its
// standard deviation is gain·s, where s² = 2 / (fanIn + fanOut).
func GlorotNormal(gain float64) Initializer {
	return func(rng *rand.Rand, w []float32, fanIn, fanOut int) {
		Normal(0, gain*math.Sqrt(2/float64(max(fanIn+fanOut, 1))))(rng, w, 0, 0)
	}
}

// defaultBias is PyTorch's bias initialiser for Linear and Conv: uniform on
// ±1/√fanIn (zero when fanIn is 0).
func defaultBias(rng *rand.Rand, w []float32, fanIn, _ int) {
	b := 0.0
	if fanIn > 0 {
		b = 1 / math.Sqrt(float64(fanIn))
	}
	Uniform(-b, b)(rng, w, 0, 0)
}

// initWeights fills w and b with the chosen or default initialisers.
func (o *options) initWeights(rng *rand.Rand, w, b []float32, fanIn, fanOut int) {
	wi := o.weightInit
	if wi == nil {
		wi = KaimingUniform(math.Sqrt(5))
	}
	wi(rng, w, fanIn, fanOut)
	if len(b) > 0 {
		bi := o.biasInit
		if bi == nil {
			bi = defaultBias
		}
		bi(rng, b, fanIn, fanOut)
	}
}

// spatial expands a per-axis option (nil, one value, or d values) to d
// values by geom.Axes, the rule ad's geometries follow, and checks each is
// at least min, or reports an error naming the option.
func spatial(layer, name string, v []int, d, def, min int) ([]int, error) {
	out := make([]int, d)
	if err := geom.Axes(out, name, v, def); err != nil {
		return nil, fmt.Errorf("%s: %w", layer, err)
	}
	for i, x := range out {
		if x < min {
			return nil, fmt.Errorf("%s: %s %v has %d on axis %d, want ≥ %d", layer, name, v, x, i, min)
		}
	}
	return out, nil
}
