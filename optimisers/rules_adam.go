package optimisers

import (
	"math"
	"sync"
)

// This file: the Adam family. Adam, AdamW, AMSGrad, RAdam, NAdam and AdaMax
// follow torch.optim (1.13) operation for operation, in float32 with the
// step-dependent scalars computed in float64 as PyTorch's Python code does;
// AdaBelief and OAdam follow their papers. PyTorch's (coupled) weight_decay
// is Chain(WeightDecay(λ), rule).

// AdamRule is Adam (Kingma & Ba 2015) as torch.optim.Adam:
//
//	m = β₁m + (1-β₁)g
//	v = β₂v + (1-β₂)g²
//	θ -= LR/(1-β₁ᵗ) · m / (√v/√(1-β₂ᵗ) + Eps)
//
// With AMSGrad set, √v is replaced by the square root of the running maximum
// of v (torch's amsgrad=True). Slots: m, v, and the maximum with AMSGrad.
type AdamRule struct {
	LR      float64 `hyper:"lr"`    // learning rate
	Beta1   float64 `hyper:"beta1"` // decay of the first moment; Adam sets 0.9
	Beta2   float64 `hyper:"beta2"` // decay of the second moment; Adam sets 0.999
	Eps     float64 `hyper:"eps"`   // added to the denominator; Adam sets 1e-8
	AMSGrad bool    // keep the maximum of v (one more slot)
}

// Adam returns Adam with learning rate lr and PyTorch's defaults
// β = (0.9, 0.999), ε = 1e-8.
func Adam(lr float64) AdamRule { return AdamRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// AMSGrad returns Adam with the AMSGrad maximum (Reddi et al. 2018), as
// torch.optim.Adam(amsgrad=True).
func AMSGrad(lr float64) AdamRule {
	r := Adam(lr)
	r.AMSGrad = true
	return r
}

func (r AdamRule) Validate() error {
	return adamChecks("Adam", r.LR, r.Beta1, r.Beta2, r.Eps, 0)
}

func adamChecks(rule string, lr, β1, β2, eps, wd float64) error {
	c := checks{rule: rule}
	c.nonNeg("LR", lr)
	c.beta("Beta1", β1)
	c.beta("Beta2", β2)
	c.nonNeg("Eps", eps)
	c.nonNeg("WeightDecay", wd)
	return c.err
}

func (r AdamRule) Slots() int {
	if r.AMSGrad {
		return 3
	}
	return 2
}

func (AdamRule) Init(state [][]float32, θ []float32) {}

func (r AdamRule) Apply(state [][]float32, θ, dx []float32, t int) {
	adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, 0, t).apply(state, θ, dx, r.AMSGrad, false)
}

func (r AdamRule) Fuse(state [][]float32, θ, g []float32, t int) {
	adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, 0, t).fuse(state, θ, g, r.AMSGrad)
}

// AdamWRule is Adam with decoupled weight decay (Loshchilov & Hutter 2019)
// as torch.optim.AdamW: before the Adam step, θ *= 1 - LR·WeightDecay.
type AdamWRule struct {
	LR          float64 `hyper:"lr"`           // learning rate
	Beta1       float64 `hyper:"beta1"`        // AdamW sets 0.9
	Beta2       float64 `hyper:"beta2"`        // AdamW sets 0.999
	Eps         float64 `hyper:"eps"`          // AdamW sets 1e-8
	WeightDecay float64 `hyper:"weight_decay"` // decoupled decay, multiplied by LR as PyTorch does
	AMSGrad     bool    // keep the maximum of v (one more slot)
}

// AdamW returns AdamW with learning rate lr, decoupled weight decay
// weightDecay, β = (0.9, 0.999) and ε = 1e-8. PyTorch's default weight
// decay is 1e-2.
func AdamW(lr, weightDecay float64) AdamWRule {
	return AdamWRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay}
}

func (r AdamWRule) Validate() error {
	return adamChecks("AdamW", r.LR, r.Beta1, r.Beta2, r.Eps, r.WeightDecay)
}

func (r AdamWRule) Slots() int                        { return AdamRule{AMSGrad: r.AMSGrad}.Slots() }
func (AdamWRule) Init(state [][]float32, θ []float32) {}

func (r AdamWRule) Apply(state [][]float32, θ, dx []float32, t int) {
	adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, r.WeightDecay, t).apply(state, θ, dx, r.AMSGrad, true)
}

func (r AdamWRule) Fuse(state [][]float32, θ, g []float32, t int) {
	adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, r.WeightDecay, t).fuse(state, θ, g, r.AMSGrad)
}

// adam holds the float32 coefficients of one Adam step. PyTorch computes
// the step with two divisions per element:
//
//	LR/(1-β₁ᵗ) · m / (√v/√(1-β₂ᵗ) + ε)
//
// Multiplying through by √(1-β₂ᵗ) gives the same step with one division,
// a·m/(√v + e), which makes a scalar loop faster. It rounds differently
// from PyTorch by an ulp or so.
type adam struct {
	b1, c1, b2, c2 float32 // β₁, 1-β₁, β₂, 1-β₂
	a              float32 // LR·√(1-β₂ᵗ)/(1-β₁ᵗ)
	e              float32 // ε·√(1-β₂ᵗ)
	eps            float32 // ε (AdaBelief also adds it to s)
	keep, decay    float32 // 1 - LR·wd and LR·wd (AdamW)
}

func adamCoeffs(lr, β1, β2, eps, wd float64, t int) adam {
	bc2s := math.Sqrt(1 - pow(β2, t))
	return adam{
		b1: float32(β1), c1: float32(1 - β1), b2: float32(β2), c2: float32(1 - β2),
		a:     float32(lr * bc2s / (1 - pow(β1, t))),
		e:     float32(eps * bc2s),
		eps:   float32(eps),
		keep:  float32(1 - lr*wd),
		decay: float32(lr * wd),
	}
}

func (k adam) fuse(state [][]float32, θ, g []float32, ams bool) {
	n := len(θ)
	g = g[:n]
	m, v := state[0][:n], state[1][:n]
	if ams {
		vmax := state[2][:n]
		for i := range θ {
			gi := g[i]
			mi := m[i]*k.b1 + k.c1*gi
			vi := v[i]*k.b2 + k.c2*gi*gi
			m[i], v[i] = mi, vi
			vm := max(vmax[i], vi)
			vmax[i] = vm
			θ[i] = θ[i]*k.keep - k.a*mi/(sqrt32(vm)+k.e)
		}
		return
	}
	// A vector kernel (adam_amd64.s) takes what it can, with the same bits.
	if d := adamFuseSIMD(&k, θ, g, m, v); d > 0 {
		θ = θ[d:]
		g, m, v = g[d:][:len(θ)], m[d:][:len(θ)], v[d:][:len(θ)]
	}
	for i := range θ {
		gi := g[i]
		mi := m[i]*k.b1 + k.c1*gi
		vi := v[i]*k.b2 + k.c2*gi*gi
		m[i], v[i] = mi, vi
		θ[i] = θ[i]*k.keep - k.a*mi/(sqrt32(vi)+k.e)
	}
}

func (k adam) apply(state [][]float32, θ, dx []float32, ams, decoupled bool) {
	n := len(dx)
	θ = θ[:n]
	m, v := state[0][:n], state[1][:n]
	var vmax []float32
	if ams {
		vmax = state[2][:n]
	}
	for i := range dx {
		gi := dx[i]
		mi := m[i]*k.b1 + k.c1*gi
		vi := v[i]*k.b2 + k.c2*gi*gi
		m[i], v[i] = mi, vi
		if ams {
			vi = max(vmax[i], vi)
			vmax[i] = vi
		}
		d := k.a * mi / (sqrt32(vi) + k.e)
		if decoupled {
			d += k.decay * θ[i]
		}
		dx[i] = d
	}
}

// RAdamRule is rectified Adam (Liu et al. 2020) as torch.optim.RAdam: while
// the variance of the adaptive rate is intractable (ρₜ ≤ 5) it takes a
// bias-corrected momentum step, afterwards a rectified Adam step.
// Slots: m, v.
type RAdamRule struct {
	LR    float64 `hyper:"lr"`    // learning rate
	Beta1 float64 `hyper:"beta1"` // RAdam sets 0.9
	Beta2 float64 `hyper:"beta2"` // RAdam sets 0.999
	Eps   float64 `hyper:"eps"`   // RAdam sets 1e-8
}

// RAdam returns RAdam with learning rate lr and β = (0.9, 0.999), ε = 1e-8.
func RAdam(lr float64) RAdamRule { return RAdamRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (r RAdamRule) Validate() error { return adamChecks("RAdam", r.LR, r.Beta1, r.Beta2, r.Eps, 0) }

func (RAdamRule) Slots() int                          { return 2 }
func (RAdamRule) Init(state [][]float32, θ []float32) {}

// radam holds the float32 coefficients of one RAdam step.
type radam struct {
	b1, c1, b2, c2 float32
	bc1, lr, eps   float32
	rectify        bool
	sbc2, rect     float32 // √(1-β₂ᵗ) and the rectification term
}

func (r RAdamRule) coeffs(t int) radam {
	bc1 := 1 - pow(r.Beta1, t)
	bc2 := 1 - pow(r.Beta2, t)
	ρinf := 2/(1-r.Beta2) - 1
	ρt := ρinf - 2*float64(t)*pow(r.Beta2, t)/bc2
	k := radam{
		b1: float32(r.Beta1), c1: float32(1 - r.Beta1), b2: float32(r.Beta2), c2: float32(1 - r.Beta2),
		bc1: float32(bc1), lr: float32(r.LR), eps: float32(r.Eps),
	}
	if ρt > 5 {
		k.rectify = true
		k.sbc2 = float32(math.Sqrt(bc2))
		k.rect = float32(math.Sqrt((ρt - 4) * (ρt - 2) * ρinf / ((ρinf - 4) * (ρinf - 2) * ρt)))
	}
	return k
}

// step returns the step for one element after updating its moments.
func (k *radam) step(m, v *float32, g float32) float32 {
	mi := *m*k.b1 + k.c1*g
	vi := *v*k.b2 + k.c2*g*g
	*m, *v = mi, vi
	bcm := mi / k.bc1
	if !k.rectify {
		return bcm * k.lr
	}
	adaptive := 1 / (sqrt32(vi) + k.eps) * k.sbc2 // torch: scalar / tensor is reciprocal() * scalar
	return bcm * k.lr * adaptive * k.rect
}

func (r RAdamRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.coeffs(t)
	n := len(dx)
	m, v := state[0][:n], state[1][:n]
	for i := range dx {
		dx[i] = k.step(&m[i], &v[i], dx[i])
	}
}

func (r RAdamRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.coeffs(t)
	n := len(θ)
	g = g[:n]
	m, v := state[0][:n], state[1][:n]
	for i := range θ {
		θ[i] -= k.step(&m[i], &v[i], g[i])
	}
}

// NAdamRule is Adam with Nesterov momentum (Dozat 2016) as
// torch.optim.NAdam, including its momentum schedule μₜ:
//
//	μₜ = β₁(1 - ½·0.96^(t·MomentumDecay))
//	m = β₁m + (1-β₁)g;  v = β₂v + (1-β₂)g²;  d = √(v/(1-β₂ᵗ)) + Eps
//	θ -= LR(1-μₜ)/(1-Πᵢ≤ₜμᵢ) · g/d  +  LR·μₜ₊₁/(1-Πᵢ≤ₜ₊₁μᵢ) · m/d
//
// The running products are kept in float32, as PyTorch keeps them.
// Slots: m, v.
type NAdamRule struct {
	LR            float64 `hyper:"lr"`             // learning rate
	Beta1         float64 `hyper:"beta1"`          // NAdam sets 0.9
	Beta2         float64 `hyper:"beta2"`          // NAdam sets 0.999
	Eps           float64 `hyper:"eps"`            // NAdam sets 1e-8
	MomentumDecay float64 `hyper:"momentum_decay"` // ψ of the momentum schedule; NAdam sets 4e-3

	memo *nadamMemo // running product of μ, shared by copies; nil computes it afresh
}

// NAdam returns NAdam with learning rate lr, β = (0.9, 0.999), ε = 1e-8 and
// momentum decay 4e-3. PyTorch's default lr is 2e-3.
func NAdam(lr float64) NAdamRule {
	return NAdamRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3, memo: new(nadamMemo)}
}

func (r NAdamRule) Validate() error {
	c := checks{rule: "NAdam"}
	c.nonNeg("LR", r.LR)
	c.beta("Beta1", r.Beta1)
	c.beta("Beta2", r.Beta2)
	c.nonNeg("Eps", r.Eps)
	c.nonNeg("MomentumDecay", r.MomentumDecay)
	return c.err
}

func (NAdamRule) Slots() int                          { return 2 }
func (NAdamRule) Init(state [][]float32, θ []float32) {}

// nadamMemo caches Πᵢ≤ₜ μᵢ for the last t asked, so that the product costs
// one multiplication per update however many ranges ask for it.
type nadamMemo struct {
	mu      sync.Mutex
	β1, ψ   float64
	t       int
	product float32
}

func (r NAdamRule) μ(t int) float64 {
	return r.Beta1 * (1 - 0.5*math.Pow(0.96, float64(t)*r.MomentumDecay))
}

// product returns Πᵢ≤ₜ float32(μᵢ), multiplied in float32.
func (r NAdamRule) product(t int) float32 {
	m := r.memo
	if m == nil {
		m = new(nadamMemo)
	} else {
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	if m.β1 != r.Beta1 || m.ψ != r.MomentumDecay || m.t > t || m.t == 0 {
		m.β1, m.ψ, m.t, m.product = r.Beta1, r.MomentumDecay, 0, 1
	}
	for m.t < t {
		m.t++
		m.product *= float32(r.μ(m.t))
		if m.product == 0 { // it stays 0
			m.t = t
		}
	}
	return m.product
}

// nadam holds the float32 coefficients of one NAdam step.
type nadam struct {
	b1, c1, b2, c2, bc2, eps float32
	kg, km                   float32 // coefficients of g/d and m/d (positive)
}

func (r NAdamRule) coeffs(t int) nadam {
	μ, μnext := r.μ(t), r.μ(t+1)
	p := r.product(t)
	pnext := p * float32(μ) * float32(μnext)
	return nadam{
		b1: float32(r.Beta1), c1: float32(1 - r.Beta1), b2: float32(r.Beta2), c2: float32(1 - r.Beta2),
		bc2: float32(1 - pow(r.Beta2, t)), eps: float32(r.Eps),
		kg: float32(r.LR * (1 - μ) / (1 - float64(p))),
		km: float32(r.LR * μnext / (1 - float64(pnext))),
	}
}

// step updates one element's moments and returns the two terms of its
// step, kg·g/d and km·m/d.
func (k *nadam) step(m, v *float32, g float32) (float32, float32) {
	mi := *m*k.b1 + k.c1*g
	vi := *v*k.b2 + k.c2*g*g
	*m, *v = mi, vi
	d := sqrt32(vi/k.bc2) + k.eps
	return k.kg * g / d, k.km * mi / d
}

func (r NAdamRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.coeffs(t)
	n := len(dx)
	m, v := state[0][:n], state[1][:n]
	for i := range dx {
		a, b := k.step(&m[i], &v[i], dx[i])
		dx[i] = a + b
	}
}

func (r NAdamRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.coeffs(t)
	n := len(θ)
	g = g[:n]
	m, v := state[0][:n], state[1][:n]
	for i := range θ {
		a, b := k.step(&m[i], &v[i], g[i])
		θ[i] = θ[i] - a - b // two updates of θ, as PyTorch's two addcdiv_
	}
}

// AdaMaxRule is AdaMax, Adam with the infinity norm (Kingma & Ba 2015), as
// torch.optim.Adamax:
//
//	m = β₁m + (1-β₁)g;  u = max(β₂u, |g| + Eps);  θ -= LR/(1-β₁ᵗ) · m/u
//
// Slots: m, u.
type AdaMaxRule struct {
	LR    float64 `hyper:"lr"`    // learning rate
	Beta1 float64 `hyper:"beta1"` // AdaMax sets 0.9
	Beta2 float64 `hyper:"beta2"` // AdaMax sets 0.999
	Eps   float64 `hyper:"eps"`   // AdaMax sets 1e-8
}

// AdaMax returns AdaMax with learning rate lr, β = (0.9, 0.999) and
// ε = 1e-8. PyTorch's default lr is 2e-3.
func AdaMax(lr float64) AdaMaxRule { return AdaMaxRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (r AdaMaxRule) Validate() error { return adamChecks("AdaMax", r.LR, r.Beta1, r.Beta2, r.Eps, 0) }

func (AdaMaxRule) Slots() int                          { return 2 }
func (AdaMaxRule) Init(state [][]float32, θ []float32) {}

// adamax holds the float32 coefficients of one AdaMax step.
type adamax struct{ b1, c1, b2, eps, clr float32 }

func (r AdaMaxRule) coeffs(t int) adamax {
	return adamax{b1: float32(r.Beta1), c1: float32(1 - r.Beta1), b2: float32(r.Beta2), eps: float32(r.Eps),
		clr: float32(r.LR / (1 - pow(r.Beta1, t)))}
}

// step updates one element's moment and infinity norm and returns its step.
func (k *adamax) step(m, u *float32, g float32) float32 {
	mi := *m*k.b1 + k.c1*g
	ui := max(*u*k.b2, abs32(g)+k.eps)
	*m, *u = mi, ui
	return k.clr * mi / ui
}

func (r AdaMaxRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := r.coeffs(t)
	n := len(dx)
	m, u := state[0][:n], state[1][:n]
	for i := range dx {
		dx[i] = k.step(&m[i], &u[i], dx[i])
	}
}

func (r AdaMaxRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := r.coeffs(t)
	n := len(θ)
	g = g[:n]
	m, u := state[0][:n], state[1][:n]
	for i := range θ {
		θ[i] -= k.step(&m[i], &u[i], g[i])
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// AdaBeliefRule is AdaBelief (Zhuang et al. 2020, Algorithm 2), which scales
// the step by the belief in the gradient, the variance of g around m:
//
//	m = β₁m + (1-β₁)g;  s = β₂s + (1-β₂)(g-m)² + Eps
//	θ -= LR · (m/(1-β₁ᵗ)) / (√(s/(1-β₂ᵗ)) + Eps)
//
// Slots: m, s.
type AdaBeliefRule struct {
	LR    float64 `hyper:"lr"`    // learning rate
	Beta1 float64 `hyper:"beta1"` // AdaBelief sets 0.9
	Beta2 float64 `hyper:"beta2"` // AdaBelief sets 0.999
	Eps   float64 `hyper:"eps"`   // AdaBelief sets 1e-16, the paper's value
}

// AdaBelief returns AdaBelief with learning rate lr, β = (0.9, 0.999) and
// ε = 1e-16.
func AdaBelief(lr float64) AdaBeliefRule {
	return AdaBeliefRule{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-16}
}

func (r AdaBeliefRule) Validate() error {
	return adamChecks("AdaBelief", r.LR, r.Beta1, r.Beta2, r.Eps, 0)
}

func (AdaBeliefRule) Slots() int                          { return 2 }
func (AdaBeliefRule) Init(state [][]float32, θ []float32) {}

func (r AdaBeliefRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, 0, t)
	n := len(dx)
	m, s := state[0][:n], state[1][:n]
	for i := range dx {
		dx[i] = k.belief(&m[i], &s[i], dx[i])
	}
}

func (r AdaBeliefRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := adamCoeffs(r.LR, r.Beta1, r.Beta2, r.Eps, 0, t)
	n := len(θ)
	g = g[:n]
	m, s := state[0][:n], state[1][:n]
	for i := range θ {
		θ[i] -= k.belief(&m[i], &s[i], g[i])
	}
}

// belief updates one element's moments and returns its AdaBelief step.
func (k *adam) belief(m, s *float32, g float32) float32 {
	mi := *m*k.b1 + k.c1*g
	d := g - mi
	si := *s*k.b2 + k.c2*d*d + k.eps
	*m, *s = mi, si
	return k.a * mi / (sqrt32(si) + k.e)
}

// OAdamRule is optimistic Adam (Daskalakis et al. 2018, Algorithm 1), which
// steps twice along the current Adam direction and once back along the
// previous one:
//
//	m = β₁m + (1-β₁)g;  v = β₂v + (1-β₂)g²
//	uₜ = (m/(1-β₁ᵗ)) / (√(v/(1-β₂ᵗ)) + Eps)
//	θ -= LR · (2uₜ - uₜ₋₁),  with u₀ = 0
//
// Slots: m, v, the previous direction u.
type OAdamRule struct {
	LR    float64 `hyper:"lr"`    // learning rate
	Beta1 float64 `hyper:"beta1"` // OAdam sets 0.5, the paper's value
	Beta2 float64 `hyper:"beta2"` // OAdam sets 0.9, the paper's value
	Eps   float64 `hyper:"eps"`   // OAdam sets 1e-8
}

// OAdam returns optimistic Adam with learning rate lr, β = (0.5, 0.9) and
// ε = 1e-8.
func OAdam(lr float64) OAdamRule { return OAdamRule{LR: lr, Beta1: 0.5, Beta2: 0.9, Eps: 1e-8} }

func (r OAdamRule) Validate() error { return adamChecks("OAdam", r.LR, r.Beta1, r.Beta2, r.Eps, 0) }

func (OAdamRule) Slots() int                          { return 3 }
func (OAdamRule) Init(state [][]float32, θ []float32) {}

func (r OAdamRule) Apply(state [][]float32, θ, dx []float32, t int) {
	k := adamCoeffs(1, r.Beta1, r.Beta2, r.Eps, 0, t) // ss = 1/(1-β₁ᵗ)
	lr := float32(r.LR)
	n := len(dx)
	m, v, u := state[0][:n], state[1][:n], state[2][:n]
	for i := range dx {
		dx[i] = lr * k.optimistic(&m[i], &v[i], &u[i], dx[i])
	}
}

func (r OAdamRule) Fuse(state [][]float32, θ, g []float32, t int) {
	k := adamCoeffs(1, r.Beta1, r.Beta2, r.Eps, 0, t)
	lr := float32(r.LR)
	n := len(θ)
	g = g[:n]
	m, v, u := state[0][:n], state[1][:n], state[2][:n]
	for i := range θ {
		θ[i] -= lr * k.optimistic(&m[i], &v[i], &u[i], g[i])
	}
}

// optimistic updates one element's moments and previous direction and returns
// 2uₜ - uₜ₋₁.
func (k *adam) optimistic(m, v, u *float32, g float32) float32 {
	mi := *m*k.b1 + k.c1*g
	vi := *v*k.b2 + k.c2*g*g
	*m, *v = mi, vi
	ut := k.a * mi / (sqrt32(vi) + k.e)
	d := 2*ut - *u
	*u = ut
	return d
}
