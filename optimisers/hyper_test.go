package optimisers

import (
	"math"
	"testing"
)

// withHyper sets a named hyperparameter in every rule of a chain that has it
// and leaves the original alone: the groundwork for Adjust.
func TestWithHyper(t *testing.T) {
	c := Chain(WeightDecay(1e-4), Chain(ClipNorm(1), AdamW(1e-3, 1e-2)), EMA(0.9))
	got, n := withHyper(c, "weight_decay", 0.5)
	if n != 2 {
		t.Fatalf("set %d fields, want 2 (WeightDecay.WeightDecay, AdamW.WeightDecay)", n)
	}
	gc := got.(ChainRule)
	if gc.Rules[0].(WeightDecayRule).WeightDecay != 0.5 || gc.Rules[1].(ChainRule).Rules[1].(AdamWRule).WeightDecay != 0.5 {
		t.Errorf("not set: %+v", gc)
	}
	if c.Rules[0].(WeightDecayRule).WeightDecay != 1e-4 || c.Rules[1].(ChainRule).Rules[1].(AdamWRule).WeightDecay != 1e-2 {
		t.Errorf("the original changed: %+v", c)
	}
	if _, n := withHyper(c, "momentum", 0.9); n != 0 {
		t.Errorf("set %d fields of a name no rule has", n)
	}
	got, _ = withHyper(c, "lr", 3e-4)
	if v, ok := hyper(got, "lr"); !ok || v != 3e-4 {
		t.Errorf("lr = %v, %v after setting 3e-4", v, ok)
	}
	nd, n := withHyper(NAdam(1e-3), "momentum_decay", 0.01)
	if n != 1 || nd.(NAdamRule).MomentumDecay != 0.01 || nd.(NAdamRule).memo == nil {
		t.Errorf("NAdam copy: %d fields set, %+v", n, nd)
	}
	if v, ok := hyper(c, "max_norm"); !ok || v != 1 {
		t.Errorf("max_norm = %v, %v, want 1", v, ok)
	}
	// Every float64 hyperparameter of every rule is tagged.
	for _, r := range []Rule{Descent(1), Momentum(1, 0.9), Nesterov(1, 0.9), Adam(1), AdamW(1, 1), RAdam(1),
		NAdam(1), AdaMax(1), AdaBelief(1), OAdam(1), RMSProp(1), AdaGrad(1), AdaDelta(1), Rprop(1), Lion(1),
		WeightDecay(1), SignDecay(1), ClipValue(1), ClipNorm(1), ClipGlobalNorm(1), EMA(0.5)} {
		if err := validate(r); err != nil {
			t.Errorf("%T: defaults invalid: %v", r, err)
		}
		if _, ok := hyper(r, "lr"); !ok {
			switch r.(type) {
			case WeightDecayRule, SignDecayRule, ClipValueRule, ClipNormRule, ClipGlobalNormRule, EMARule:
			default:
				t.Errorf("%T has no lr", r)
			}
		}
	}
}

// The NAdam memo gives the product PyTorch keeps, in any order of t.
func TestNAdamProduct(t *testing.T) {
	r := NAdam(1e-3)
	fresh := func(t int) float32 {
		p := float32(1)
		for i := 1; i <= t; i++ {
			p *= float32(r.μ(i))
		}
		return p
	}
	for _, step := range []int{1, 2, 3, 3, 4, 10, 5, 200, 199, 1, 300} {
		if got, want := r.product(step), fresh(step); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("t = %d: product %v, want %v", step, got, want)
		}
	}
	r2 := r
	r2.Beta1 = 0.8 // a copy with another β₁ shares the memo but not its answers
	if got, want := r2.product(3), float32(float32(r2.μ(1))*float32(r2.μ(2)))*float32(r2.μ(3)); got != want {
		t.Errorf("after changing β₁: %v, want %v", got, want)
	}
	if got := (NAdamRule{Beta1: 0.9, MomentumDecay: 4e-3}).product(2); got != float32(0.9*(1-0.5*math.Pow(0.96, 0.004)))*float32(0.9*(1-0.5*math.Pow(0.96, 0.008))) {
		t.Errorf("without a memo: %v", got)
	}
}
