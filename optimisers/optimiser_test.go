package optimisers_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
	"github.com/flatkit/flatkit/proptest"
)

// mustSetup is optimisers.Setup(rule, lay); it fails t (a *testing.T,
// *testing.B or *rapid.T) on an error.
func mustSetup(t interface {
	Helper()
	Fatal(args ...any)
}, rule optimisers.Rule, lay *layout.Layout) *optimisers.Optimiser {
	t.Helper()
	opt, err := optimisers.Setup(rule, lay)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// descents are the rules that take a step, with hyperparameters that keep a
// few steps on values in ±4 finite.
var descents = []func() optimisers.Rule{
	func() optimisers.Rule { return optimisers.Descent(0.1) },
	func() optimisers.Rule { return optimisers.Momentum(0.05, 0.9) },
	func() optimisers.Rule { return optimisers.MomentumRule{LR: 0.05, Momentum: 0.9, Dampening: 0.3} },
	func() optimisers.Rule { return optimisers.Nesterov(0.05, 0.9) },
	func() optimisers.Rule { return optimisers.RMSProp(0.01) },
	func() optimisers.Rule {
		r := optimisers.RMSProp(0.01)
		r.Centred, r.Momentum = true, 0.5
		return r
	},
	func() optimisers.Rule { return optimisers.Adam(0.01) },
	func() optimisers.Rule { return optimisers.AMSGrad(0.01) },
	func() optimisers.Rule { return optimisers.AdamW(0.01, 0.1) },
	func() optimisers.Rule { return optimisers.RAdam(0.01) },
	func() optimisers.Rule { return optimisers.NAdam(0.01) },
	func() optimisers.Rule { return optimisers.AdaMax(0.01) },
	func() optimisers.Rule {
		r := optimisers.AdaGrad(0.1)
		r.LRDecay, r.InitialAccumulator = 0.01, 0.1
		return r
	},
	func() optimisers.Rule { return optimisers.AdaDelta(1) },
	func() optimisers.Rule { return optimisers.Rprop(0.01) },
	func() optimisers.Rule { return optimisers.AdaBelief(0.01) },
	func() optimisers.Rule {
		r := optimisers.Lion(1e-3)
		r.WeightDecay = 0.1
		return r
	},
	func() optimisers.Rule { return optimisers.OAdam(0.01) },
}

// leafModifiers are modifiers whose effect on a leaf depends on that leaf
// alone: they work per element or per leaf.
var leafModifiers = []func() optimisers.Rule{
	func() optimisers.Rule { return optimisers.WeightDecay(0.01) },
	func() optimisers.Rule { return optimisers.SignDecay(0.01) },
	func() optimisers.Rule { return optimisers.ClipValue(1) },
	func() optimisers.Rule { return optimisers.ClipNorm(2) },
	func() optimisers.Rule { return optimisers.AccumGrad(2) },
	func() optimisers.Rule { return optimisers.EMA(0.9) },
}

// modifiers are the rules that change the update: leafModifiers and the
// others.
var modifiers = append(slices.Clip(leafModifiers),
	func() optimisers.Rule { return optimisers.ClipGlobalNorm(3) },
	func() optimisers.Rule { return optimisers.AccumGrad(3) },
	func() optimisers.Rule { return optimisers.SkipNonFinite() },
)

// rules draws a rule: a descent rule alone, or a chain of modifiers around
// one (sometimes nested, sometimes with a descent rule in the middle).
func rules() *rapid.Generator[optimisers.Rule] {
	return rapid.Custom(func(t *rapid.T) optimisers.Rule {
		d := rapid.IntRange(0, len(descents)-1).Draw(t, "descent")
		r := descents[d]()
		n := rapid.IntRange(0, 4).Draw(t, "modifiers")
		if n == 0 {
			return r
		}
		chain := []optimisers.Rule{r}
		for range n {
			var m optimisers.Rule
			if rapid.IntRange(0, 9).Draw(t, "descentInside") == 0 {
				m = descents[rapid.IntRange(0, len(descents)-1).Draw(t, "inner")]()
			} else {
				m = modifiers[rapid.IntRange(0, len(modifiers)-1).Draw(t, "modifier")]()
			}
			at := rapid.IntRange(0, len(chain)).Draw(t, "at")
			chain = slices.Insert(chain, at, m)
		}
		if len(chain) > 2 && rapid.Bool().Draw(t, "nest") {
			k := rapid.IntRange(1, len(chain)-1).Draw(t, "split")
			return optimisers.Chain(optimisers.Chain(chain[:k]...), optimisers.Chain(chain[k:]...))
		}
		return optimisers.Chain(chain...)
	})
}

// drawLayoutRule draws a layout, then a rule from gen, and logs the rule.
func drawLayoutRule(t *rapid.T, gen *rapid.Generator[optimisers.Rule]) (*layout.Layout, optimisers.Rule) {
	lay := proptest.Layouts().Draw(t, "layout")
	rule := gen.Draw(t, "rule")
	t.Logf("rule: %s", ruleString(rule))
	return lay, rule
}

func ruleString(r optimisers.Rule) string {
	if c, ok := r.(optimisers.ChainRule); ok {
		parts := make([]string, len(c.Rules))
		for i, sub := range c.Rules {
			parts[i] = ruleString(sub)
		}
		return "Chain(" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%+v", r)
}

// gradients draws k gradients for lay, a few of them with a NaN or an Inf.
func gradients(t *rapid.T, n, k int) [][]float32 {
	gs := make([][]float32, k)
	for s := range gs {
		gs[s] = proptest.Floats(n).Draw(t, "g")
		if n > 0 && rapid.IntRange(0, 5).Draw(t, "bad") == 0 {
			gs[s][rapid.IntRange(0, n-1).Draw(t, "at")] = rapid.SampledFrom([]float32{
				float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}).Draw(t, "nonfinite")
		}
	}
	return gs
}

// checkStepIsUpdate checks that the functional Step from st gives θ the
// bits that opt.Update (which updates θ in place) gives it; failure
// reports what.
func checkStepIsUpdate(t *testing.T, failure string, st optimisers.State, opt *optimisers.Optimiser, θ, g []float32) {
	t.Helper()
	θ2, _, err := optimisers.Step(st, θ, g)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Update(θ, g); err != nil {
		t.Fatal(err)
	}
	if !bitwise.Equal(θ, θ2) {
		t.Error(failure)
	}
}

func sameState(a, b optimisers.State) bool {
	if a.Step != b.Step || a.Skipped != b.Skipped || len(a.Slots) != len(b.Slots) {
		return false
	}
	for k := range a.Slots {
		if !bitwise.Equal(a.Slots[k], b.Slots[k]) {
			return false
		}
	}
	return true
}

func cloneState(s optimisers.State) optimisers.State {
	c := s
	c.Slots = make([][]float32, len(s.Slots))
	for k := range s.Slots {
		c.Slots[k] = slices.Clone(s.Slots[k])
	}
	return c
}

// Step, the functional form, agrees with Update bit for bit, and leaves its
// arguments untouched.
func TestStepEqualsUpdate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay, rule := drawLayoutRule(t, rules())
		θ0 := proptest.Params(lay).Draw(t, "θ")
		gs := gradients(t, lay.Len(), rapid.IntRange(1, 6).Draw(t, "steps"))

		opt := mustSetup(t, rule, lay)
		s := opt.State()
		θu, θs := slices.Clone(θ0), slices.Clone(θ0)
		for k, g := range gs {
			gKeep, θKeep, sKeep := slices.Clone(g), slices.Clone(θs), cloneState(s)
			θ2, s2, err := optimisers.Step(s, θs, g)
			if err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(g, gKeep) || !bitwise.Equal(θs, θKeep) || !sameState(s, sKeep) {
				t.Fatalf("step %d: Step changed its arguments", k+1)
			}
			if err := opt.Update(θu, g); err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(g, gKeep) {
				t.Fatalf("step %d: Update changed g", k+1)
			}
			if !bitwise.Equal(θu, θ2) {
				t.Fatalf("step %d: θ from Update %v, from Step %v", k+1, θu, θ2)
			}
			if !sameState(opt.State(), s2) {
				t.Fatalf("step %d: states differ:\nUpdate %+v\nStep   %+v", k+1, opt.State(), s2)
			}
			θs, s = θ2, s2
		}
	})
}

// Frozen leaves never change, and their state stays zero.
func TestFrozenLeavesNeverChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := proptest.Layouts().Draw(t, "layout")
		rule := rules().Draw(t, "rule")
		θ := proptest.Params(lay).Draw(t, "θ")
		θ0 := slices.Clone(θ)
		opt := mustSetup(t, rule, lay)
		for _, g := range gradients(t, lay.Len(), rapid.IntRange(1, 5).Draw(t, "steps")) {
			if err := opt.Update(θ, g); err != nil {
				t.Fatal(err)
			}
		}
		s := opt.State()
		for _, lf := range lay.Leaves() {
			if !lf.Frozen {
				continue
			}
			if !bitwise.Equal(θ[lf.Offset:lf.End()], θ0[lf.Offset:lf.End()]) {
				t.Fatalf("frozen leaf %s changed: %v → %v", lf.Path, θ0[lf.Offset:lf.End()], θ[lf.Offset:lf.End()])
			}
			for k, v := range s.Slots {
				for _, x := range v[lf.Offset:lf.End()] {
					if x != 0 {
						t.Fatalf("frozen leaf %s has state in slot %d: %v", lf.Path, k, v[lf.Offset:lf.End()])
					}
				}
			}
		}
	})
}

// With SkipNonFinite anywhere in the chain, an update whose gradient has a
// NaN or an Inf in a trained leaf changes nothing but the Skipped count.
func TestSkipNonFiniteChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := proptest.Layouts().Draw(t, "layout")
		var trained []int
		for _, lf := range lay.Leaves() {
			if !lf.Frozen {
				for i := lf.Offset; i < lf.End(); i++ {
					trained = append(trained, i)
				}
			}
		}
		if len(trained) == 0 {
			t.Skip("no trained leaf")
		}
		inner := rules().Draw(t, "rule")
		var chain []optimisers.Rule
		if c, ok := inner.(optimisers.ChainRule); ok {
			chain = slices.Clone(c.Rules)
		} else {
			chain = []optimisers.Rule{inner}
		}
		at := rapid.IntRange(0, len(chain)).Draw(t, "at")
		rule := optimisers.Chain(slices.Insert(chain, at, optimisers.Rule(optimisers.SkipNonFinite()))...)
		t.Logf("rule: %s", ruleString(rule))

		opt := mustSetup(t, rule, lay)
		θ := proptest.Params(lay).Draw(t, "θ")
		for range rapid.IntRange(0, 3).Draw(t, "before") {
			if err := opt.Update(θ, proptest.Floats(lay.Len()).Draw(t, "g")); err != nil {
				t.Fatal(err)
			}
		}
		before, θBefore := opt.State(), slices.Clone(θ)
		g := proptest.Floats(lay.Len()).Draw(t, "bad g")
		g[rapid.SampledFrom(trained).Draw(t, "at")] = rapid.SampledFrom([]float32{
			float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}).Draw(t, "nonfinite")
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		after := opt.State()
		if !bitwise.Equal(θ, θBefore) {
			t.Fatalf("θ changed: %v → %v", θBefore, θ)
		}
		if after.Skipped != before.Skipped+1 {
			t.Fatalf("Skipped %d → %d, want one more", before.Skipped, after.Skipped)
		}
		after.Skipped = before.Skipped
		if !sameState(before, after) {
			t.Fatalf("state changed:\n%+v\n%+v", before, after)
		}
		// The next finite gradient is taken exactly as if the bad one had
		// never come.
		g2 := proptest.Floats(lay.Len()).Draw(t, "next g")
		θ2, s2, err := optimisers.Step(before, θBefore, g2)
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Update(θ, g2); err != nil {
			t.Fatal(err)
		}
		got := opt.State()
		got.Skipped = s2.Skipped
		if !bitwise.Equal(θ, θ2) || !sameState(got, s2) {
			t.Fatalf("the update after a skipped one differs from the one without it")
		}
	})
}

// testLayout has a few leaves of different sizes, one of them frozen.
func testLayout(t testing.TB) *layout.Layout {
	b := layout.NewBuilder()
	b.Add("0.weight", 64, 32).Add("0.bias", 64).Add("1.weight", 10, 64).Add("1.bias", 10).Add("scale")
	b.Freeze("scale")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

func ramp(n int, a, b float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = a + b*float32(i%97-48)/48
	}
	return x
}

// Update allocates nothing: every rule alone, behind the modifiers, and the
// chain of the design document.
func TestUpdateAllocatesNothing(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	cases := map[string]optimisers.Rule{
		"Adam": optimisers.Adam(1e-3),
		"Chain(ClipGlobalNorm, WeightDecay, Adam)": optimisers.Chain(
			optimisers.ClipGlobalNorm(1), optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3)),
		"Chain(SkipNonFinite, WeightDecay, ClipGlobalNorm, AccumGrad, ClipNorm, NAdam, EMA)": optimisers.Chain(
			optimisers.SkipNonFinite(), optimisers.WeightDecay(1e-4), optimisers.ClipGlobalNorm(1),
			optimisers.AccumGrad(2), optimisers.ClipNorm(1), optimisers.NAdam(1e-3), optimisers.EMA(0.99)),
	}
	for _, d := range descents {
		r := d()
		cases[fmt.Sprintf("%T", r)] = r
		cases[fmt.Sprintf("Chain(ClipValue, %T, ClipValue)", r)] = optimisers.Chain(
			optimisers.ClipValue(1), r, optimisers.ClipValue(1))
	}
	for name, rule := range cases {
		opt, err := optimisers.Setup(rule, lay)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		θ, g := ramp(n, 0.5, 1), ramp(n, 0.1, 2)
		if err := opt.Update(θ, g); err != nil { // first step initialises
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(50, func() { _ = opt.Update(θ, g) }); a != 0 {
			t.Errorf("%s: Update allocates %v times per call", name, a)
		}
	}
}

func TestUpdateLengthErrors(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	opt := mustSetup(t, optimisers.Adam(1e-3), lay)
	θ, g := make([]float32, n), make([]float32, n)
	for _, tc := range []struct {
		θ, g []float32
		want string
	}{
		{θ[:n-1], g, fmt.Sprintf("θ has %d floats, want %d", n-1, n)},
		{θ, append(g, 0), fmt.Sprintf("the gradient has %d floats, want %d", n+1, n)},
	} {
		err := opt.Update(tc.θ, tc.g)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Update") {
			t.Errorf("Update: got %v, want an error containing %q", err, tc.want)
		}
		_, _, err = optimisers.Step(opt.State(), tc.θ, tc.g)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Step") {
			t.Errorf("Step: got %v, want an error containing %q", err, tc.want)
		}
	}
	if opt.Steps() != 0 {
		t.Errorf("failed updates counted: Steps = %d", opt.Steps())
	}
	if _, _, err := optimisers.Step(optimisers.State{}, θ, g); err == nil {
		t.Errorf("Step of the zero State: no error")
	}
	if _, err := optimisers.Setup(optimisers.Adam(1e-3), nil); err == nil {
		t.Errorf("Setup with a nil layout: no error")
	}
	if _, err := optimisers.Setup(nil, lay); err == nil {
		t.Errorf("Setup with a nil rule: no error")
	}
	if _, err := optimisers.Setup(optimisers.Chain(optimisers.Adam(1), nil), lay); err == nil {
		t.Errorf("Setup with a nil rule in a chain: no error")
	}
}

func TestInvalidHyperparameters(t *testing.T) {
	lay := testLayout(t)
	nan := math.NaN()
	adam := func(f func(*optimisers.AdamRule)) optimisers.Rule { r := optimisers.Adam(1e-3); f(&r); return r }
	rms := func(f func(*optimisers.RMSPropRule)) optimisers.Rule { r := optimisers.RMSProp(1e-3); f(&r); return r }
	rprop := func(f func(*optimisers.RpropRule)) optimisers.Rule { r := optimisers.Rprop(1e-3); f(&r); return r }
	for _, tc := range []struct {
		rule optimisers.Rule
		want string
	}{
		{optimisers.Descent(-0.1), "Descent: LR = -0.1"},
		{optimisers.Descent(nan), "Descent: LR = NaN"},
		{optimisers.Descent(math.Inf(1)), "Descent: LR = +Inf"},
		{optimisers.Momentum(0.1, -0.9), "Momentum: Momentum = -0.9"},
		{optimisers.MomentumRule{LR: 0.1, Momentum: 0.9, Dampening: 2}, "Momentum: Dampening = 2"},
		{optimisers.Nesterov(0.1, nan), "Nesterov: Momentum = NaN"},
		{adam(func(r *optimisers.AdamRule) { r.LR = -1e-3 }), "Adam: LR = -0.001"},
		{adam(func(r *optimisers.AdamRule) { r.Beta1 = 1 }), "Adam: Beta1 = 1"},
		{adam(func(r *optimisers.AdamRule) { r.Beta2 = nan }), "Adam: Beta2 = NaN"},
		{adam(func(r *optimisers.AdamRule) { r.Eps = -1e-8 }), "Adam: Eps = -1e-08"},
		{optimisers.AdamW(1e-3, -0.01), "AdamW: WeightDecay = -0.01"},
		{optimisers.AMSGrad(nan), "Adam: LR = NaN"},
		{optimisers.RAdam(-1), "RAdam: LR = -1"},
		{optimisers.NAdamRule{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, MomentumDecay: -1}, "NAdam: MomentumDecay = -1"},
		{optimisers.AdaMax(-2), "AdaMax: LR = -2"},
		{optimisers.AdaBelief(nan), "AdaBelief: LR = NaN"},
		{optimisers.OAdam(-1), "OAdam: LR = -1"},
		{optimisers.Lion(-1), "Lion: LR = -1"},
		{rms(func(r *optimisers.RMSPropRule) { r.Alpha = 1.5 }), "RMSProp: Alpha = 1.5"},
		{rms(func(r *optimisers.RMSPropRule) { r.Momentum = -0.5 }), "RMSProp: Momentum = -0.5"},
		{optimisers.AdaGradRule{LR: 0.1, InitialAccumulator: -1}, "AdaGrad: InitialAccumulator = -1"},
		{optimisers.AdaGradRule{LR: 0.1, LRDecay: nan}, "AdaGrad: LRDecay = NaN"},
		{optimisers.AdaDeltaRule{LR: 1, Rho: 1.1}, "AdaDelta: Rho = 1.1"},
		{rprop(func(r *optimisers.RpropRule) { r.EtaMinus = 1.5 }), "Rprop: EtaMinus = 1.5"},
		{rprop(func(r *optimisers.RpropRule) { r.EtaPlus = 0.9 }), "Rprop: EtaPlus = 0.9"},
		{rprop(func(r *optimisers.RpropRule) { r.StepMax = 1e-9 }), "Rprop: StepMax = 1e-09"},
		{optimisers.WeightDecay(-1e-4), "WeightDecay: WeightDecay = -0.0001"},
		{optimisers.SignDecay(nan), "SignDecay: SignDecay = NaN"},
		{optimisers.ClipValue(-1), "ClipValue: Delta = -1"},
		{optimisers.ClipNorm(nan), "ClipNorm: Max = NaN"},
		{optimisers.ClipGlobalNorm(-1), "ClipGlobalNorm: Max = -1"},
		{optimisers.AccumGrad(0), "AccumGrad: N = 0"},
		{optimisers.EMA(1.5), "EMA: Decay = 1.5"},
		{optimisers.Chain(optimisers.ClipNorm(1), optimisers.Chain(optimisers.Adam(nan))), "Chain: rule 1: Chain: rule 0: Adam: LR = NaN"},
	} {
		_, err := optimisers.Setup(tc.rule, lay)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Setup(%s): got %v, want an error containing %q", ruleString(tc.rule), err, tc.want)
		}
	}
	// Infinite thresholds are allowed: they never bite.
	for _, r := range []optimisers.Rule{optimisers.ClipValue(math.Inf(1)), optimisers.ClipNorm(math.Inf(1)),
		optimisers.ClipGlobalNorm(math.Inf(1))} {
		if _, err := optimisers.Setup(r, lay); err != nil {
			t.Errorf("Setup(%s): %v", ruleString(r), err)
		}
	}
}

// Each rule with a fused loop agrees with its Apply loop followed by
// θ -= dx, to rounding (bit for bit where the operations are the same).
func TestFuseMatchesApply(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	for _, d := range descents {
		r := d()
		name := fmt.Sprintf("%T", r)
		fused := mustSetup(t, r, lay)
		applied := mustSetup(t, optimisers.Chain(r, optimisers.ClipValue(math.Inf(1))), lay)
		θf, θa := ramp(n, 0.5, 1), ramp(n, 0.5, 1)
		for step := range 20 {
			g := ramp(n, 0.3*float32(step%3-1), 2)
			if err := fused.Update(θf, g); err != nil {
				t.Fatal(err)
			}
			if err := applied.Update(θa, g); err != nil {
				t.Fatal(err)
			}
		}
		for i := range θf {
			if d := math.Abs(float64(θf[i] - θa[i])); d > 1e-6*math.Abs(float64(θf[i]))+1e-7 {
				t.Errorf("%s: θ[%d] fused %v, by Apply %v", name, i, θf[i], θa[i])
				break
			}
		}
	}
}

// State returns a copy, and Resume continues exactly where the optimiser was.
func TestStateIsACopyAndResumeContinues(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	rule := optimisers.Chain(optimisers.AccumGrad(2), optimisers.NAdam(1e-2), optimisers.EMA(0.9))
	opt := mustSetup(t, rule, lay)
	θ := ramp(n, 0.5, 1)
	for step := range 5 {
		if err := opt.Update(θ, ramp(n, float32(step), 1)); err != nil {
			t.Fatal(err)
		}
	}
	s := opt.State()
	kept := cloneState(s)
	θr := slices.Clone(θ)
	res, err := optimisers.Resume(s)
	if err != nil {
		t.Fatal(err)
	}
	for step := 5; step < 12; step++ {
		g := ramp(n, float32(step), 1)
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		if err := res.Update(θr, g); err != nil {
			t.Fatal(err)
		}
	}
	if !sameState(s, kept) {
		t.Errorf("a State handed out changed when the optimiser went on")
	}
	if !bitwise.Equal(θ, θr) || !sameState(opt.State(), res.State()) {
		t.Errorf("the resumed optimiser differs from the original")
	}
	if s.Layout() != lay || s.Rule() == nil || opt.Layout() != lay {
		t.Errorf("State.Layout or Rule lost")
	}
	bad := opt.State()
	bad.Slots = bad.Slots[:1]
	if _, err := optimisers.Resume(bad); err == nil {
		t.Errorf("Resume of a state with a missing slot: no error")
	}
}

// Steps from one State on several goroutines agree, and share nothing they
// write (run with -race): a rule value and a State can serve many at once.
func TestStepConcurrent(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	opt := mustSetup(t, optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.NAdam(1e-2)), lay)
	θ := ramp(n, 0.5, 1)
	if err := opt.Update(θ, ramp(n, 1, 1)); err != nil {
		t.Fatal(err)
	}
	s := opt.State()
	const workers = 4
	out := make([][]float32, workers)
	done := make(chan int)
	for w := range workers {
		go func() {
			θw, sw := θ, s
			for k := range 5 + w {
				var err error
				θw, sw, err = optimisers.Step(sw, θw, ramp(n, float32(k), 1))
				if err != nil {
					panic(err)
				}
			}
			out[w] = θw
			done <- w
		}()
	}
	for range workers {
		<-done
	}
	for w := range workers {
		θr, sr := θ, s
		for k := range 5 + w {
			θr, sr, _ = optimisers.Step(sr, θr, ramp(n, float32(k), 1))
		}
		if !bitwise.Equal(out[w], θr) {
			t.Errorf("worker %d differs from the same steps taken alone", w)
		}
	}
}
