package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/geom"
)

// Option configures a layer. Each layer accepts the options that make sense
// for it; any other is a configuration error reported by Layout.
type Option func(*options)

type optKind uint16

const (
	optStride optKind = 1 << iota
	optPad
	optDilation
	optGroups
	optBias
	optWeightInit
	optBiasInit
	optActivation
	optOutputPad
	optEps
	optMomentum
	optAffine
)

var optNames = map[optKind]string{
	optStride: "Stride", optPad: "Pad", optDilation: "Dilation", optGroups: "Groups",
	optBias: "NoBias", optWeightInit: "WeightInit", optBiasInit: "BiasInit",
	optActivation: "Activation", optOutputPad: "OutputPad", optEps: "NormEps",
	optMomentum: "BNMomentum", optAffine: "NoAffine",
}

type options struct {
	set        optKind
	stride     []int
	padLo      []int
	padHi      []int
	dilation   []int
	outputPad  []int
	groups     int
	noBias     bool
	noAffine   bool
	weightInit Initializer
	biasInit   Initializer
	act        func(ad.Var) ad.Var
	eps        float32
	momentum   float32
}

// check returns an error naming the first option set that is not allowed.
func (o *options) check(layer string, allowed optKind) error {
	if bad := o.set &^ allowed; bad != 0 {
		for k := optKind(1); k != 0; k <<= 1 {
			if bad&k != 0 {
				return fmt.Errorf("%s: option %s does not apply to this layer", layer, optNames[k])
			}
		}
	}
	return nil
}

// Stride sets the step between windows: one value for every spatial axis
// or one per axis. A convolution's default is 1; a pooling layer's is its
// kernel size.
func Stride(s ...int) Option {
	return func(o *options) { o.set |= optStride; o.stride = s }
}

// Pad adds p zeros on both sides of the spatial axes: one value for every
// axis or one per axis. Default 0.
func Pad(p ...int) Option {
	return func(o *options) { o.set |= optPad; o.padLo, o.padHi = p, p }
}

// PadSides adds lo zeros before and hi zeros after each spatial axis, for
// asymmetric padding. Each takes one value for every axis or one per axis.
func PadSides(lo, hi []int) Option {
	return func(o *options) { o.set |= optPad; o.padLo, o.padHi = lo, hi }
}

// Dilation sets the spacing of a convolution's kernel taps. Default 1.
func Dilation(d ...int) Option {
	return func(o *options) { o.set |= optDilation; o.dilation = d }
}

// Groups splits a convolution's channels into g groups (g = in = out is
// depthwise). Default 1.
func Groups(g int) Option {
	return func(o *options) { o.set |= optGroups; o.groups = g }
}

// OutputPad adds rows at the high end of a ConvTranspose's output, as
// PyTorch's output_padding does: one value for every axis or one per axis.
// It picks among the input sizes that a strided convolution maps to the
// same output size.
func OutputPad(p ...int) Option {
	return func(o *options) { o.set |= optOutputPad; o.outputPad = p }
}

// NoBias leaves out a layer's bias.
func NoBias() Option {
	return func(o *options) { o.set |= optBias; o.noBias = true }
}

// NoAffine leaves out a normalisation layer's learnable scale and shift.
func NoAffine() Option {
	return func(o *options) { o.set |= optAffine; o.noAffine = true }
}

// WeightInit replaces a layer's default weight initialiser.
func WeightInit(f Initializer) Option {
	return func(o *options) { o.set |= optWeightInit; o.weightInit = f }
}

// BiasInit replaces a layer's default bias initialiser.
func BiasInit(f Initializer) Option {
	return func(o *options) { o.set |= optBiasInit; o.biasInit = f }
}

// Activation fuses an activation f into a layer, whose output becomes f
// of the layer's. A fused activation takes no index in a Chain's paths. To
// mirror a PyTorch nn.Sequential exactly, write activations as their own
// layers.
func Activation(f func(ad.Var) ad.Var) Option {
	return func(o *options) { o.set |= optActivation; o.act = f }
}

// NormEps sets the small constant that LayerNorm and BatchNorm add to the
// variance. Default 1e-5.
func NormEps(eps float32) Option {
	return func(o *options) { o.set |= optEps; o.eps = eps }
}

// BNMomentum sets BatchNorm's running-statistics update:
// running = (1 − m)·running + m·batch. Default 0.1 (PyTorch's).
func BNMomentum(m float32) Option {
	return func(o *options) { o.set |= optMomentum; o.momentum = m }
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
