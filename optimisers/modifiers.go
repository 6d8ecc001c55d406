package optimisers

import (
	"math"
)

// This file: rules that change the update rather than take a step of their
// own, for use in a Chain before a descent rule, and EMA, which watches θ.

var inf = math.Inf(1)

// WeightDecayRule adds L2 weight decay to the update: dx += WeightDecay·θ.
// In a chain before a descent rule it is PyTorch's coupled weight_decay
// argument. So Chain(WeightDecay(λ), Adam(lr)) is
// torch.optim.Adam(lr, weight_decay=λ).
type WeightDecayRule struct {
	WeightDecay float64 `hyper:"weight_decay"`
}

// WeightDecay returns L2 weight decay with coefficient λ.
func WeightDecay(λ float64) WeightDecayRule { return WeightDecayRule{WeightDecay: λ} }

func (r WeightDecayRule) Validate() error {
	c := checks{rule: "WeightDecay"}
	c.nonNeg("WeightDecay", r.WeightDecay)
	return c.err
}

func (WeightDecayRule) Slots() int                          { return 0 }
func (WeightDecayRule) Init(state [][]float32, θ []float32) {}

func (r WeightDecayRule) Apply(state [][]float32, θ, dx []float32, t int) {
	λ := float32(r.WeightDecay)
	θ = θ[:len(dx)]
	for i := range dx {
		dx[i] += λ * θ[i]
	}
}

// SignDecayRule adds SignDecay·sign(θ) to the update, the gradient of an L1
// penalty. It is Optimisers.jl's SignDecay.
type SignDecayRule struct {
	SignDecay float64 `hyper:"sign_decay"`
}

// SignDecay returns L1 decay with coefficient λ.
func SignDecay(λ float64) SignDecayRule { return SignDecayRule{SignDecay: λ} }

func (r SignDecayRule) Validate() error {
	c := checks{rule: "SignDecay"}
	c.nonNeg("SignDecay", r.SignDecay)
	return c.err
}

func (SignDecayRule) Slots() int                          { return 0 }
func (SignDecayRule) Init(state [][]float32, θ []float32) {}

func (r SignDecayRule) Apply(state [][]float32, θ, dx []float32, t int) {
	λ := float32(r.SignDecay)
	θ = θ[:len(dx)]
	for i := range dx {
		dx[i] += λ * sign32(θ[i])
	}
}

// ClipValueRule clamps each element of the update to [-Delta, Delta]
// (torch.nn.utils.clip_grad_value_). NaN stays NaN.
type ClipValueRule struct {
	Delta float64 `hyper:"clip_value"`
}

// ClipValue returns elementwise clipping to [-δ, δ].
func ClipValue(δ float64) ClipValueRule { return ClipValueRule{Delta: δ} }

func (r ClipValueRule) Validate() error {
	c := checks{rule: "ClipValue"}
	c.nonNegInf("Delta", r.Delta)
	return c.err
}

func (ClipValueRule) Slots() int                          { return 0 }
func (ClipValueRule) Init(state [][]float32, θ []float32) {}

func (r ClipValueRule) Apply(state [][]float32, θ, dx []float32, t int) {
	hi := float32(r.Delta)
	lo := -hi
	for i, x := range dx {
		if x > hi {
			dx[i] = hi
		} else if x < lo {
			dx[i] = lo
		}
	}
}

// clipCoeff is the factor torch.nn.utils.clip_grad_norm_ scales by: 1 unless
// max/(norm + 1e-6) is smaller. A NaN norm leaves the update alone.
func clipCoeff(maxNorm, sumsq float64) (float32, bool) {
	c := maxNorm / (math.Sqrt(sumsq) + 1e-6)
	if c < 1 {
		return float32(c), true
	}
	return 1, false
}

func sumSquares(acc float64, x []float32) float64 {
	for _, v := range x {
		f := float64(v)
		acc += f * f
	}
	return acc
}

func scale(a float32, x []float32) {
	for i := range x {
		x[i] *= a
	}
}

// ClipNormRule rescales the update of each leaf whose Euclidean norm exceeds
// Max to norm Max, with torch.nn.utils.clip_grad_norm_'s formula
// dx *= Max/(‖dx‖ + 1e-6). An optimiser applies rules leaf by leaf, so this
// is per leaf; ClipGlobalNorm is the same over all leaves at once.
type ClipNormRule struct {
	Max float64 `hyper:"max_norm"`
}

// ClipNorm returns per-leaf norm clipping to max.
func ClipNorm(max float64) ClipNormRule { return ClipNormRule{Max: max} }

func (r ClipNormRule) Validate() error {
	c := checks{rule: "ClipNorm"}
	c.nonNegInf("Max", r.Max)
	return c.err
}

// Leafwise marks ClipNorm as needing a whole leaf per call.
func (ClipNormRule) Leafwise() {}

func (ClipNormRule) Slots() int                          { return 0 }
func (ClipNormRule) Init(state [][]float32, θ []float32) {}

func (r ClipNormRule) Apply(state [][]float32, θ, dx []float32, t int) {
	if c, ok := clipCoeff(r.Max, sumSquares(0, dx)); ok {
		scale(c, dx)
	}
}

// ClipGlobalNormRule rescales the whole update when its Euclidean norm
// exceeds Max. The whole update is every range the rule serves, as
// torch.nn.utils.clip_grad_norm_ over all parameters:
//
//	dx *= Max/(‖dx‖ + 1e-6)
//
// It costs one extra pass to compute the norm. The sum of squares is taken
// in float64. A non-finite norm leaves the update alone; put SkipNonFinite
// in the chain to drop such steps.
type ClipGlobalNormRule struct {
	Max float64 `hyper:"max_norm"`
}

// ClipGlobalNorm returns global norm clipping to max.
func ClipGlobalNorm(max float64) ClipGlobalNormRule { return ClipGlobalNormRule{Max: max} }

func (r ClipGlobalNormRule) Validate() error {
	c := checks{rule: "ClipGlobalNorm"}
	c.nonNegInf("Max", r.Max)
	return c.err
}

func (ClipGlobalNormRule) Slots() int                          { return 0 }
func (ClipGlobalNormRule) Init(state [][]float32, θ []float32) {}

// Apply clips dx as if it were the whole update.
func (r ClipGlobalNormRule) Apply(state [][]float32, θ, dx []float32, t int) {
	r.ApplyGlobal(state, θ, dx, t, r.Reduce(0, θ, dx))
}

// Reduce adds the squares of dx to acc.
func (ClipGlobalNormRule) Reduce(acc float64, θ, dx []float32) float64 { return sumSquares(acc, dx) }

// ApplyGlobal scales dx given the sum of squares of the whole update.
func (r ClipGlobalNormRule) ApplyGlobal(state [][]float32, θ, dx []float32, t int, total float64) {
	if c, ok := clipCoeff(r.Max, total); ok {
		scale(c, dx)
	}
}

// AccumGradRule accumulates the updates of N calls and lets the mean of them
// through on every N-th: the rules after it in a chain run, and θ changes,
// once per N updates (gradient accumulation over micro-batches). The rules
// after it count only the updates they take part in, so Adam's bias
// correction sees 1, 2, 3, … One slot: the running sum.
type AccumGradRule struct {
	N int // number of updates per step; 1 passes every update through
}

// AccumGrad returns gradient accumulation over n updates.
func AccumGrad(n int) AccumGradRule { return AccumGradRule{N: n} }

func (r AccumGradRule) Validate() error {
	if r.N < 1 {
		return errorf("AccumGrad: N = %d, want N ≥ 1", r.N)
	}
	return nil
}

func (AccumGradRule) Slots() int                          { return 1 }
func (AccumGradRule) Init(state [][]float32, θ []float32) {}

// Pass reports whether update t is the N-th of its group.
func (r AccumGradRule) Pass(t int) bool { return t%r.N == 0 }

// Apply adds dx to the sum, and on the N-th update replaces dx by the mean and
// clears the sum.
func (r AccumGradRule) Apply(state [][]float32, θ, dx []float32, t int) {
	s := state[0][:len(dx)]
	if !r.Pass(t) {
		for i, x := range dx {
			s[i] += x
		}
		return
	}
	n := float32(r.N)
	for i, x := range dx {
		dx[i] = (s[i] + x) / n
		s[i] = 0
	}
}

// SkipNonFiniteRule drops any update whose gradient holds a NaN or an Inf.
// θ, the state and every counter but the optimiser's Skipped stay as they
// were. Wherever the rule stands in a chain, the optimiser checks the
// incoming gradient g over the chain's ranges before any rule runs. So
// rules before it cannot have changed their state. Used by hand, through
// ChainRule.Apply, it does nothing.
type SkipNonFiniteRule struct{}

// SkipNonFinite returns the rule that skips non-finite gradients.
func SkipNonFinite() SkipNonFiniteRule { return SkipNonFiniteRule{} }

func (SkipNonFiniteRule) Slots() int                                      { return 0 }
func (SkipNonFiniteRule) Init(state [][]float32, θ []float32)             {}
func (SkipNonFiniteRule) Apply(state [][]float32, θ, dx []float32, t int) {}

// EMARule keeps an exponential moving average of the parameters (Polyak
// averaging with exponential weights), laid out like θ:
//
//	a = θ before the first update;  after each update a = Decay·a + (1-Decay)·θ
//
// It does not change the update. Read the average with Optimiser.Average or
// State.Average. One slot: a.
type EMARule struct {
	Decay float64 `hyper:"ema_decay"` // weight of the old average, e.g. 0.999
}

// EMA returns an exponential moving average of the parameters with the given
// decay.
func EMA(decay float64) EMARule { return EMARule{Decay: decay} }

func (r EMARule) Validate() error {
	c := checks{rule: "EMA"}
	c.unit("Decay", r.Decay)
	return c.err
}

func (EMARule) Slots() int { return 1 }

// Init starts the average at θ.
func (EMARule) Init(state [][]float32, θ []float32) { copy(state[0], θ) }

// Observe folds the updated θ into the average.
func (r EMARule) Observe(state [][]float32, θ []float32, t int) {
	d, c := float32(r.Decay), float32(1-r.Decay)
	a := state[0][:len(θ)]
	for i, x := range θ {
		a[i] = d*a[i] + c*x
	}
}

// Apply folds θ - dx into the average and leaves dx alone.
func (r EMARule) Apply(state [][]float32, θ, dx []float32, t int) {
	d, c := float32(r.Decay), float32(1-r.Decay)
	a := state[0][:len(dx)]
	θ = θ[:len(dx)]
	for i, x := range dx {
		a[i] = d*a[i] + c*(θ[i]-x)
	}
}
