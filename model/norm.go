package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// maxNormRank is the highest input rank the normalisation layers accept:
// ad's own limit on ranks.
const maxNormRank = 8

// defaultEps is the normalisation layers' default NormEps (PyTorch's).
const defaultEps = 1e-5

// normEps returns the configured eps or the default, or an error if it is
// negative or not finite.
func normEps(name string, o *options) (float32, error) {
	if !o.epsSet {
		return defaultEps, nil
	}
	if !(o.eps >= 0) || math.IsInf(float64(o.eps), 0) {
		return 0, fmt.Errorf("%s: NormEps is %v, want a finite eps ≥ 0", name, o.eps)
	}
	return o.eps, nil
}

// normalise returns (x − mean) / √(var + eps) with the biased variance,
// both over the axes where keep is 1. Those axes stay, with size 1. It
// also returns the mean and the variance, of shape keep.
func normalise(x ad.Var, keep []int, n int, eps float32) (y, mean, variance ad.Var) {
	inv := 1 / float64(n)
	if x.Precision() == ad.Float32 {
		inv = float64(1 / float32(n)) // the float32 quotient, as always
	}
	mean = ad.Scale(ad.SumTo(x, keep...), inv)
	xc := ad.Sub(x, mean)
	variance = ad.Scale(ad.SumTo(ad.Square(xc), keep...), inv)
	std := ad.Sqrt(ad.Add(variance, ad.ScalarLike(x, float64(eps))))
	return ad.Div(xc, std), mean, variance
}

// A normalisation layer's learnable parameters, unless NoAffine, are
// "weight" and "bias". Each has n values of the given shape. The weight
// starts at ones and the bias at zeros.

// normParams is the layer's number of parameters, 2n or none.
func normParams(o *options, n int) int {
	if o.noAffine {
		return 0
	}
	return 2 * n
}

// declareNorm reports the layer's configuration error err, or declares its
// parameters.
func declareNorm(b *layout.Builder, err error, o *options, shape ...int) error {
	if err != nil {
		return err
	}
	if !o.noAffine {
		b.Add("weight", shape...)
		b.Add("bias", shape...)
	}
	return nil
}

// initNorm sets the weight to ones and the bias to zeros.
func initNorm(θ []float32, o *options, n int) {
	if o.noAffine {
		return
	}
	for i := range θ[:n] {
		θ[i] = 1
	}
	clear(θ[n : 2*n])
}

// normInput returns x's shape if the normalisation layer name can apply to
// x with p. err is the layer's configuration error or nil, made tells
// whether its constructor made it, and n is its number of parameters.
// Otherwise normInput records why on x's tape and returns a nil shape and
// the failed Var.
func normInput(name string, err error, made bool, p, x ad.Var, n int) ([]int, ad.Var) {
	if !made && err == nil { // a configuration error, if any, is reported first, by canApply
		return nil, fail(x, errorf("%s: the layer was not made by model.%s", name, name))
	}
	if !canApply(err, name, p, x, n) {
		return nil, fail(x, nil)
	}
	s := x.Shape()
	if s == nil {
		return nil, deadInput(name, x)
	}
	return s, ad.Var{}
}

// LayerNormLayer normalises over the trailing axes; see LayerNorm.
type LayerNormLayer struct {
	shape []int // the normalised shape: the trailing axes of the input
	opt   options
	eps   float32
	n     int // prod(shape)
	err   error
}

// LayerNorm returns PyTorch's LayerNorm over the trailing axes of the
// input, whose dimensions must equal shape. Each slice x over those axes
// becomes (x − mean) / √(var + eps) · weight + bias, with the biased
// variance. Options: NormEps, default 1e-5; NoAffine, which leaves out
// the weight and bias. The learnable "weight" and "bias" have the given
// shape; the weight starts at ones and the bias at zeros.
func LayerNorm(shape []int, opts ...LayerNormOption) *LayerNormLayer {
	l := &LayerNormLayer{shape: slices.Clone(shape), opt: collect(opts)}
	l.err = l.validate()
	return l
}

func (l *LayerNormLayer) validate() error {
	if len(l.shape) == 0 || len(l.shape) > maxNormRank {
		return fmt.Errorf("LayerNorm: shape %v has %d axes, want 1 to %d", l.shape, len(l.shape), maxNormRank)
	}
	l.n = 1
	for i, d := range l.shape {
		if d <= 0 {
			return fmt.Errorf("LayerNorm: shape %v has %d on axis %d, want > 0", l.shape, d, i)
		}
		l.n *= d
	}
	var err error
	l.eps, err = normEps("LayerNorm", &l.opt)
	return err
}

func (l *LayerNormLayer) nParams() int { return normParams(&l.opt, l.n) }

// Declare declares "weight" and "bias" of the normalised shape, unless
// NoAffine.
func (l *LayerNormLayer) Declare(b *layout.Builder) error {
	return declareNorm(b, l.err, &l.opt, l.shape...)
}

// Init sets the weight to ones and the bias to zeros.
func (l *LayerNormLayer) Init(θ []float32, _ *rand.Rand) { initNorm(θ, &l.opt, l.n) }

// Apply normalises x over its trailing axes.
func (l *LayerNormLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	s, failed := normInput("LayerNorm", l.err, l.n != 0, p, x, l.nParams())
	if s == nil {
		return failed
	}
	k, r := len(l.shape), len(s)
	if r < k || !slices.Equal(s[r-k:], l.shape) {
		return fail(x, errorf("LayerNorm(%v): input shape %v, want (…, %s)", l.shape, s, shapeList(l.shape)))
	}
	var keep [maxNormRank]int
	copy(keep[:], s[:r-k])
	for i := r - k; i < r; i++ {
		keep[i] = 1
	}
	y, _, _ := normalise(x, keep[:r], l.n, l.eps)
	if !l.opt.noAffine {
		y = ad.Add(ad.Mul(y, ad.View(p, 0, l.shape...)), ad.View(p, l.n, l.shape...))
	}
	return y
}

// shapeList formats a shape as "3, 4".
func shapeList(s []int) string {
	out := ""
	for i, d := range s {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(d)
	}
	return out
}

// BatchNormLayer normalises each channel over the batch; see BatchNorm.
type BatchNormLayer struct {
	channels int // C, the size of the input's axis 1
	opt      options
	eps      float32
	momentum float32
	err      error
	// made is set by BatchNorm: a layer written as a struct literal lacks
	// the validation, and Apply refuses it.
	made bool
}

// BatchNorm returns PyTorch's BatchNorm1d/2d/3d for inputs of shape (N, C)
// or (N, C, spatial…), where C = channels.
//
// In training mode, when Ctx.Train is set, each channel is normalised
// with the batch mean and biased variance over the batch and spatial
// axes. The running statistics in the Ctx's state are updated in place,
// as PyTorch does: running = (1 − m)·running + m·batch. running_var takes
// the unbiased batch variance. The momentum m is 0.1 unless BNMomentum
// sets it. The update is a side effect of applying the layer, outside the
// tape. A derivative sweep does not repeat it, but every Apply in training
// mode does. So a function evaluated several times, as by finite
// differences or ad.HVP, should get a fresh copy of the state each time.
// In test mode the running statistics are constants.
//
// The layer is Stateful. Its state is "running_mean", starting at zeros,
// and "running_var", starting at ones, each of C values. So it needs a Ctx
// whose State comes from InitState(net), in both modes. PyTorch's
// num_batches_tracked is not kept: it matters only for momentum=None, the
// cumulative average, which is not supported. layout.LoadInto reports it
// as skipped.
//
// Options: NormEps, default 1e-5; BNMomentum, default 0.1, in [0, 1];
// NoAffine. The learnable "weight" and "bias" have C values each; the
// weight starts at ones and the bias at zeros.
func BatchNorm(channels int, opts ...BatchNormOption) *BatchNormLayer {
	l := &BatchNormLayer{channels: channels, opt: collect(opts), made: true}
	l.err = l.validate()
	return l
}

func (l *BatchNormLayer) validate() error {
	if l.channels <= 0 {
		return fmt.Errorf("BatchNorm: %d channels, want > 0", l.channels)
	}
	var err error
	if l.eps, err = normEps("BatchNorm", &l.opt); err != nil {
		return err
	}
	l.momentum = 0.1
	if l.opt.momentumSet {
		l.momentum = l.opt.momentum
		if !(l.momentum >= 0 && l.momentum <= 1) {
			return fmt.Errorf("BatchNorm: BNMomentum is %v, want 0 ≤ momentum ≤ 1", l.momentum)
		}
	}
	return nil
}

func (l *BatchNormLayer) nParams() int { return normParams(&l.opt, l.channels) }

// Declare declares "weight" and "bias", C values each, unless NoAffine.
func (l *BatchNormLayer) Declare(b *layout.Builder) error {
	return declareNorm(b, l.err, &l.opt, l.channels)
}

// DeclareState declares "running_mean" and "running_var", C values each.
func (l *BatchNormLayer) DeclareState(b *layout.Builder) error {
	if l.err != nil {
		return l.err
	}
	b.Add("running_mean", l.channels)
	b.Add("running_var", l.channels)
	return nil
}

// Init sets the weight to ones and the bias to zeros.
func (l *BatchNormLayer) Init(θ []float32, _ *rand.Rand) { initNorm(θ, &l.opt, l.channels) }

// InitState sets the running mean to zeros and the running variance to
// ones.
func (l *BatchNormLayer) InitState(s []float32) {
	c := l.channels
	clear(s[:c])
	for i := range s[c : 2*c] {
		s[c+i] = 1
	}
}

// Apply normalises x per channel. Training mode uses the batch's
// statistics and updates the running ones; test mode uses the running
// statistics.
func (l *BatchNormLayer) Apply(c *Ctx, p, x ad.Var) ad.Var {
	s, failed := normInput("BatchNorm", l.err, l.made, p, x, l.nParams())
	if s == nil {
		return failed
	}
	C := l.channels
	r := len(s)
	if r < 2 || r > maxNormRank || s[1] != C {
		return fail(x, errorf("BatchNorm(%d): input shape %v, want (N, %d) or (N, %d, spatial…)", C, s, C, C))
	}
	st := c.LayerState()
	switch {
	case c == nil || st == nil:
		return fail(x, errorf("BatchNorm(%d): no state for the running statistics; pass a Ctx with State from InitState: &model.Ctx{State: s} with s, _ := model.InitState(net)", C))
	case len(st) != 2*C:
		return fail(x, errorf("BatchNorm(%d): the layer's state range has %d floats, want %d (running_mean, running_var); make Ctx.State with model.InitState(net)", C, len(st), 2*C))
	}
	m := x.Size() / C // values per channel
	t := x.Tape()
	var y ad.Var
	if c.Training() {
		if m < 2 {
			return fail(x, errorf("BatchNorm(%d): input shape %v has %d value per channel; training mode needs more than 1", C, s, m))
		}
		// One fused op (ad.BatchNorm): the statistics in one pass, the
		// normalisation in another, and two passes backward.
		var gamma, beta ad.Var
		if !l.opt.noAffine {
			gamma, beta = ad.View(p, 0, C), ad.View(p, C, C)
		}
		var stats ad.Var
		y, stats = ad.BatchNorm(x, gamma, beta, l.eps)
		if t.Err() != nil {
			return fail(x, nil)
		}
		mom := l.momentum
		unbias := float32(m) / float32(m-1)
		sd := stats.Data()
		md, vd := sd[:C], sd[C:2*C]
		rm, rv := st[:C], st[C:2*C]
		for i := range C {
			rm[i] = (1-mom)*rm[i] + mom*md[i]
			rv[i] = (1-mom)*rv[i] + mom*vd[i]*unbias
		}
	} else {
		// Copies of the statistics, so that a later update of the state
		// does not change values already on the tape.
		mean := t.Full(0, C)
		inv := t.Full(0, C)
		if t.Err() != nil {
			return fail(x, nil)
		}
		md, id := mean.Data(), inv.Data()
		for i := range C {
			md[i] = st[i]
			id[i] = float32(1 / math.Sqrt(float64(st[C+i])+float64(l.eps)))
		}
		// One pass, (x − mean)·(γ·inv) + β, for the four broadcasting
		// passes of the composite.
		if l.opt.noAffine {
			y = ad.ChannelAffine(x, mean, inv, t.Full(0, C))
		} else {
			y = ad.ChannelAffine(x, mean, ad.Mul(ad.View(p, 0, C), inv), ad.View(p, C, C))
		}
	}
	return y
}
