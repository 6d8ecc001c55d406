package optimisers

// ChainRule applies its rules one after the other to the same update, as
// Optimisers.jl's OptimiserChain does. For example, this chain clips the
// gradient, adds the decay term and hands the result to Adam:
//
//	Chain(ClipGlobalNorm(1), WeightDecay(1e-4), Adam(1e-3))
//
// The state slots of the rules are concatenated in order.
//
// Under an Optimiser a chain is flattened, chains inside chains included,
// and each rule keeps its own count, so gates, global rules, observers and a
// fused last rule all work as documented on their interfaces. Apply on a
// ChainRule, for use by hand, runs the rules in order with the same t,
// treats its range as everything for global rules, and zeroes dx when a gate
// holds the update back.
type ChainRule struct {
	Rules []Rule
}

// Chain composes rules; see ChainRule.
func Chain(rules ...Rule) ChainRule { return ChainRule{Rules: rules} }

// Validate checks every rule in the chain.
func (c ChainRule) Validate() error {
	for i, r := range c.Rules {
		if r == nil {
			return errorf("Chain: rule %d is nil", i)
		}
		if err := validate(r); err != nil {
			return errorf("Chain: rule %d: %w", i, err)
		}
	}
	return nil
}

// Slots is the sum of the rules' slots.
func (c ChainRule) Slots() int {
	n := 0
	for _, r := range c.Rules {
		n += r.Slots()
	}
	return n
}

// Init initialises each rule's slots.
func (c ChainRule) Init(state [][]float32, θ []float32) {
	off := 0
	for _, r := range c.Rules {
		k := r.Slots()
		r.Init(state[off:off+k], θ)
		off += k
	}
}

// Apply runs the rules in order on dx.
func (c ChainRule) Apply(state [][]float32, θ, dx []float32, t int) {
	off := 0
	for _, r := range c.Rules {
		k := r.Slots()
		s := state[off : off+k]
		off += k
		if gl, ok := r.(Global); ok {
			gl.ApplyGlobal(s, θ, dx, t, gl.Reduce(0, θ, dx))
		} else {
			r.Apply(s, θ, dx, t)
		}
		if g, ok := r.(Gate); ok && !g.Pass(t) {
			clear(dx)
			return
		}
	}
}
