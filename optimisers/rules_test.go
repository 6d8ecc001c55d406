package optimisers_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// paperProblem is a small problem for rules PyTorch lacks: θ₀ and a gradient
// per step, with a sign change, a zero and a large entry.
var paperProblem = struct {
	θ0 []float64
	g  [][]float64
}{
	θ0: []float64{0.5, -1.25, 2, 0, -0.3},
	g: [][]float64{
		{0.1, -0.2, 3, 0.5, -1},
		{0.12, 0.3, 2.5, 0, -0.8},
		{-0.05, 0.25, 2, -0.5, -1.2},
		{0.2, -0.1, 1.5, 0.25, -0.9},
		{0.15, 0.05, 1, 1, -1.1},
		{-0.1, 0.2, 0.5, -0.75, -1},
	},
}

// replay runs rule over the paper problem (as two leaves) and compares each
// step with ref, which maps θ and the step's gradient to the next θ in
// float64 and keeps its own state.
func replay(t *testing.T, rule optimisers.Rule, ref func(θ, g []float64, t int)) {
	t.Helper()
	p := paperProblem
	lay, err := layout.NewBuilder().Add("a", 2).Add("b", len(p.θ0)-2).Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, rule, lay)
	θ := make([]float32, len(p.θ0))
	for i, x := range p.θ0 {
		θ[i] = float32(x)
	}
	want := slices.Clone(p.θ0)
	g32 := make([]float32, len(θ))
	for step, g := range p.g {
		for i, x := range g {
			g32[i] = float32(x)
		}
		if err := opt.Update(θ, g32); err != nil {
			t.Fatal(err)
		}
		ref(want, g, step+1)
		for i := range θ {
			if d := math.Abs(float64(θ[i]) - want[i]); d > 1e-5*math.Abs(want[i])+1e-6 {
				t.Fatalf("step %d: θ[%d] = %v, the equations give %v (|Δ| = %.3g)", step+1, i, θ[i], want[i], d)
			}
		}
	}
}

// AdaBelief, Zhuang et al. 2020, Algorithm 2.
func TestAdaBeliefPaper(t *testing.T) {
	const α, β1, β2, ε = 0.01, 0.9, 0.999, 1e-8
	r := optimisers.AdaBelief(α)
	r.Eps = ε // the paper's 1e-16 vanishes in float32; a visible ε tests its placement
	n := len(paperProblem.θ0)
	m, s := make([]float64, n), make([]float64, n)
	replay(t, r, func(θ, g []float64, t int) {
		for i := range θ {
			m[i] = β1*m[i] + (1-β1)*g[i]
			d := g[i] - m[i]
			s[i] = β2*s[i] + (1-β2)*d*d + ε
			mhat := m[i] / (1 - math.Pow(β1, float64(t)))
			shat := s[i] / (1 - math.Pow(β2, float64(t)))
			θ[i] -= α * mhat / (math.Sqrt(shat) + ε)
		}
	})
}

// Lion, Chen et al. 2023, Algorithm 2 (with decoupled weight decay).
func TestLionPaper(t *testing.T) {
	const η, β1, β2, λ = 0.01, 0.9, 0.99, 0.1
	r := optimisers.Lion(η)
	r.WeightDecay = λ
	m := make([]float64, len(paperProblem.θ0))
	sign := func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}
	replay(t, r, func(θ, g []float64, t int) {
		for i := range θ {
			c := β1*m[i] + (1-β1)*g[i]
			θ[i] -= η * (sign(c) + λ*θ[i])
			m[i] = β2*m[i] + (1-β2)*g[i]
		}
	})
}

// Optimistic Adam, Daskalakis et al. 2018, Algorithm 1.
func TestOAdamPaper(t *testing.T) {
	const η, β1, β2, ε = 0.01, 0.5, 0.9, 1e-8
	n := len(paperProblem.θ0)
	m, v, prev := make([]float64, n), make([]float64, n), make([]float64, n)
	replay(t, optimisers.OAdam(η), func(θ, g []float64, t int) {
		for i := range θ {
			m[i] = β1*m[i] + (1-β1)*g[i]
			v[i] = β2*v[i] + (1-β2)*g[i]*g[i]
			mhat := m[i] / (1 - math.Pow(β1, float64(t)))
			vhat := v[i] / (1 - math.Pow(β2, float64(t)))
			u := mhat / (math.Sqrt(vhat) + ε)
			θ[i] = θ[i] - 2*η*u + η*prev[i]
			prev[i] = u
		}
	})
}

// The modifiers, by hand: decay, clipping per leaf (the leaves are θ[0:2] and
// θ[2:5]) and over all leaves after another modifier, then plain descent.
func TestModifiersByHand(t *testing.T) {
	const lr = 0.5
	norm := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v * v
		}
		return math.Sqrt(s)
	}
	clip := func(x []float64, max float64) {
		if c := max / (norm(x) + 1e-6); c < 1 {
			for i := range x {
				x[i] *= c
			}
		}
	}
	descend := func(θ, d []float64) {
		for i := range θ {
			θ[i] -= lr * d[i]
		}
	}
	for _, tc := range []struct {
		name string
		rule optimisers.Rule
		ref  func(θ, g []float64)
	}{
		{"WeightDecay", optimisers.Chain(optimisers.WeightDecay(0.1), optimisers.Descent(lr)), func(θ, g []float64) {
			d := slices.Clone(g)
			for i := range d {
				d[i] += 0.1 * θ[i]
			}
			descend(θ, d)
		}},
		{"SignDecay", optimisers.Chain(optimisers.SignDecay(0.1), optimisers.Descent(lr)), func(θ, g []float64) {
			d := slices.Clone(g)
			for i := range d {
				if θ[i] > 0 {
					d[i] += 0.1
				} else if θ[i] < 0 {
					d[i] -= 0.1
				}
			}
			descend(θ, d)
		}},
		{"ClipValue", optimisers.Chain(optimisers.ClipValue(0.7), optimisers.Descent(lr)), func(θ, g []float64) {
			d := slices.Clone(g)
			for i := range d {
				d[i] = max(-0.7, min(0.7, d[i]))
			}
			descend(θ, d)
		}},
		{"ClipNorm per leaf", optimisers.Chain(optimisers.ClipNorm(0.25), optimisers.Descent(lr)), func(θ, g []float64) {
			d := slices.Clone(g)
			clip(d[:2], 0.25)
			clip(d[2:], 0.25)
			descend(θ, d)
		}},
		{"ClipGlobalNorm after WeightDecay", optimisers.Chain(optimisers.WeightDecay(0.2), optimisers.ClipGlobalNorm(1.5), optimisers.Descent(lr)), func(θ, g []float64) {
			d := slices.Clone(g)
			for i := range d {
				d[i] += 0.2 * θ[i]
			}
			clip(d, 1.5)
			descend(θ, d)
		}},
		{"ClipGlobalNorm twice", optimisers.Chain(optimisers.ClipGlobalNorm(2), optimisers.ClipValue(0.9), optimisers.ClipGlobalNorm(1)), func(θ, g []float64) {
			d := slices.Clone(g)
			clip(d, 2)
			for i := range d {
				d[i] = max(-0.9, min(0.9, d[i]))
			}
			clip(d, 1)
			for i := range θ {
				θ[i] -= d[i]
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replay(t, tc.rule, func(θ, g []float64, t int) { tc.ref(θ, g) })
		})
	}
}

// Behind AccumGrad(n), a rule sees the mean of every n gradients and counts
// only its own updates: it is the same rule run on the means, bit for bit.
func TestAccumGradIsTheRuleOnMeans(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	for _, d := range descents {
		r := d()
		acc := mustSetup(t, optimisers.Chain(optimisers.AccumGrad(3), r), lay)
		plain := mustSetup(t, r, lay)
		θa, θp := ramp(n, 0.5, 1), ramp(n, 0.5, 1)
		sum := make([]float32, n)
		mean := make([]float32, n)
		for k := 1; k <= 12; k++ {
			g := ramp(n, 0.2*float32(k%4)-0.3, float32(k))
			for i := range sum {
				sum[i] += g[i]
			}
			if err := acc.Update(θa, g); err != nil {
				t.Fatal(err)
			}
			if k%3 != 0 {
				continue
			}
			// AccumGrad sums the first n-1 in its slot and divides
			// (sum + last) by n; the sum here is formed in the same order.
			for i := range mean {
				mean[i] = sum[i] / 3
				sum[i] = 0
			}
			if err := plain.Update(θp, mean); err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(θa, θp) {
				t.Fatalf("%T: after %d updates AccumGrad(3) differs from the rule on means", r, k)
			}
		}
		if acc.Steps() != 4 || plain.Steps() != 4 {
			t.Errorf("%T: Steps %d and %d, want 4", r, acc.Steps(), plain.Steps())
		}
	}
}

// EMA is a = θ₀, then a = d·a + (1-d)·θ after each update, for the trained
// leaves; Average leaves the rest of dst alone.
func TestEMA(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	opt := mustSetup(t, optimisers.Chain(optimisers.EMA(0.8), optimisers.Adam(0.01)), lay)
	θ := ramp(n, 0.5, 1)
	dst := make([]float32, n)
	for i := range dst {
		dst[i] = 7
	}
	if err := opt.Average(dst); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		if dst[i] != 7 {
			t.Fatalf("Average before the first update wrote dst[%d]", i)
		}
	}
	a := make([]float64, n)
	for i := range a {
		a[i] = float64(θ[i])
	}
	for k := range 10 {
		if err := opt.Update(θ, ramp(n, float32(k%3)-1, 1)); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			a[i] = 0.8*a[i] + 0.2*float64(θ[i])
		}
	}
	copy(dst, θ)
	if err := opt.Average(dst); err != nil {
		t.Fatal(err)
	}
	for _, lf := range lay.Leaves() {
		for i := lf.Offset; i < lf.End(); i++ {
			want := a[i]
			if lf.Frozen {
				want = float64(θ[i])
			}
			if d := math.Abs(float64(dst[i]) - want); d > 1e-5*math.Abs(want)+1e-6 {
				t.Fatalf("%s: average %v, want %v", lf.Path, dst[i], want)
			}
		}
	}
	plain := mustSetup(t, optimisers.Adam(0.01), lay)
	if err := plain.Average(dst); err == nil {
		t.Errorf("Average without an EMA rule: no error")
	}
	if err := opt.Average(dst[1:]); err == nil {
		t.Errorf("Average into a short dst: no error")
	}
}

// A rule alone and in a chain by hand (ChainRule.Apply) agree with the
// optimiser for rules that do not need it to.
func TestChainApplyByHand(t *testing.T) {
	c := optimisers.Chain(optimisers.WeightDecay(0.1), optimisers.ClipGlobalNorm(1), optimisers.Momentum(0.1, 0.9))
	if c.Slots() != 1 {
		t.Fatalf("Slots = %d, want 1", c.Slots())
	}
	lay, err := layout.NewBuilder().Add("x", 4).Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, c, lay)
	θ := []float32{1, -2, 3, -4}
	θh := slices.Clone(θ)
	state := [][]float32{make([]float32, 4)}
	c.Init(state, θh)
	for k := 1; k <= 3; k++ {
		g := []float32{0.5, float32(k), -1, 2}
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		dx := slices.Clone(g)
		c.Apply(state, θh, dx, k)
		for i := range θh {
			θh[i] -= dx[i]
		}
	}
	if !bitwise.Equal(θ, θh) {
		t.Errorf("by hand %v, optimiser %v", θh, θ)
	}
	// A gate that holds the update back zeroes dx.
	gated := optimisers.Chain(optimisers.AccumGrad(2), optimisers.Descent(1))
	st := [][]float32{make([]float32, 2)}
	dx := []float32{1, 2}
	gated.Apply(st, []float32{0, 0}, dx, 1)
	if dx[0] != 0 || dx[1] != 0 || st[0][0] != 1 || st[0][1] != 2 {
		t.Errorf("held back: dx %v, sum %v", dx, st[0])
	}
}
