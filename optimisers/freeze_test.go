package optimisers_test

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
	"github.com/flatkit/flatkit/proptest"
)

// leafwise draws a rule whose effect on a leaf depends on that leaf alone: a
// descent rule behind leafModifiers.
func leafwise() *rapid.Generator[optimisers.Rule] {
	mods := leafModifiers
	return rapid.Custom(func(t *rapid.T) optimisers.Rule {
		chain := []optimisers.Rule{descents[rapid.IntRange(0, len(descents)-1).Draw(t, "descent")]()}
		for range rapid.IntRange(0, 2).Draw(t, "modifiers") {
			m := mods[rapid.IntRange(0, len(mods)-1).Draw(t, "modifier")]()
			chain = slices.Insert(chain, rapid.IntRange(0, len(chain)).Draw(t, "at"), m)
		}
		if len(chain) == 1 {
			return chain[0]
		}
		return optimisers.Chain(chain...)
	})
}

// paths lists every path of lay: leaves, aliases, groups and "".
func paths(lay *layout.Layout) []string {
	ps := []string{""}
	for _, lf := range lay.Leaves() {
		ps = append(ps, lf.Path)
		ps = append(ps, lf.Aliases...)
	}
	for _, g := range lay.Groups() {
		ps = append(ps, g.Path)
	}
	return ps
}

// Freezing and thawing in any order: frozen leaves never change, and each
// leaf follows its rule exactly as an optimiser of that leaf alone fed only
// the updates during which it was trained (counts, state and Init per leaf).
func TestFreezeThawPerLeaf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay, rule := drawLayoutRule(t, leafwise())
		opt := mustSetup(t, rule, lay)
		θ := proptest.Params(lay).Draw(t, "θ")
		type ref struct {
			opt *optimisers.Optimiser
			θ   []float32
			on  bool
		}
		refs := make([]ref, lay.NumLeaves())
		for li, lf := range lay.Leaves() {
			l1, err := layout.NewBuilder().Add("x", lf.Shape...).Build()
			if err != nil {
				t.Fatal(err)
			}
			o := mustSetup(t, rule, l1)
			refs[li] = ref{o, slices.Clone(θ[lf.Offset:lf.End()]), !lf.Frozen}
		}
		ps := paths(lay)
		for step := range rapid.IntRange(1, 8).Draw(t, "steps") {
			for range rapid.IntRange(0, 2).Draw(t, "ops") {
				path := rapid.SampledFrom(ps).Draw(t, "path")
				thaw := rapid.Bool().Draw(t, "thaw")
				var err error
				if thaw {
					err = opt.Thaw(path)
				} else {
					err = opt.Freeze(path)
				}
				if err != nil {
					t.Fatal(err)
				}
				lo, hi, _ := lay.Range(path)
				for li, lf := range lay.Leaves() {
					if lf.Offset >= lo && lf.End() <= hi {
						refs[li].on = thaw
					}
				}
			}
			g := proptest.Floats(lay.Len()).Draw(t, "g")
			before := slices.Clone(θ)
			if err := opt.Update(θ, g); err != nil {
				t.Fatal(err)
			}
			for li, lf := range lay.Leaves() {
				r := &refs[li]
				if r.on {
					if err := r.opt.Update(r.θ, g[lf.Offset:lf.End()]); err != nil {
						t.Fatal(err)
					}
				} else if !bitwise.Equal(θ[lf.Offset:lf.End()], before[lf.Offset:lf.End()]) {
					t.Fatalf("step %d: frozen leaf %s changed", step+1, lf.Path)
				}
				if !bitwise.Equal(θ[lf.Offset:lf.End()], r.θ) {
					t.Fatalf("step %d: leaf %s = %v, alone it would be %v", step+1, lf.Path, θ[lf.Offset:lf.End()], r.θ)
				}
			}
		}
	})
}

// A leaf the layout freezes starts training at Thaw with fresh state: its
// first update is Adam's first (bias correction at t = 1), whatever the
// step count of the others.
func TestThawFrozenLeafStartsAfresh(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("body", 4).Add("head", 3)
	b.Freeze("head")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, optimisers.Adam(0.1), lay)
	θ := ramp(lay.Len(), 0.5, 1)
	for range 10 {
		if err := opt.Update(θ, ramp(lay.Len(), 0.3, 1)); err != nil {
			t.Fatal(err)
		}
	}
	head := slices.Clone(θ[4:])
	if err := opt.Thaw("head"); err != nil {
		t.Fatal(err)
	}
	g := []float32{1, 1, 1, 1, 0.5, -2, 3}
	if err := opt.Update(θ, g); err != nil {
		t.Fatal(err)
	}
	// Adam's first step moves each element by lr·sign(g) (up to ε).
	for i, x := range θ[4:] {
		want := head[i] - 0.1*sign(g[4+i])
		if d := x - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("head[%d] = %v after its first update, want %v", i, x, want)
		}
	}
	if opt.Steps() != 11 {
		t.Errorf("Steps = %d, want 11", opt.Steps())
	}
}

func sign(x float32) float32 {
	if x < 0 {
		return -1
	}
	return 1
}

// A leaf frozen and thawed again resumes with the moments it had.
func TestFreezeKeepsState(t *testing.T) {
	lay := testLayout(t)
	n := lay.Len()
	opt := mustSetup(t, optimisers.Adam(1e-2), lay)
	θ := ramp(n, 0.5, 1)
	for k := range 3 {
		if err := opt.Update(θ, ramp(n, float32(k), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := opt.Freeze("0"); err != nil {
		t.Fatal(err)
	}
	kept := opt.State()
	lo, hi, _ := lay.Range("0")
	θ0 := slices.Clone(θ[lo:hi])
	for k := range 3 {
		if err := opt.Update(θ, ramp(n, float32(k), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if !bitwise.Equal(θ[lo:hi], θ0) {
		t.Errorf("the frozen group changed")
	}
	s := opt.State()
	for k := range s.Slots {
		if !bitwise.Equal(s.Slots[k][lo:hi], kept.Slots[k][lo:hi]) {
			t.Errorf("slot %d of the frozen group changed", k)
		}
	}
	if err := opt.Thaw("0"); err != nil {
		t.Fatal(err)
	}
	// Functional forms agree with the methods and leave their State alone.
	s2, err := s.Thaw("0")
	if err != nil {
		t.Fatal(err)
	}
	g := ramp(n, 1, 1)
	checkStepIsUpdate(t, "State.Thaw then Step differs from Thaw then Update", s2, opt, θ, g)
	θ3, _, err := optimisers.Step(s, θ, g)
	if err != nil {
		t.Fatal(err)
	}
	if !bitwise.Equal(θ3[lo:hi], θ[lo:hi]) {
		t.Errorf("State.Thaw changed the State it was called on")
	}
}

func TestFreezeErrors(t *testing.T) {
	lay := testLayout(t)
	opt := mustSetup(t, optimisers.Adam(1e-3), lay)
	for _, f := range []func(string) error{opt.Freeze, opt.Thaw} {
		err := f("2.weight")
		if err == nil || !strings.Contains(err.Error(), `"2.weight"`) {
			t.Errorf("unknown path: %v", err)
		}
	}
	if _, err := (optimisers.State{}).Freeze("x"); err == nil {
		t.Errorf("Freeze of the zero State: no error")
	}
	// Thaw of the layout's frozen leaf trains it.
	if err := opt.Thaw("scale"); err != nil {
		t.Fatal(err)
	}
	θ := ramp(lay.Len(), 1, 1)
	before := slices.Clone(θ)
	if err := opt.Update(θ, ramp(lay.Len(), 1, 1)); err != nil {
		t.Fatal(err)
	}
	if lf, _ := lay.Find("scale"); θ[lf.Offset] == before[lf.Offset] {
		t.Errorf("the thawed leaf did not move")
	}
	if a := testing.AllocsPerRun(20, func() { _ = opt.Update(θ, before) }); a != 0 {
		t.Errorf("Update after Thaw allocates %v times", a)
	}
}
