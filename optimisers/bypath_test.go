package optimisers_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/internal/wanterr"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
	"github.com/flatkit/flatkit/proptest"
)

// refMatch is the test's own reading of ByPath's patterns: '*' is any run of
// characters, '?' one character, and a pattern matches a leaf if it matches
// its path, an alias, or a dotted prefix of either.
func refMatch(pattern string, lf layout.Leaf) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, c := range pattern {
		switch c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString(`(\..*)?$`)
	rx := regexp.MustCompile(re.String())
	for _, p := range append([]string{lf.Path}, lf.Aliases...) {
		if rx.MatchString(p) {
			return true
		}
	}
	return false
}

// refAssign returns, per leaf, the index of the first pattern matching it
// (-1 for none).
func refAssign(lay *layout.Layout, patterns []string) []int {
	out := make([]int, lay.NumLeaves())
	for li := range out {
		out[li] = -1
		for i, p := range patterns {
			if refMatch(p, lay.Leaf(li)) {
				out[li] = i
				break
			}
		}
	}
	return out
}

// patterns draws ByPath patterns for lay, each assigning at least one leaf
// given the ones before it, and ends with the catch-all "*".
func patterns(t *rapid.T, lay *layout.Layout) []string {
	var cands []string
	for _, lf := range lay.Leaves() {
		cands = append(cands, lf.Path, lf.Path[strings.LastIndexByte(lf.Path, '.')+1:])
		segs := strings.Split(lf.Path, ".")
		cands = append(cands, "*."+segs[len(segs)-1], segs[0]+"*", segs[0], strings.Repeat("?", len(segs[0]))+"*")
		cands = append(cands, lf.Aliases...)
	}
	for _, g := range lay.Groups() {
		cands = append(cands, g.Path, g.Path+".*")
	}
	var ps []string
	if len(cands) > 0 {
		for range rapid.IntRange(0, 4).Draw(t, "patterns") {
			p := rapid.SampledFrom(cands).Draw(t, "pattern")
			before := refAssign(lay, ps)
			after := refAssign(lay, append(slices.Clone(ps), p))
			if slices.Equal(before, after) {
				continue // assigns nothing new: ByPath would reject it
			}
			ps = append(ps, p)
		}
	}
	return append(ps, "*")
}

// ByPath assigns each leaf exactly one rule, the first whose pattern matches
// it: with Descent rules of distinct rates and a unit gradient, each trained
// leaf moves by exactly its rule's rate, frozen leaves not at all.
func TestByPathAssignsEachLeafOneRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := proptest.Layouts().Draw(t, "layout")
		ps := patterns(t, lay)
		t.Logf("patterns %q", ps)
		prs := make([]optimisers.PathRule, len(ps))
		for i, p := range ps {
			prs[i] = optimisers.PathRule{Pattern: p, Rule: optimisers.Descent(float64(int(1) << i))}
		}
		opt := mustSetup(t, optimisers.ByPath(lay, prs), lay)
		n := lay.Len()
		θ, g := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = 1
		}
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		want := refAssign(lay, ps)
		for li, lf := range lay.Leaves() {
			exp := float32(0)
			if !lf.Frozen {
				exp = -float32(int(1) << want[li])
			}
			for _, x := range θ[lf.Offset:lf.End()] {
				if x != exp {
					t.Fatalf("leaf %s moved by %v, want %v (pattern %q)", lf.Path, x, exp, ps[want[li]])
				}
			}
		}
	})
}

// ByPath with one stateful rule everywhere, split over random patterns,
// trains exactly as Setup with that rule: the state of the rules sits side
// by side in the same slots without overlapping.
func TestByPathOfOneRuleIsSetup(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := proptest.Layouts().Draw(t, "layout")
		d := rapid.IntRange(0, len(descents)-1).Draw(t, "descent")
		ps := patterns(t, lay)
		prs := make([]optimisers.PathRule, len(ps))
		for i, p := range ps {
			prs[i] = optimisers.PathRule{Pattern: p, Rule: optimisers.Chain(optimisers.AccumGrad(2), descents[d]())}
		}
		by := mustSetup(t, optimisers.ByPath(lay, prs), lay)
		one := mustSetup(t, optimisers.Chain(optimisers.AccumGrad(2), descents[d]()), lay)
		θ := proptest.Params(lay).Draw(t, "θ")
		θ1 := slices.Clone(θ)
		for k := range rapid.IntRange(1, 6).Draw(t, "steps") {
			g := proptest.Floats(lay.Len()).Draw(t, "g")
			if err := by.Update(θ, g); err != nil {
				t.Fatal(err)
			}
			if err := one.Update(θ1, g); err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(θ, θ1) || !sameState(by.State(), one.State()) {
				t.Fatalf("step %d: ByPath differs from Setup", k+1)
			}
		}
	})
}

func TestByPathErrors(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("encoder.weight", 3, 2).Add("encoder.bias", 3).Add("decoder.weight", 2, 3).Add("decoder.bias", 2).Add("scale")
	b.Tie("head.weight", "decoder.weight")
	b.Freeze("scale")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	other, err := layout.NewBuilder().Add("w", 4).Build()
	if err != nil {
		t.Fatal(err)
	}
	adam := optimisers.Adam(1e-3)
	for _, tc := range []struct {
		name  string
		rules []optimisers.PathRule
		lay   *layout.Layout // for Setup; nil means lay
		want  string         // "" for no error
	}{
		{"catch-all", []optimisers.PathRule{{"*", adam}}, nil, ""},
		{"design example", []optimisers.PathRule{{"*.bias", adam}, {"encoder.*", adam}, {"*", adam}}, nil, ""},
		{"trailing catch-all assigns nothing", []optimisers.PathRule{{"*.bias", adam}, {"*.weight", adam}, {"*", adam}}, nil, ""},
		{"group by name", []optimisers.PathRule{{"encoder", adam}, {"decoder", adam}}, nil, ""},
		{"alias names its leaf", []optimisers.PathRule{{"head", adam}, {"*", adam}}, nil, ""},
		{"unmatched leaf", []optimisers.PathRule{{"encoder.*", adam}, {"*.bias", adam}},
			nil, `leaf "decoder.weight" matches no pattern`},
		{"pattern matching nothing", []optimisers.PathRule{{"enocder.*", adam}, {"*", adam}},
			nil, `pattern "enocder.*" (rule 0) matches no leaf of the layout, want at least one`},
		{"shadowed pattern", []optimisers.PathRule{{"*", adam}, {"*.bias", adam}},
			nil, `pattern "*.bias" (rule 1) assigns no leaf: the leaves it matches are taken by earlier patterns (first by "*", rule 0)`},
		{"bad rule", []optimisers.PathRule{{"*", optimisers.Adam(-1)}}, nil, `ByPath: rule 0 ("*"): Adam: LR = -1`},
		{"nil rule", []optimisers.PathRule{{"*", nil}}, nil, `rule 0 ("*") is nil`},
		{"empty pattern", []optimisers.PathRule{{"", adam}}, nil, "rule 0 has an empty pattern, want a non-empty one"},
		{"no rules", nil, nil, "no PathRule, want at least one"},
		{"another layout", []optimisers.PathRule{{"*", adam}}, other, "ByPath was made for another layout"},
		{"nested", []optimisers.PathRule{{"*", optimisers.Chain(optimisers.ByPath(lay, []optimisers.PathRule{{"*", adam}}))}},
			nil, "ByPath must be the rule given to Setup"},
	} {
		l := tc.lay
		if l == nil {
			l = lay
		}
		_, err := optimisers.Setup(optimisers.ByPath(lay, tc.rules), l)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// A ByPath rule inside a chain given to Setup.
	if _, err := optimisers.Setup(optimisers.Chain(optimisers.ByPath(lay, []optimisers.PathRule{{"*", adam}})), lay); err == nil ||
		!strings.Contains(err.Error(), "ByPath must be the rule given to Setup") {
		t.Errorf("ByPath in a chain: %v", err)
	}
}

// The frozen leaf that no pattern matches has no rule: the optimiser skips
// it and Thaw says so.
func TestByPathFrozenLeafWithoutRule(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("w", 3).Add("emb", 4)
	b.Freeze("emb")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, optimisers.ByPath(lay, []optimisers.PathRule{{"w", optimisers.Descent(1)}}), lay)
	if err := opt.Thaw("emb"); err == nil || !strings.Contains(err.Error(), `leaf "emb" has no rule`) {
		t.Errorf("Thaw of a leaf without a rule: %v", err)
	}
	if err := opt.Thaw(""); err == nil {
		t.Errorf("Thaw of everything, one leaf without a rule: no error")
	}
	// Hyper of a leaf without a rule.
	_, err = opt.Hyper("emb", "lr")
	wanterr.Mentions(t, err, `Hyper: leaf "emb" has no rule, want a leaf that a rule trains`)
	θ := []float32{1, 1, 1, 1, 1, 1, 1}
	if err := opt.Update(θ, []float32{1, 1, 1, 1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 0, 0, 1, 1, 1, 1}; !slices.Equal(θ, want) {
		t.Errorf("θ = %v, want %v", θ, want)
	}
}

// Different rules per path: no weight decay on biases, a smaller rate for
// the encoder; each leaf follows its own rule exactly.
func TestByPathRulesPerPath(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("encoder.weight", 2, 2).Add("encoder.bias", 2).Add("decoder.weight", 2).Add("decoder.bias", 1)
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	bias := optimisers.Adam(1e-2)
	enc := optimisers.Chain(optimisers.WeightDecay(0.1), optimisers.Adam(1e-3))
	rest := optimisers.Chain(optimisers.WeightDecay(0.1), optimisers.Adam(1e-2))
	opt, err := optimisers.Setup(optimisers.ByPath(lay, []optimisers.PathRule{
		{"*.bias", bias}, {"encoder", enc}, {"*", rest}}), lay)
	if err != nil {
		t.Fatal(err)
	}
	θ := ramp(lay.Len(), 0.5, 1)
	refs := map[string]struct {
		rule optimisers.Rule
		opt  *optimisers.Optimiser
		θ    []float32
	}{}
	for path, rule := range map[string]optimisers.Rule{"encoder.weight": enc, "encoder.bias": bias, "decoder.weight": rest, "decoder.bias": bias} {
		lf, _ := lay.Find(path)
		l1, err := layout.NewBuilder().Add("x", lf.Shape...).Build()
		if err != nil {
			t.Fatal(err)
		}
		o := mustSetup(t, rule, l1)
		refs[path] = struct {
			rule optimisers.Rule
			opt  *optimisers.Optimiser
			θ    []float32
		}{rule, o, slices.Clone(θ[lf.Offset:lf.End()])}
	}
	for step := range 5 {
		g := ramp(lay.Len(), float32(step)-2, 1)
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		for path, r := range refs {
			lf, _ := lay.Find(path)
			if err := r.opt.Update(r.θ, g[lf.Offset:lf.End()]); err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(r.θ, θ[lf.Offset:lf.End()]) {
				t.Fatalf("step %d: %s = %v, its rule alone gives %v", step+1, path, θ[lf.Offset:lf.End()], r.θ)
			}
		}
	}
}

func ExampleByPath() {
	b := layout.NewBuilder()
	b.Add("encoder.weight", 2, 2).Add("encoder.bias", 2).Add("head.weight", 2).Add("head.bias", 1)
	lay, err := b.Build()
	if err != nil {
		panic(err)
	}
	rule := optimisers.ByPath(lay, []optimisers.PathRule{
		{Pattern: "*.bias", Rule: optimisers.Descent(0.1)},   // no weight decay on biases
		{Pattern: "encoder", Rule: optimisers.Descent(0.01)}, // a smaller rate for the encoder
		{Pattern: "*", Rule: optimisers.Chain(optimisers.WeightDecay(1), optimisers.Descent(0.1))},
	})
	opt, err := optimisers.Setup(rule, lay)
	if err != nil {
		panic(err)
	}
	θ := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}
	g := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}
	if err := opt.Update(θ, g); err != nil {
		panic(err)
	}
	fmt.Println(θ)
	// Output: [0.99 0.99 0.99 0.99 0.9 0.9 0.8 0.8 0.9]
}

// By hand, ByPath applies each trained leaf's rule to its range of the whole
// buffer, and Scheduled applies its rule with the value for step t.
func TestByPathAndScheduledByHand(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("a", 2).Add("b", 2).Add("c", 1)
	b.Freeze("c")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	by := optimisers.ByPath(lay, []optimisers.PathRule{
		{Pattern: "a", Rule: optimisers.Descent(2)},
		{Pattern: "*", Rule: optimisers.Momentum(3, 0.5)},
	})
	if by.Layout() != lay || len(by.Rules()) != 2 || by.Slots() != 1 {
		t.Errorf("Layout, Rules or Slots wrong: %d rules, %d slots", len(by.Rules()), by.Slots())
	}
	state := [][]float32{make([]float32, 5)}
	θ := []float32{1, 1, 1, 1, 1}
	by.Init(state, θ)
	dx := []float32{1, 2, 3, 4, 5}
	by.Apply(state, θ, dx, 1)
	if want := []float32{2, 4, 9, 12, 5}; !slices.Equal(dx, want) {
		t.Errorf("ByPath by hand: dx = %v, want %v", dx, want)
	}
	sch := optimisers.Scheduled(optimisers.Descent(0), "lr", optimisers.Exponential(1, 0.5))
	dx = []float32{4, 8}
	sch.Init(nil, θ[:2])
	sch.Apply(nil, θ[:2], dx, 3)
	if want := []float32{1, 2}; !slices.Equal(dx, want) || sch.Slots() != 0 {
		t.Errorf("Scheduled by hand at t = 3: dx = %v, want %v", dx, want)
	}
}
