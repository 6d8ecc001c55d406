package optimisers_test

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
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

// scenario is a random training run: a layout, a rule (plain, scheduled or
// by path), and per step an optional Freeze, Thaw or Adjust and a gradient.
type scenario struct {
	lay   *layout.Layout
	rule  optimisers.Rule
	θ0    []float32
	ops   []scenarioOp // run before step k
	grads [][]float32
}

// scenarioOp is a Freeze, Thaw or Adjust of the learning rate, or nothing.
type scenarioOp struct {
	kind string // "", "freeze", "thaw", "adjust"
	path string
	lr   float64
}

func (op scenarioOp) apply(o *optimisers.Optimiser) error {
	switch op.kind {
	case "freeze":
		return o.Freeze(op.path)
	case "thaw":
		return o.Thaw(op.path)
	case "adjust":
		return o.Adjust(optimisers.Set("lr", op.lr), op.path)
	}
	return nil
}

// applyState is apply through State's functional forms; on error s is
// returned as it was, as the optimiser stays as it was.
func (op scenarioOp) applyState(s optimisers.State) (optimisers.State, error) {
	var s2 optimisers.State
	var err error
	switch op.kind {
	case "freeze":
		s2, err = s.Freeze(op.path)
	case "thaw":
		s2, err = s.Thaw(op.path)
	case "adjust":
		s2, err = s.Adjust(optimisers.Set("lr", op.lr), op.path)
	default:
		return s, nil
	}
	if err != nil {
		return s, err
	}
	return s2, nil
}

func drawScenario(t *rapid.T) scenario {
	lay := proptest.Layouts().Draw(t, "layout")
	var rule optimisers.Rule
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		ps := patterns(t, lay)
		prs := make([]optimisers.PathRule, len(ps))
		for i, p := range ps {
			prs[i] = optimisers.PathRule{Pattern: p, Rule: rules().Draw(t, "rule")}
		}
		rule = optimisers.ByPath(lay, prs)
	case 1:
		rule = optimisers.Scheduled(rules().Draw(t, "rule"), "lr", optimisers.WarmupCosine(1e-2, 1e-3, 2, 6))
	default:
		rule = rules().Draw(t, "rule")
	}
	t.Logf("rule: %s", ruleString(rule))
	steps := rapid.IntRange(1, 8).Draw(t, "steps")
	sc := scenario{lay: lay, rule: rule, θ0: proptest.Params(lay).Draw(t, "θ"), grads: gradients(t, lay.Len(), steps)}
	ps := paths(lay)
	for range steps {
		var op scenarioOp
		switch rapid.IntRange(0, 5).Draw(t, "op") {
		case 0:
			op = scenarioOp{kind: "freeze", path: rapid.SampledFrom(ps).Draw(t, "freeze")}
		case 1:
			op = scenarioOp{kind: "thaw", path: rapid.SampledFrom(ps).Draw(t, "thaw")}
		case 2:
			op = scenarioOp{kind: "adjust", path: rapid.SampledFrom(ps).Draw(t, "adjust"),
				lr: rapid.SampledFrom([]float64{0, 1e-3, 0.02}).Draw(t, "lr")}
		}
		sc.ops = append(sc.ops, op)
	}
	return sc
}

// step runs op k (its error, such as Thaw of a leaf without a rule, is part
// of the run) and update k.
func (sc scenario) step(t *rapid.T, o *optimisers.Optimiser, θ []float32, k int) {
	_ = sc.ops[k].apply(o)
	if err := o.Update(θ, sc.grads[k]); err != nil {
		t.Fatalf("step %d: %v", k+1, err)
	}
}

// The functional forms (State.Freeze, Thaw, Adjust, then Step) run any
// scenario exactly as the optimiser's methods and Update do.
func TestScenarioStepEqualsUpdate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t)
		opt, err := optimisers.Setup(sc.rule, sc.lay)
		if err != nil {
			t.Fatal(err)
		}
		s := opt.State()
		θu, θs := slices.Clone(sc.θ0), slices.Clone(sc.θ0)
		for k := range sc.grads {
			errO := sc.ops[k].apply(opt)
			var errS error
			s, errS = sc.ops[k].applyState(s)
			if (errO == nil) != (errS == nil) {
				t.Fatalf("step %d: %+v: the optimiser says %v, the State %v", k+1, sc.ops[k], errO, errS)
			}
			if err := opt.Update(θu, sc.grads[k]); err != nil {
				t.Fatal(err)
			}
			θs, s, err = optimisers.Step(s, θs, sc.grads[k])
			if err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(θu, θs) || !sameState(opt.State(), s) {
				t.Fatalf("step %d: Step and Update differ", k+1)
			}
		}
	})
}

// A run resumed from a checkpoint after k steps continues bit for bit as the
// run that never stopped, whatever happened before: ByPath rules, schedules,
// frozen and thawed leaves, adjusted rates, skipped steps, gates half way.
func TestCheckpointResumeIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t)
		k := rapid.IntRange(0, len(sc.grads)).Draw(t, "k")
		a := mustSetup(t, sc.rule, sc.lay)
		θa := slices.Clone(sc.θ0)
		for s := range k {
			sc.step(t, a, θa, s)
		}
		var buf bytes.Buffer
		if err := a.Save(&buf); err != nil {
			t.Fatal(err)
		}
		b, err := optimisers.Load(bytes.NewReader(buf.Bytes()), sc.rule, sc.lay)
		if err != nil {
			t.Fatal(err)
		}
		if !sameState(a.State(), b.State()) {
			t.Fatalf("the loaded state differs")
		}
		θb := slices.Clone(θa)
		for s := k; s < len(sc.grads); s++ {
			sc.step(t, a, θa, s)
			sc.step(t, b, θb, s)
			if !bitwise.Equal(θa, θb) || !sameState(a.State(), b.State()) {
				t.Fatalf("step %d (resumed after %d): the runs differ", s+1, k)
			}
		}
		// The same holds through a second round trip of the final state.
		buf.Reset()
		if err := b.Save(&buf); err != nil {
			t.Fatal(err)
		}
		c, err := optimisers.Load(&buf, sc.rule, sc.lay)
		if err != nil {
			t.Fatal(err)
		}
		g := proptest.Floats(sc.lay.Len()).Draw(t, "g last")
		θc := slices.Clone(θb)
		if err := b.Update(θb, g); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(θc, g); err != nil {
			t.Fatal(err)
		}
		if !bitwise.Equal(θb, θc) || !sameState(b.State(), c.State()) {
			t.Fatalf("after a second round trip the runs differ")
		}
	})
}

// ckptLayout is testLayout with a tie.
func ckptLayout(t testing.TB) *layout.Layout {
	b := layout.NewBuilder()
	b.Add("0.weight", 4, 3).Add("0.bias", 4).Add("1.weight", 2, 4).Add("1.bias", 2).Add("scale")
	b.Tie("head.weight", "1.weight")
	b.Freeze("scale")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

func savedRun(t *testing.T, rule optimisers.Rule, lay *layout.Layout) (*optimisers.Optimiser, []byte) {
	t.Helper()
	opt := mustSetup(t, rule, lay)
	θ := ramp(lay.Len(), 0.5, 1)
	for k := range 3 {
		if err := opt.Update(θ, ramp(lay.Len(), float32(k)-1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := opt.Save(&buf); err != nil {
		t.Fatal(err)
	}
	return opt, buf.Bytes()
}

// The checkpoint is an ordinary safetensors file: the state vectors by name,
// "slot<k>.<path>" with the leaf's shape, beside the "optimiser" tensor.
func TestCheckpointFile(t *testing.T) {
	lay := ckptLayout(t)
	opt, data := savedRun(t, optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.Adam(1e-2), optimisers.EMA(0.9)), lay)
	vals, clay, err := layout.Load(bytes.NewReader(data), layout.WantHolds(optimisers.HoldsOptimiserState))
	if err != nil {
		t.Fatal(err)
	}
	s := opt.State()
	for k := range 3 {
		for _, lf := range lay.Leaves() {
			name := fmt.Sprintf("slot%d.%s", k, lf.Path)
			v, err := clay.View(vals, name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Shape, lf.Shape) || !bitwise.Equal(v.Data, s.Slots[k][lf.Offset:lf.End()]) {
				t.Errorf("%s: shape %v, %v; want %v, %v", name, v.Shape, v.Data, lf.Shape, s.Slots[k][lf.Offset:lf.End()])
			}
		}
	}
	if _, ok := clay.Find("optimiser"); !ok {
		t.Errorf("no optimiser tensor: %v", clay)
	}

	// SaveFile and LoadFile.
	path := filepath.Join(t.TempDir(), "opt.safetensors")
	if err := opt.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := optimisers.LoadFile(path, opt.Rule(), lay)
	if err != nil {
		t.Fatal(err)
	}
	if !sameState(back.State(), s) {
		t.Errorf("LoadFile: another state")
	}
	if _, err := optimisers.LoadFile(filepath.Join(t.TempDir(), "none"), opt.Rule(), lay); err == nil {
		t.Errorf("LoadFile of a missing file: no error")
	}
}

func TestCheckpointErrors(t *testing.T) {
	lay := ckptLayout(t)
	rule := optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.Adam(1e-2))
	_, data := savedRun(t, rule, lay)
	load := func(b []byte, rule optimisers.Rule, lay *layout.Layout) error {
		_, err := optimisers.Load(bytes.NewReader(b), rule, lay)
		return err
	}
	if err := load(data, rule, lay); err != nil {
		t.Fatal(err)
	}

	// Truncated anywhere.
	for _, n := range []int{0, 4, 8, 20, len(data) / 2, len(data) - 1} {
		if err := load(data[:n], rule, lay); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", n, len(data))
		}
	}
	// A corrupt byte in the optimiser tensor, and a non-byte value there.
	_, clay, _ := layout.Load(bytes.NewReader(data), layout.WantHolds(optimisers.HoldsOptimiserState))
	meta, _ := clay.Find("optimiser")
	start := len(data) - 4*clay.Len() + 4*meta.Offset
	bad := slices.Clone(data)
	bad[start+4*3+1] = 0x7f
	wanterr.Mentions(t, load(bad, rule, lay), "corrupt", "want an integer 0…255") // a non-byte value
	bad = slices.Clone(data)
	bad[start] = '['
	if err := load(bad, rule, lay); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("broken JSON: %v", err)
	}
	// Not an optimiser checkpoint.
	var plain bytes.Buffer
	if err := layout.Save(&plain, lay, make([]float32, lay.Len())); err != nil {
		t.Fatal(err)
	}
	if err := load(plain.Bytes(), rule, lay); err == nil || !strings.Contains(err.Error(), `the file holds parameters (no tensor "optimiser"), want optimiser state`) {
		t.Errorf("a parameter file: %v", err)
	}
	// And the other way: the optimiser's file, loaded as parameters, is an
	// error naming both kinds (it used to load without complaint).
	if _, _, err := layout.Load(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "the file holds optimiser state") || !strings.Contains(err.Error(), "want parameters") {
		t.Errorf("an optimiser file loaded as parameters: %v", err)
	}
	if _, err := layout.LoadInto(bytes.NewReader(data), clayParams(t, data), make([]float32, clayParams(t, data).Len())); err == nil || !strings.Contains(err.Error(), "the file holds optimiser state") {
		t.Errorf("an optimiser file loaded by LoadInto: %v", err)
	}

	// Another layout or another rule.
	b := layout.NewBuilder()
	b.Add("0.weight", 4, 3).Add("0.bias", 5).Add("1.weight", 2, 4).Add("1.bias", 2).Add("scale")
	wider, _ := b.Build()
	amsgrad := optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.AMSGrad(1e-2))
	for _, tc := range []struct {
		rule optimisers.Rule
		lay  *layout.Layout
		want string
	}{
		{rule, wider, `another layout: leaf "0.bias" has shape [5] here, [4] in the checkpoint`},
		{amsgrad, lay, "chain rule 1: the checkpoint has optimisers.AdamRule{AMSGrad:false} (2 slots), the rule is optimisers.AdamRule{AMSGrad:true} (3 slots): field AMSGrad is false in the checkpoint, true in the rule; it is not a hyperparameter"},
		{optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.RAdam(1e-2)), lay, "the rule is optimisers.RAdamRule"},
		{optimisers.Adam(1e-2), lay, "the checkpoint's chain has 2 rules, the rule's 1"},
		{optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.Scheduled(optimisers.Adam(1e-2), "lr", optimisers.Constant(1))), lay, "scheduled lr"},
		{optimisers.ByPath(lay, []optimisers.PathRule{{Pattern: "0", Rule: rule}, {Pattern: "*", Rule: rule}}), lay, "the checkpoint has 1 rules (one per ByPath pattern), the rule has 2"},
		{rule, nil, "nil layout"},
	} {
		err := load(data, tc.rule, tc.lay)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load with %s: got %v, want an error containing %q", ruleString(tc.rule), err, tc.want)
		}
	}
	// A ByPath checkpoint loaded with other patterns.
	by := optimisers.ByPath(lay, []optimisers.PathRule{{Pattern: "0", Rule: rule}, {Pattern: "*", Rule: rule}})
	_, bdata := savedRun(t, by, lay)
	other := optimisers.ByPath(lay, []optimisers.PathRule{{Pattern: "1", Rule: rule}, {Pattern: "*", Rule: rule}})
	if err := load(bdata, other, lay); err == nil || !strings.Contains(err.Error(), `PathRule 0: the checkpoint's pattern is "0", the rule's "1"`) {
		t.Errorf("other patterns: %v", err)
	}
}

// Large counters survive exactly (they travel as decimal integers).
func TestCheckpointLargeCounts(t *testing.T) {
	lay, err := layout.NewBuilder().Add("w", 2).Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, optimisers.Chain(optimisers.SkipNonFinite(), optimisers.Descent(1e-3)), lay)
	θ := []float32{1, 2}
	nan := []float32{float32(math.NaN()), 0}
	for range 3 {
		_ = opt.Update(θ, nan)
	}
	s := opt.State()
	s.Step = 1<<40 + 3 // as if after that many steps
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := optimisers.Load(&buf, opt.Rule(), lay)
	if err != nil {
		t.Fatal(err)
	}
	if back.Steps() != 1<<40+3 || back.Skipped() != 3 {
		t.Errorf("Steps %d, Skipped %d", back.Steps(), back.Skipped())
	}
}

// clayParams is the layout of an optimiser checkpoint, so that LoadInto
// would find every tensor by name if the kinds were not checked.
func clayParams(t *testing.T, data []byte) *layout.Layout {
	t.Helper()
	_, clay, err := layout.Load(bytes.NewReader(data), layout.WantHolds(optimisers.HoldsOptimiserState))
	if err != nil {
		t.Fatal(err)
	}
	return clay
}

// A changed schedule (length or peak) or a changed hyperparameter is an
// error naming what differs; before, the checkpoint loaded silently.
func TestCheckpointComparesSchedulesAndHyperparameters(t *testing.T) {
	lay := ckptLayout(t)
	sched := func(peak float64, total int) optimisers.Rule {
		return optimisers.Chain(optimisers.WeightDecay(1e-4),
			optimisers.Scheduled(optimisers.Adam(1e-3), "lr", optimisers.WarmupCosine(peak, 0, 10, total)))
	}
	_, data := savedRun(t, sched(1e-2, 1000), lay)
	if _, err := optimisers.Load(bytes.NewReader(data), sched(1e-2, 1000), lay); err != nil {
		t.Fatalf("the same rule: %v", err)
	}
	for _, c := range []struct {
		name string
		rule optimisers.Rule
		want []string
	}{
		{"longer schedule", sched(1e-2, 1001), []string{"chain rule 1", "the schedule of lr differs", "at step 11", "total:1000", "total:1001"}},
		{"other peak", sched(2e-2, 1000), []string{"the schedule of lr differs", "at step 1 ", "peak:0.01", "peak:0.02"}},
		{"other weight decay", optimisers.Chain(optimisers.WeightDecay(2e-4),
			optimisers.Scheduled(optimisers.Adam(1e-3), "lr", optimisers.WarmupCosine(1e-2, 0, 10, 1000))),
			[]string{"chain rule 0", "is 0.0001 in the checkpoint, 0.0002 in the rule"}},
		{"other β₂", optimisers.Chain(optimisers.WeightDecay(1e-4),
			optimisers.Scheduled(optimisers.AdamRule{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}, "lr", optimisers.WarmupCosine(1e-2, 0, 10, 1000))),
			[]string{"chain rule 1", "0.999 in the checkpoint, 0.99 in the rule"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := optimisers.Load(bytes.NewReader(data), c.rule, lay)
			if err == nil {
				t.Fatal("loaded without complaint")
			}
			wanterr.Mentions(t, err, c.want...)
		})
	}
}
