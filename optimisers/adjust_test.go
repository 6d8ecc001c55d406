package optimisers_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/internal/wanterr"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// Adjust changes the rate of a running Adam without touching its moments:
// the trajectory is Adam's fused loop by hand with the rate switched.
func TestAdjustKeepsMoments(t *testing.T) {
	lay, err := layout.NewBuilder().Add("w", 5).Build()
	if err != nil {
		t.Fatal(err)
	}
	opt := mustSetup(t, optimisers.Adam(1e-2), lay)
	θ := ramp(5, 0.5, 1)
	θr := slices.Clone(θ)
	m, v := make([]float32, 5), make([]float32, 5)
	r := optimisers.Adam(1e-2)
	for step := 1; step <= 8; step++ {
		if step == 4 {
			if err := opt.Adjust(optimisers.Set("lr", 3e-3)); err != nil {
				t.Fatal(err)
			}
			r.LR = 3e-3
		}
		if step == 6 {
			if err := opt.Adjust(optimisers.Set("beta2", 0.99)); err != nil {
				t.Fatal(err)
			}
			r.Beta2 = 0.99
		}
		g := ramp(5, float32(step%3)-1, 1)
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		r.Fuse([][]float32{m, v}, θr, g, step)
		if !bitwise.Equal(θ, θr) {
			t.Fatalf("step %d: θ = %v, by hand %v", step, θ, θr)
		}
	}
	if got, err := opt.Hyper("w", "lr"); err != nil || got != 3e-3 {
		t.Errorf("Hyper(w, lr) = %v, %v", got, err)
	}
	if a := testing.AllocsPerRun(20, func() { _ = opt.Update(θ, θr) }); a != 0 {
		t.Errorf("Update after Adjust allocates %v times", a)
	}
}

// Adjust under a path changes only the rules of the leaves under it; each
// leaf follows an optimiser of its own adjusted at the same step.
func TestAdjustUnderPath(t *testing.T) {
	lay := testLayout(t)
	rule := optimisers.Chain(optimisers.WeightDecay(1e-2), optimisers.NAdam(1e-2))
	opt := mustSetup(t, rule, lay)
	θ := ramp(lay.Len(), 0.5, 1)
	type ref struct {
		opt *optimisers.Optimiser
		θ   []float32
	}
	var refs []ref
	for _, lf := range lay.Leaves() {
		l1, _ := layout.NewBuilder().Add("x", lf.Shape...).Build()
		o := mustSetup(t, rule, l1)
		refs = append(refs, ref{o, slices.Clone(θ[lf.Offset:lf.End()])})
	}
	for step := 1; step <= 6; step++ {
		switch step {
		case 2:
			if err := opt.Adjust(optimisers.Set("lr", 1e-3), "0"); err != nil {
				t.Fatal(err)
			}
			for li, lf := range lay.Leaves() {
				if strings.HasPrefix(lf.Path, "0.") {
					refs[li].opt.Adjust(optimisers.Set("lr", 1e-3))
				}
			}
		case 3:
			if err := opt.Adjust(optimisers.Set("weight_decay", 0), "0.bias", "1.bias"); err != nil {
				t.Fatal(err)
			}
			for li, lf := range lay.Leaves() {
				if strings.HasSuffix(lf.Path, ".bias") {
					refs[li].opt.Adjust(optimisers.Set("weight_decay", 0))
				}
			}
		case 5:
			if err := opt.Adjust(optimisers.Set("momentum_decay", 0.01)); err != nil {
				t.Fatal(err)
			}
			for li := range refs {
				refs[li].opt.Adjust(optimisers.Set("momentum_decay", 0.01))
			}
		}
		g := ramp(lay.Len(), float32(step%4)-1.5, 1)
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		for li, lf := range lay.Leaves() {
			if lf.Frozen {
				continue
			}
			if err := refs[li].opt.Update(refs[li].θ, g[lf.Offset:lf.End()]); err != nil {
				t.Fatal(err)
			}
			if !bitwise.Equal(θ[lf.Offset:lf.End()], refs[li].θ) {
				t.Fatalf("step %d: leaf %s differs from its own adjusted optimiser", step, lf.Path)
			}
		}
	}
	for _, tc := range []struct {
		path, name string
		want       float64
	}{
		{"0.weight", "lr", 1e-3}, {"0.bias", "lr", 1e-3}, {"1.weight", "lr", 1e-2},
		{"0.weight", "weight_decay", 1e-2}, {"0.bias", "weight_decay", 0}, {"1.bias", "weight_decay", 0},
		{"1.weight", "momentum_decay", 0.01},
	} {
		if got, err := opt.Hyper(tc.path, tc.name); err != nil || got != tc.want {
			t.Errorf("Hyper(%s, %s) = %v, %v; want %v", tc.path, tc.name, got, err, tc.want)
		}
	}
}

func TestAdjustErrors(t *testing.T) {
	lay := testLayout(t)
	rms := optimisers.RMSProp(1e-2)
	opt, err := optimisers.Setup(optimisers.Chain(optimisers.ClipNorm(1),
		optimisers.Scheduled(rms, "alpha", optimisers.Constant(0.9))), lay)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h     optimisers.Hyper
		under []string
		want  string
	}{
		{optimisers.Set("beta3", 0.1), nil, `no rule has a hyperparameter "beta3" (the rules have: alpha, eps, lr, max_norm, momentum)`},
		{optimisers.Set("lr", math.NaN()), nil, "lr = NaN, want a value ≥ 0"},
		{optimisers.Set("lr", -1e-3), nil, "lr = -0.001, want a value ≥ 0"},
		{optimisers.Set("lr", math.Inf(1)), nil, "RMSProp: LR = +Inf"},
		{optimisers.Set("lr", 1e-3), []string{"2.weight"}, `"2.weight": unknown path`},
		{optimisers.Set("momentum", 0.9), nil, "momentum = 0.9 would change optimisers.RMSPropRule's state from 1 slots to 2"},
		{optimisers.Set("alpha", 0.5), nil, "alpha of optimisers.RMSPropRule follows a schedule"},
	} {
		err := opt.Adjust(tc.h, tc.under...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Adjust(%v, %q): got %v, want an error containing %q", tc.h, tc.under, err, tc.want)
		}
	}
	if got, err := opt.Hyper("0.weight", "lr"); err != nil || got != 1e-2 {
		t.Errorf("a failed Adjust changed lr: %v, %v", got, err)
	}
	by, err := optimisers.Setup(optimisers.ByPath(lay, []optimisers.PathRule{
		{Pattern: "0", Rule: optimisers.Adam(1e-3)}, {Pattern: "*", Rule: optimisers.Descent(1e-3)}}), lay)
	if err != nil {
		t.Fatal(err)
	}
	// Adjust of a name the rules under the path lack.
	wanterr.Mentions(t, by.Adjust(optimisers.Set("beta1", 0.8), "1"), `no rule training the leaves under "1" has a hyperparameter "beta1", want one of: lr`)
	if err := by.Adjust(optimisers.Set("beta1", 0.8)); err != nil {
		t.Errorf("Adjust of a name one PathRule has: %v", err)
	}
	if _, err := opt.Hyper("0", "lr"); err == nil {
		t.Errorf("Hyper of a group: no error")
	}
	// Hyper of a name the leaf's rules lack.
	_, err = opt.Hyper("0.weight", "beta1")
	wanterr.Mentions(t, err, `Hyper: no rule training "0.weight" has a hyperparameter "beta1", want one of: alpha, eps, lr, max_norm, momentum`)
	if got, err := opt.Hyper("0.weight", "alpha"); err != nil || got != 0.9 {
		t.Errorf("Hyper of a scheduled value = %v, %v; want 0.9", got, err)
	}
	// The functional form leaves its State alone.
	s := opt.State()
	s2, err := s.Adjust(optimisers.Set("lr", 5e-3))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Hyper("1.bias", "lr"); v != 1e-2 {
		t.Errorf("State.Adjust changed its receiver: lr = %v", v)
	}
	if v, _ := s2.Hyper("1.bias", "lr"); v != 5e-3 {
		t.Errorf("State.Adjust: lr = %v, want 5e-3", v)
	}
}

// Adjusting the same leaves again and again does not pile up variants, and
// adjusting back everywhere leaves one rule.
func TestAdjustRepeatedly(t *testing.T) {
	lay := testLayout(t)
	opt := mustSetup(t, optimisers.Adam(1e-2), lay)
	θ := ramp(lay.Len(), 0.5, 1)
	for k := range 50 {
		if err := opt.Adjust(optimisers.Set("lr", float64(k+1)*1e-4), "0.weight"); err != nil {
			t.Fatal(err)
		}
		if err := opt.Update(θ, ramp(lay.Len(), 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := opt.Adjust(optimisers.Set("lr", 1e-3)); err != nil {
		t.Fatal(err)
	}
	for _, lf := range lay.Leaves() {
		if v, err := opt.Hyper(lf.Path, "lr"); err != nil || v != 1e-3 {
			t.Errorf("%s: lr = %v, %v", lf.Path, v, err)
		}
	}
}

func ExampleOptimiser_Adjust() {
	lay, _ := layout.NewBuilder().Add("encoder.w", 2).Add("head.w", 2).Build()
	opt, _ := optimisers.Setup(optimisers.Descent(0.1), lay)
	θ := []float32{1, 1, 1, 1}
	g := []float32{1, 1, 1, 1}
	_ = opt.Update(θ, g)
	_ = opt.Adjust(optimisers.Set("lr", 0.01), "encoder") // only the encoder's rate
	_ = opt.Update(θ, g)
	fmt.Printf("%.2f\n", θ)
	// Output: [0.89 0.89 0.80 0.80]
}
