package optimisers

// This file: per-coordinate adaptive rules that are not Adam's kin. RMSProp,
// AdaGrad, AdaDelta and Rprop follow torch.optim (1.13); Lion follows its
// paper.

// RMSPropRule is RMSProp (Tieleman & Hinton 2012) as torch.optim.RMSprop,
// with Eps added outside the square root:
//
//	s = αs + (1-α)g²
//	d = √s + Eps, or √(s - ḡ²) + Eps centred, with ḡ = αḡ + (1-α)g
//	θ -= LR·g/d, or with momentum b = μb + g/d, θ -= LR·b
//
// Slots: s, then ḡ if Centred, then b if Momentum > 0. Changing Momentum
// between zero and non-zero changes the slots, so Adjust refuses it.
type RMSPropRule struct {
	LR       float64 `hyper:"lr"`       // learning rate
	Alpha    float64 `hyper:"alpha"`    // decay of the mean square; RMSProp sets 0.99
	Eps      float64 `hyper:"eps"`      // RMSProp sets 1e-8
	Momentum float64 `hyper:"momentum"` // default 0: no momentum buffer
	Centred  bool    // divide by an estimate of the variance instead of the mean square
}

// RMSProp returns RMSProp with learning rate lr (PyTorch's default is 1e-2),
// α = 0.99, ε = 1e-8, no momentum, not centred.
func RMSProp(lr float64) RMSPropRule { return RMSPropRule{LR: lr, Alpha: 0.99, Eps: 1e-8} }

func (r RMSPropRule) Validate() error {
	c := checks{rule: "RMSProp"}
	c.nonNeg("LR", r.LR)
	c.unit("Alpha", r.Alpha)
	c.nonNeg("Eps", r.Eps)
	c.nonNeg("Momentum", r.Momentum)
	return c.err
}

func (r RMSPropRule) Slots() int {
	n := 1
	if r.Centred {
		n++
	}
	if r.Momentum > 0 {
		n++
	}
	return n
}

func (RMSPropRule) Init(state [][]float32, θ []float32) {}

// rmsprop updates the running averages of one range and calls out with each
// element's denominator.
type rmsprop struct {
	α, c, eps, μ, lr float32
	sq, ga, buf      []float32
}

func (r RMSPropRule) kernel(state [][]float32, n int) rmsprop {
	k := rmsprop{α: float32(r.Alpha), c: float32(1 - r.Alpha), eps: float32(r.Eps), μ: float32(r.Momentum), lr: float32(r.LR)}
	k.sq = state[0][:n]
	s := 1
	if r.Centred {
		k.ga = state[s][:n]
		s++
	}
	if r.Momentum > 0 {
		k.buf = state[s][:n]
	}
	return k
}

// step returns the step of element i for gradient g.
func (k *rmsprop) step(i int, g float32) float32 {
	s := k.sq[i]*k.α + k.c*g*g
	k.sq[i] = s
	var avg float32
	if k.ga != nil {
		a := k.ga[i]*k.α + k.c*g
		k.ga[i] = a
		avg = sqrt32(s-a*a) + k.eps
	} else {
		avg = sqrt32(s) + k.eps
	}
	if k.buf != nil {
		b := k.buf[i]*k.μ + g/avg
		k.buf[i] = b
		return k.lr * b
	}
	return k.lr * g / avg
}

func (r RMSPropRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.kernel(state, len(dx))
	for i, g := range dx {
		dx[i] = k.step(i, g)
	}
}

func (r RMSPropRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.kernel(state, len(θ))
	g = g[:len(θ)]
	for i := range θ {
		θ[i] -= k.step(i, g[i])
	}
}

// AdaGradRule is AdaGrad (Duchi et al. 2011) as torch.optim.Adagrad:
//
//	s += g²;  θ -= LR/(1 + (t-1)·LRDecay) · g/(√s + Eps)
//
// One slot: the sum of squares s, which starts at InitialAccumulator.
type AdaGradRule struct {
	LR                 float64 `hyper:"lr"`                        // learning rate
	LRDecay            float64 `hyper:"lr_decay"`                  // default 0
	InitialAccumulator float64 `hyper:"initial_accumulator_value"` // default 0
	Eps                float64 `hyper:"eps"`                       // AdaGrad sets 1e-10
}

// AdaGrad returns AdaGrad with learning rate lr (PyTorch's default is 1e-2)
// and ε = 1e-10.
func AdaGrad(lr float64) AdaGradRule { return AdaGradRule{LR: lr, Eps: 1e-10} }

func (r AdaGradRule) Validate() error {
	c := checks{rule: "AdaGrad"}
	c.nonNeg("LR", r.LR)
	c.nonNeg("LRDecay", r.LRDecay)
	c.nonNeg("InitialAccumulator", r.InitialAccumulator)
	c.nonNeg("Eps", r.Eps)
	return c.err
}

func (AdaGradRule) Slots() int { return 1 }

func (r AdaGradRule) Init(state [][]float32, θ []float32) {
	v := float32(r.InitialAccumulator)
	s := state[0]
	for i := range s {
		s[i] = v
	}
}

// adagrad holds the float32 constants of an AdaGrad step.
type adagrad struct{ clr, eps float32 }

func (r AdaGradRule) consts(t int) adagrad {
	return adagrad{float32(r.LR / (1 + float64(t-1)*r.LRDecay)), float32(r.Eps)}
}

// step adds g² to one element's sum of squares and returns its step.
func (k adagrad) step(s *float32, g float32) float32 {
	si := *s + g*g
	*s = si
	return k.clr * g / (sqrt32(si) + k.eps)
}

func (r AdaGradRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.consts(t)
	s := state[0][:len(dx)]
	for i, g := range dx {
		dx[i] = k.step(&s[i], g)
	}
}

func (r AdaGradRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.consts(t)
	n := len(θ)
	g = g[:n]
	s := state[0][:n]
	for i := range θ {
		θ[i] -= k.step(&s[i], g[i])
	}
}

// AdaDeltaRule is AdaDelta (Zeiler 2012) as torch.optim.Adadelta:
//
//	s = ρs + (1-ρ)g²;  δ = √(a + Eps)/√(s + Eps) · g;  a = ρa + (1-ρ)δ²
//	θ -= LR·δ
//
// Slots: s, a.
type AdaDeltaRule struct {
	LR  float64 `hyper:"lr"`  // scale of the step; AdaDelta's default is 1
	Rho float64 `hyper:"rho"` // decay of the averages; AdaDelta sets 0.9
	Eps float64 `hyper:"eps"` // AdaDelta sets 1e-6
}

// AdaDelta returns AdaDelta with learning rate lr (PyTorch's default is 1),
// ρ = 0.9 and ε = 1e-6.
func AdaDelta(lr float64) AdaDeltaRule { return AdaDeltaRule{LR: lr, Rho: 0.9, Eps: 1e-6} }

func (r AdaDeltaRule) Validate() error {
	c := checks{rule: "AdaDelta"}
	c.nonNeg("LR", r.LR)
	c.unit("Rho", r.Rho)
	c.nonNeg("Eps", r.Eps)
	return c.err
}

func (AdaDeltaRule) Slots() int                          { return 2 }
func (AdaDeltaRule) Init(state [][]float32, θ []float32) {}

// adadelta holds the float32 constants of an AdaDelta step.
type adadelta struct{ ρ, c, eps, lr float32 }

func (r AdaDeltaRule) consts() adadelta {
	return adadelta{float32(r.Rho), float32(1 - r.Rho), float32(r.Eps), float32(r.LR)}
}

// step updates one element's averages s and a and returns its step.
func (k adadelta) step(s, a *float32, g float32) float32 {
	si := *s*k.ρ + k.c*g*g
	δ := sqrt32(*a+k.eps) / sqrt32(si+k.eps) * g
	*s, *a = si, *a*k.ρ+k.c*δ*δ
	return k.lr * δ
}

func (r AdaDeltaRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.consts()
	n := len(dx)
	s, a := state[0][:n], state[1][:n]
	for i, g := range dx {
		dx[i] = k.step(&s[i], &a[i], g)
	}
}

func (r AdaDeltaRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.consts()
	n := len(θ)
	g = g[:n]
	s, a := state[0][:n], state[1][:n]
	for i := range θ {
		θ[i] -= k.step(&s[i], &a[i], g[i])
	}
}

// RpropRule is resilient backpropagation (Riedmiller & Braun 1993) as
// torch.optim.Rprop. Each coordinate has its own step size, clamped to
// [StepMin, StepMax], and θ -= sign(g)·step. The step size is multiplied by
// EtaPlus while the gradient keeps its sign, and by EtaMinus when it flips.
// After a flip, that coordinate does not move and forgets its gradient.
//
// Slots: the previous gradient, the step sizes (which start at LR).
type RpropRule struct {
	LR       float64 `hyper:"lr"`        // initial step size; Rprop's default is 1e-2
	EtaMinus float64 `hyper:"eta_minus"` // Rprop sets 0.5
	EtaPlus  float64 `hyper:"eta_plus"`  // Rprop sets 1.2
	StepMin  float64 `hyper:"step_min"`  // Rprop sets 1e-6
	StepMax  float64 `hyper:"step_max"`  // Rprop sets 50
}

// Rprop returns Rprop with initial step lr, η = (0.5, 1.2) and steps
// clamped to [1e-6, 50]. PyTorch's default lr is 1e-2.
func Rprop(lr float64) RpropRule {
	return RpropRule{LR: lr, EtaMinus: 0.5, EtaPlus: 1.2, StepMin: 1e-6, StepMax: 50}
}

func (r RpropRule) Validate() error {
	c := checks{rule: "Rprop"}
	c.nonNeg("LR", r.LR)
	if c.err == nil && !(r.EtaMinus > 0 && r.EtaMinus < 1) {
		c.err = hyperError("Rprop", "EtaMinus", r.EtaMinus, "0 < EtaMinus < 1")
	}
	if c.err == nil && !(r.EtaPlus > 1 && r.EtaPlus < inf) {
		c.err = hyperError("Rprop", "EtaPlus", r.EtaPlus, "a finite EtaPlus > 1")
	}
	c.nonNeg("StepMin", r.StepMin)
	c.nonNegInf("StepMax", r.StepMax)
	if c.err == nil && r.StepMax < r.StepMin {
		c.err = hyperError("Rprop", "StepMax", r.StepMax, "StepMax ≥ StepMin")
	}
	return c.err
}

func (RpropRule) Slots() int { return 2 }

func (r RpropRule) Init(state [][]float32, θ []float32) {
	lr := float32(r.LR)
	s := state[1]
	for i := range s {
		s[i] = lr
	}
}

// rprop holds the float32 constants of an Rprop step.
type rprop struct{ minus, plus, lo, hi float32 }

func (r RpropRule) consts() rprop {
	return rprop{float32(r.EtaMinus), float32(r.EtaPlus), float32(r.StepMin), float32(r.StepMax)}
}

// step updates one coordinate's previous gradient and step size and returns
// its step.
func (k *rprop) step(prev, size *float32, g float32) float32 {
	η := float32(1)
	switch p := g * *prev; {
	case p > 0:
		η = k.plus
	case p < 0:
		η = k.minus
		g = 0
	}
	s := min(max(*size*η, k.lo), k.hi)
	*size, *prev = s, g
	return sign32(g) * s
}

func (r RpropRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.consts()
	n := len(dx)
	prev, size := state[0][:n], state[1][:n]
	for i := range dx {
		dx[i] = k.step(&prev[i], &size[i], dx[i])
	}
}

func (r RpropRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.consts()
	n := len(θ)
	g = g[:n]
	prev, size := state[0][:n], state[1][:n]
	for i := range θ {
		θ[i] -= k.step(&prev[i], &size[i], g[i])
	}
}

// LionRule is Lion, evolved sign momentum (Chen et al. 2023, Algorithm 2):
//
//	c = β₁m + (1-β₁)g
//	θ -= LR·(sign(c) + WeightDecay·θ)
//	m = β₂m + (1-β₂)g
//
// One slot: m.
type LionRule struct {
	LR          float64 `hyper:"lr"`           // learning rate; the paper suggests 3-10× smaller than Adam's
	Beta1       float64 `hyper:"beta1"`        // interpolation for the step; Lion sets 0.9
	Beta2       float64 `hyper:"beta2"`        // decay of the momentum; Lion sets 0.99
	WeightDecay float64 `hyper:"weight_decay"` // decoupled, multiplied by LR; default 0
}

// Lion returns Lion with learning rate lr, β = (0.9, 0.99) and no weight
// decay.
func Lion(lr float64) LionRule { return LionRule{LR: lr, Beta1: 0.9, Beta2: 0.99} }

func (r LionRule) Validate() error {
	c := checks{rule: "Lion"}
	c.nonNeg("LR", r.LR)
	c.unit("Beta1", r.Beta1)
	c.unit("Beta2", r.Beta2)
	c.nonNeg("WeightDecay", r.WeightDecay)
	return c.err
}

func (LionRule) Slots() int                          { return 1 }
func (LionRule) Init(state [][]float32, θ []float32) {}

func (r LionRule) Apply(state [][]float32, θ, dx []float32, t int) {
	b1, c1, b2, c2 := float32(r.Beta1), float32(1-r.Beta1), float32(r.Beta2), float32(1-r.Beta2)
	lr, wd := float32(r.LR), float32(r.WeightDecay)
	n := len(dx)
	θ = θ[:n]
	m := state[0][:n]
	for i, g := range dx {
		d := sign32(m[i]*b1 + c1*g)
		if wd != 0 {
			d += wd * θ[i]
		}
		m[i] = m[i]*b2 + c2*g
		dx[i] = lr * d
	}
}

func (r LionRule) Fuse(state [][]float32, θ, g []float32, t int) {
	b1, c1, b2, c2 := float32(r.Beta1), float32(1-r.Beta1), float32(r.Beta2), float32(1-r.Beta2)
	lr, wd := float32(r.LR), float32(r.WeightDecay)
	n := len(θ)
	g = g[:n]
	m := state[0][:n]
	for i := range θ {
		gi := g[i]
		d := sign32(m[i]*b1 + c1*gi)
		if wd != 0 {
			d += wd * θ[i]
		}
		m[i] = m[i]*b2 + c2*gi
		θ[i] -= lr * d
	}
}
