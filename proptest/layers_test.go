package proptest_test

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

func numel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// apply runs s.Net on x in test or training mode and returns the output
// and the tape's error.
func apply(s proptest.Stack, train bool, θ, x []float32) ([]int, []float32, error) {
	tp := ad.NewTape()
	var p ad.Var
	if len(θ) > 0 {
		p = tp.Param(θ)
	}
	y := s.Net.Apply(s.Ctx(train), p, tp.Const(flat.Tensor{Shape: s.In, Data: x}))
	if err := tp.Err(); err != nil {
		return nil, nil, err
	}
	return slices.Clone(y.Shape()), flat.Clone(y.Data()), nil
}

func TestStacksAreValid(t *testing.T) {
	tests := []struct {
		name string
		opts proptest.StackOptions
	}{
		{"defaults", proptest.StackOptions{}},
		{"smooth", proptest.StackOptions{Smooth: true}},
		{"deep and small", proptest.StackOptions{MaxDepth: 3, MaxLayers: 3, MaxElems: 64}},
		{"no containers", proptest.StackOptions{MaxDepth: -1, MaxLayers: 6}},
		{"convolutions in 3-D", proptest.StackOptions{Kinds: []proptest.Kind{proptest.Conv, proptest.Skip, proptest.Parallel}, Spatial: []int{3}}},
		{"transposed convolutions in 1-D", proptest.StackOptions{Kinds: []proptest.Kind{proptest.ConvTranspose, proptest.Skip, proptest.Tanh}, Spatial: []int{1}}},
		{"dense on features", proptest.StackOptions{Kinds: []proptest.Kind{proptest.Dense, proptest.Tanh, proptest.Parallel, proptest.Chain}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxElems := tt.opts.MaxElems
			if maxElems == 0 {
				maxElems = 256
			}
			rapid.Check(t, func(t *rapid.T) {
				s := proptest.Stacks(tt.opts).Draw(t, "stack")
				lay, err := model.Layout(s.Net)
				if err != nil {
					t.Fatalf("%s: Layout: %v", s, err)
				}
				θ := proptest.ParamsFor(s).Draw(t, "θ")
				if len(θ) != lay.Len() {
					t.Fatalf("%s: ParamsFor drew %d values, the layout has %d", s, len(θ), lay.Len())
				}
				x := proptest.InputFor(s).Draw(t, "x")
				if len(x) != numel(s.In) {
					t.Fatalf("%s: InputFor drew %d values for an input %v", s, len(x), s.In)
				}
				train := rapid.Bool().Draw(t, "train")
				shape, y, err := apply(s, train, θ, x)
				if err != nil {
					t.Fatalf("%s: Apply (training mode %v): %v", s, train, err)
				}
				if !slices.Equal(shape, s.Out) {
					t.Fatalf("%s: output shape %v, the stack says %v", s, shape, s.Out)
				}
				if numel(s.In) > maxElems || numel(s.Out) > maxElems {
					t.Fatalf("%s: input %v or output %v has more than %d elements", s, s.In, s.Out, maxElems)
				}
				for i, v := range y {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s: output %d is %v", s, i, v)
					}
				}
				for _, k := range s.Kinds {
					if tt.opts.Kinds != nil && !slices.Contains(tt.opts.Kinds, k) {
						t.Fatalf("%s: holds a %s, not among %v", s, k, tt.opts.Kinds)
					}
					if tt.opts.Smooth && !slices.Contains(proptest.SmoothKinds(), k) {
						t.Fatalf("%s: a smooth stack holds a %s", s, k)
					}
					if !strings.Contains(s.Desc, string(k)) {
						t.Fatalf("%s: holds a %s that the description does not name", s, k)
					}
				}
				if kink := slices.ContainsFunc(s.Kinds, func(k proptest.Kind) bool {
					return !slices.Contains(proptest.SmoothKinds(), k)
				}); kink != (s.Kinks != nil) {
					t.Fatalf("%s: Kinks is %v for a stack with non-smooth layers %v", s, s.Kinks, kink)
				}
				if tt.opts.Spatial != nil && !slices.Contains(tt.opts.Spatial, len(s.In)-2) {
					t.Fatalf("%s: input %v, want %v spatial axes", s, s.In, tt.opts.Spatial)
				}
			})
		})
	}
}

// Over a fixed set of draws, every kind appears: the generator does not
// silently lose a kind (a shape rule that never holds, a filter too
// strict).
func TestStacksDrawEveryKind(t *testing.T) {
	seen := map[proptest.Kind]bool{}
	gen := proptest.Stacks(proptest.StackOptions{})
	for i := range 300 {
		for _, k := range gen.Example(i).Kinds {
			seen[k] = true
		}
	}
	for _, k := range proptest.AllKinds() {
		if !seen[k] {
			t.Errorf("no stack of 300 holds a %s", k)
		}
	}
	descs := map[string]bool{}
	deepest := 0
	for i := range 300 {
		d := gen.Example(i).Desc
		descs[d] = true
		deepest = max(deepest, nesting(d))
	}
	for _, want := range []string{"groups=", "dil=", "stride=", "pad=", "outpad=", "eps=", "noaffine", "nobias", "Parallel(Add, Chain(", "Skip(Chain("} {
		found := false
		for d := range descs {
			found = found || strings.Contains(d, want)
		}
		if !found {
			t.Errorf("no stack of 300 has %q in its description", want)
		}
	}
	// The top Chain, a container in it, its Chain, a container in that.
	if deepest < 4 {
		t.Errorf("the deepest of 300 stacks nests containers %d deep, want 4 (MaxDepth 2 below the top chain)", deepest)
	}
}

// parameterised matches the layers whose description has parentheses but
// which are not containers.
var parameterised = regexp.MustCompile(`(LeakyRelu|Elu|Dropout)\([^)]*\)`)

// nesting returns how deep the containers of a stack's description nest.
func nesting(desc string) int {
	desc = parameterised.ReplaceAllString(desc, "")
	depth, deepest := 0, 0
	for _, r := range desc {
		switch r {
		case '(':
			depth++
			deepest = max(deepest, depth)
		case ')':
			depth--
		}
	}
	return deepest
}

// Kinks notices a ReLU whose inputs change sign between passes, and a
// max-pool whose winners change, and nothing when the passes agree.
func TestKinksSeeDecisionsChange(t *testing.T) {
	tests := []struct {
		name string
		opts proptest.StackOptions
	}{
		{"Relu", proptest.StackOptions{Kinds: []proptest.Kind{proptest.Relu}, MaxDepth: -1, MaxLayers: 1, Spatial: []int{0}}},
		{"LeakyRelu", proptest.StackOptions{Kinds: []proptest.Kind{proptest.LeakyRelu}, MaxDepth: -1, MaxLayers: 1, Spatial: []int{2}}},
		{"MaxPool", proptest.StackOptions{Kinds: []proptest.Kind{proptest.MaxPool}, MaxDepth: -1, MaxLayers: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := proptest.Stacks(tt.opts).Draw(t, "stack")
				x := proptest.InputFor(s).Draw(t, "x")
				neg := make([]float32, len(x))
				for i, v := range x {
					neg[i] = -v
				}
				_, y, err := apply(s, false, nil, x)
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				if _, _, err := apply(s, false, nil, x); err != nil || s.Kinks.Crossed() {
					t.Fatalf("%s: the same input twice: crossed %v (%v)", s, s.Kinks.Crossed(), err)
				}
				_, yn, err := apply(s, false, nil, neg)
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				// Negating the input flips every ReLU; a max-pool's
				// winners change exactly where some window has two
				// cells, i.e. where max(−x) ≠ −max(x).
				want := true
				if tt.name == "MaxPool" {
					want = false
					for i := range y {
						want = want || yn[i] != -y[i]
					}
				}
				if s.Kinks.Crossed() != want {
					t.Fatalf("%s: negated input: crossed %v, want %v", s, s.Kinks.Crossed(), want)
				}
				s.Kinks.Reset()
				if _, _, err := apply(s, false, nil, neg); err != nil || s.Kinks.Crossed() {
					t.Fatalf("%s: after Reset: crossed %v (%v)", s, s.Kinks.Crossed(), err)
				}
			})
		})
	}
}

func TestStacksReportImpossibleOptions(t *testing.T) {
	r := run(func(pt proptest.T) {
		defer func() {
			if p := recover(); p != nil {
				pt.Errorf("%v", p)
			}
		}()
		proptest.Stacks(proptest.StackOptions{Kinds: []proptest.Kind{proptest.MaxPool}, Spatial: []int{0}}).Example(0)
	})
	if len(r.errors) == 0 || !strings.Contains(r.errors[0], "no layer kind") {
		t.Errorf("options no layer applies to: got %v, want an error saying so", r.errors)
	}
}
