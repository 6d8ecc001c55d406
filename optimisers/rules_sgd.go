package optimisers

// This file: plain and momentum gradient descent, with the semantics of
// PyTorch's torch.optim.SGD. PyTorch's weight_decay is Chain(WeightDecay(λ),
// rule).

// DescentRule is gradient descent: θ -= LR·g (torch.optim.SGD without
// momentum).
type DescentRule struct {
	LR float64 `hyper:"lr"` // learning rate
}

// Descent returns gradient descent with learning rate lr.
func Descent(lr float64) DescentRule { return DescentRule{LR: lr} }

func (r DescentRule) Validate() error {
	c := checks{rule: "Descent"}
	c.nonNeg("LR", r.LR)
	return c.err
}

func (DescentRule) Slots() int                          { return 0 }
func (DescentRule) Init(state [][]float32, θ []float32) {}

func (r DescentRule) Apply(state [][]float32, θ, dx []float32, t int) {
	lr := float32(r.LR)
	for i := range dx {
		dx[i] *= lr
	}
}

func (r DescentRule) Fuse(state [][]float32, θ, g []float32, t int) {
	lr := float32(r.LR)
	g = g[:len(θ)]
	for i := range θ {
		θ[i] -= lr * g[i]
	}
}

// MomentumRule is gradient descent with momentum, as torch.optim.SGD with
// momentum > 0 and nesterov=False:
//
//	b = g at the first step, else b = Momentum·b + (1-Dampening)·g
//	θ -= LR·b
//
// One slot: the momentum buffer b.
type MomentumRule struct {
	LR        float64 `hyper:"lr"`        // learning rate
	Momentum  float64 `hyper:"momentum"`  // momentum factor; 0 is plain descent
	Dampening float64 `hyper:"dampening"` // dampening of the gradient's weight; default 0
}

// Momentum returns gradient descent with momentum (PyTorch's SGD with
// momentum and no dampening).
func Momentum(lr, momentum float64) MomentumRule { return MomentumRule{LR: lr, Momentum: momentum} }

func (r MomentumRule) Validate() error {
	c := checks{rule: "Momentum"}
	c.nonNeg("LR", r.LR)
	c.nonNeg("Momentum", r.Momentum)
	c.unit("Dampening", r.Dampening)
	return c.err
}

func (MomentumRule) Slots() int                          { return 1 }
func (MomentumRule) Init(state [][]float32, θ []float32) {}

func (r MomentumRule) Apply(state [][]float32, θ, dx []float32, t int) {
	lr := float32(r.LR)
	b := r.buffer(state[0], dx, t)
	for i := range dx {
		dx[i] = lr * b[i]
	}
}

func (r MomentumRule) Fuse(state [][]float32, θ, g []float32, t int) {
	lr := float32(r.LR)
	μ, c := float32(r.Momentum), float32(1-r.Dampening)
	b := state[0][:len(θ)]
	g = g[:len(θ)]
	if t == 1 {
		for i := range θ {
			b[i] = g[i]
			θ[i] -= lr * g[i]
		}
		return
	}
	for i := range θ {
		bi := b[i]*μ + c*g[i]
		b[i] = bi
		θ[i] -= lr * bi
	}
}

// buffer updates the momentum buffer from g and returns it.
func (r MomentumRule) buffer(b, g []float32, t int) []float32 {
	b = b[:len(g)]
	if t == 1 {
		copy(b, g)
		return b
	}
	μ, c := float32(r.Momentum), float32(1-r.Dampening)
	for i := range b {
		b[i] = b[i]*μ + c*g[i]
	}
	return b
}

// NesterovRule is gradient descent with Nesterov momentum, as
// torch.optim.SGD with nesterov=True:
//
//	b = g at the first step, else b = Momentum·b + g
//	θ -= LR·(g + Momentum·b)
//
// One slot: the momentum buffer b.
type NesterovRule struct {
	LR       float64 `hyper:"lr"`       // learning rate
	Momentum float64 `hyper:"momentum"` // momentum factor
}

// Nesterov returns gradient descent with Nesterov momentum.
func Nesterov(lr, momentum float64) NesterovRule { return NesterovRule{LR: lr, Momentum: momentum} }

func (r NesterovRule) Validate() error {
	c := checks{rule: "Nesterov"}
	c.nonNeg("LR", r.LR)
	c.nonNeg("Momentum", r.Momentum)
	return c.err
}

func (NesterovRule) Slots() int                          { return 1 }
func (NesterovRule) Init(state [][]float32, θ []float32) {}

func (r NesterovRule) Apply(state [][]float32, θ, dx []float32, t int) {
	lr, μ := float32(r.LR), float32(r.Momentum)
	b := MomentumRule{Momentum: r.Momentum}.buffer(state[0], dx, t)
	for i := range dx {
		dx[i] = lr * (dx[i] + μ*b[i])
	}
}

func (r NesterovRule) Fuse(state [][]float32, θ, g []float32, t int) {
	lr, μ := float32(r.LR), float32(r.Momentum)
	b := state[0][:len(θ)]
	g = g[:len(θ)]
	for i := range θ {
		gi := g[i]
		bi := gi
		if t > 1 {
			bi = b[i]*μ + gi
		}
		b[i] = bi
		θ[i] -= lr * (gi + μ*bi)
	}
}
