package proptest_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/wrongcube"
	"github.com/flatkit/flatkit/proptest"
)

func cubeLoss(c *wrongcube.Cube) func(ad.Var) ad.Var {
	return func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(ad.Apply(c, ad.Attrs{}, p))) }
}

func cubeMap(c *wrongcube.Cube) func(ad.Var) ad.Var {
	return func(p ad.Var) ad.Var { return ad.Apply(c, ad.Attrs{}, p) }
}

var (
	θ0 = []float32{0.3, -0.7, 0.9, 0.5}
	θs = [][]float32{θ0, {-0.4, 0.6, 0.2, -0.8}, {0.7, 0.1, -0.5, 0.35}, {-0.2, -0.9, 0.45, 0.6}}
)

func TestADCheckersPassOnRightRules(t *testing.T) {
	right := wrongcube.New(1, 1, 1)
	rapid.Check(t, func(t *rapid.T) {
		θ := proptest.NoTies(4).Draw(t, "θ")
		for i := range θ {
			θ[i] /= 2 // keep tanh(x³) away from saturation
		}
		proptest.CheckGrad(t, cubeLoss(right), θ)
		proptest.CheckJVP(t, cubeMap(right), θ)
		proptest.CheckTranspose(t, cubeMap(right), θ)
		proptest.CheckHVP(t, cubeLoss(right), θ)
	})
}

func TestADCheckersFailOnWrongRules(t *testing.T) {
	wrongVJP := wrongcube.New(1.5, 1, 1)
	wrongJVP := wrongcube.New(1, 1.5, 1)
	wrongSecond := wrongcube.New(1, 1, 0.5)
	tests := []struct {
		name  string
		check func(proptest.T, []float32)
		want  string
	}{
		{"CheckGrad, wrong VJP", func(t proptest.T, θ []float32) { proptest.CheckGrad(t, cubeLoss(wrongVJP), θ) }, "CheckGrad"},
		{"CheckJVP, wrong JVP", func(t proptest.T, θ []float32) { proptest.CheckJVP(t, cubeMap(wrongJVP), θ) }, "CheckJVP"},
		{"CheckTranspose, wrong VJP", func(t proptest.T, θ []float32) { proptest.CheckTranspose(t, cubeMap(wrongVJP), θ) }, "CheckTranspose"},
		{"CheckTranspose, wrong JVP", func(t proptest.T, θ []float32) { proptest.CheckTranspose(t, cubeMap(wrongJVP), θ) }, "CheckTranspose"},
		{"CheckHVP, wrong second derivative", func(t proptest.T, θ []float32) { proptest.CheckHVP(t, cubeLoss(wrongSecond), θ) }, "CheckHVP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One random direction can miss an error by chance, so the
			// checker must catch it at most of a few points.
			caught := 0
			for _, θ := range θs {
				r := run(func(t proptest.T) { tt.check(t, θ) })
				if len(r.errors) > 0 {
					caught++
					if !strings.Contains(r.errors[0], tt.want) {
						t.Errorf("report %q does not name %s", r.errors[0], tt.want)
					}
				}
			}
			if caught < len(θs)-1 {
				t.Fatalf("the checker passed a deliberately wrong derivative at %d of %d points", len(θs)-caught, len(θs))
			}
		})
	}
	// The wrong second derivative leaves the first derivatives right.
	if r := run(func(t proptest.T) { proptest.CheckGrad(t, cubeLoss(wrongSecond), θ0) }); len(r.errors) > 0 {
		t.Errorf("CheckGrad failed a right first derivative: %v", r.errors)
	}
}

// The case: a VJP of x³ scaled by 1.5 passed a one-direction check
// at 1–3 % of random points. Now it must be caught at every one of 1000,
// for small θ (the full gradient) and large θ (random directions), and a
// right rule must pass at all of them.
func TestCheckGradCatchesWrongCubeVJPAtEveryPoint(t *testing.T) {
	wrong := wrongcube.New(1.5, 1, 1)
	right := wrongcube.New(1, 1, 1)
	for _, n := range []int{1, 4, 40} {
		gen := proptest.NoTies(n)
		missed, falseAlarms := 0, 0
		for i := range 1000 {
			θ := gen.Example(i)
			for j := range θ {
				θ[j] /= 2 // keep tanh(x³) away from saturation
			}
			if r := run(func(t proptest.T) { proptest.CheckGrad(t, cubeLoss(wrong), θ) }); len(r.errors) == 0 {
				missed++
				if missed == 1 {
					t.Errorf("n=%d: the wrong VJP passed at θ = %v", n, θ)
				}
			}
			if n == 40 && i%10 != 0 {
				continue // the right rule at large θ: a sample keeps the test quick
			}
			if r := run(func(t proptest.T) { proptest.CheckGrad(t, cubeLoss(right), θ) }); len(r.errors) > 0 {
				falseAlarms++
				if falseAlarms == 1 {
					t.Errorf("n=%d: the right VJP failed at θ = %v: %v", n, θ, r.errors)
				}
			}
		}
		if missed > 0 || falseAlarms > 0 {
			t.Errorf("n=%d: wrong VJP missed at %d of 1000 points; right VJP failed at %d", n, missed, falseAlarms)
		}
	}
}

// A failure names the component, the direction's size, the step and the
// tolerance.
func TestCheckGradReportNamesIndexDirectionStepTolerance(t *testing.T) {
	wrong := wrongcube.New(1.5, 1, 1)
	r := run(func(t proptest.T) { proptest.CheckGrad(t, cubeLoss(wrong), θ0) })
	if len(r.errors) != 1 {
		t.Fatalf("got %d reports, want 1: %v", len(r.errors), r.errors)
	}
	for _, want := range []string{"CheckGrad", "∂f/∂θ[", "|d| = 1", "step 0.03125", "step 0.0078125", "estimated error", "tolerance", "of 4 directions"} {
		if !strings.Contains(r.errors[0], want) {
			t.Errorf("report %q does not contain %q", r.errors[0], want)
		}
	}
	big := make([]float32, 40)
	for i := range big {
		big[i] = 0.4 + 0.01*float32(i)
	}
	r = run(func(t proptest.T) { proptest.CheckGrad(t, cubeLoss(wrong), big, proptest.Directions(3)) })
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "random direction 1 of 3 (|d| = ") {
		t.Errorf("large θ: report %v does not name the random direction and its size", r.errors)
	}
	r = run(func(t proptest.T) {
		proptest.CheckGrad(t, cubeLoss(wrong), θ0, proptest.Steps(1e-3), proptest.Tol(0.01, 1e-4))
	})
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "step 0.001") || strings.Contains(r.errors[0], "step 0.01") {
		t.Errorf("options not applied: %v", r.errors)
	}
}

// A wrong first derivative makes CheckHVP report the first derivative, not
// a second-order disagreement.
func TestCheckHVPChecksGradientFirst(t *testing.T) {
	wrongVJP := wrongcube.New(1.5, 1, 1)
	for _, θ := range θs {
		r := run(func(t proptest.T) { proptest.CheckHVP(t, cubeLoss(wrongVJP), θ) })
		if len(r.errors) != 1 || !strings.Contains(r.errors[0], "first derivative is wrong") || !strings.Contains(r.errors[0], "∂f/∂θ[") {
			t.Errorf("θ = %v: got %v, want one first-order report", θ, r.errors)
		}
	}
}

// The other checkers catch their wrong rule at every point too: a JVP of x³
// scaled by 1.5 (CheckJVP), a VJP so scaled (CheckTranspose), and a second
// derivative scaled by 0.5 under right first derivatives (CheckHVP).
func TestCheckersCatchWrongRulesAtEveryPoint(t *testing.T) {
	wrongVJP := wrongcube.New(1.5, 1, 1)
	wrongJVP := wrongcube.New(1, 1.5, 1)
	wrongSecond := wrongcube.New(1, 1, 0.5)
	checks := map[string]func(proptest.T, []float32){
		"CheckJVP":       func(t proptest.T, θ []float32) { proptest.CheckJVP(t, cubeMap(wrongJVP), θ) },
		"CheckTranspose": func(t proptest.T, θ []float32) { proptest.CheckTranspose(t, cubeMap(wrongVJP), θ) },
		"CheckHVP":       func(t proptest.T, θ []float32) { proptest.CheckHVP(t, cubeLoss(wrongSecond), θ) },
	}
	gen := proptest.NoTies(4)
	for name, check := range checks {
		missed := 0
		for i := range 300 {
			θ := gen.Example(i)
			for j := range θ {
				θ[j] /= 2
			}
			r := run(func(t proptest.T) { check(t, θ) })
			if len(r.errors) == 0 {
				if missed++; missed == 1 {
					t.Errorf("%s passed a wrong rule at θ = %v", name, θ)
				}
			} else if !strings.Contains(r.errors[0], name) {
				t.Errorf("%s: report %q does not name the checker", name, r.errors[0])
			}
		}
		if missed > 0 {
			t.Errorf("%s missed the wrong rule at %d of 300 points", name, missed)
		}
	}
}

// A function whose number of outputs changes between θ+hd and θ−hd stops
// CheckJVP with an error naming both counts and what was wanted.
func TestCheckJVPOutputCountChanges(t *testing.T) {
	f := func(v ad.Var) ad.Var {
		if v.Data()[0] > 0 {
			return v
		}
		return ad.Sum(v)
	}
	r := run(func(t proptest.T) { proptest.CheckJVP(t, f, []float32{0, 1}) })
	want := "CheckJVP: f has 2 outputs at θ+hd but 1 at θ−hd, want the same number"
	if !r.fatal || len(r.errors) != 1 || r.errors[0] != want {
		t.Errorf("errors %q (fatal %t), want one fatal error %q", r.errors, r.fatal, want)
	}
}

// f = 1000·Σθ³ at θ = 0 has a zero gradient, but its central differences
// along a coordinate are 1000·h², 0.1 and 0.009 at the default steps, both
// outside the tolerance: only the Richardson extrapolation of the two,
// exact for a cubic, agrees. A wrong VJP (×1.5, at θ = 0.05) still fails,
// and the report gives the extrapolation too.
func TestCheckGradExtrapolatesPastALargeThirdDerivative(t *testing.T) {
	steep := func(c *wrongcube.Cube) func(ad.Var) ad.Var {
		return func(p ad.Var) ad.Var { return ad.Scale(ad.Sum(ad.Apply(c, ad.Attrs{}, p)), 1000) }
	}
	zero := []float32{0, 0, 0}
	if r := run(func(t proptest.T) { proptest.CheckGrad(t, steep(wrongcube.New(1, 1, 1)), zero) }); len(r.errors) > 0 {
		t.Errorf("a right gradient failed: %v", r.errors)
	}
	r := run(func(t proptest.T) {
		proptest.CheckGrad(t, steep(wrongcube.New(1.5, 1, 1)), []float32{0.05, 0.05, 0.05})
	})
	if len(r.errors) == 0 {
		t.Fatal("a VJP scaled by 1.5 passed")
	}
	for _, want := range []string{"at step 0.03125", "at step 0.015625", "at step 0.0078125", "Richardson extrapolation"} {
		if !strings.Contains(r.errors[0], want) {
			t.Errorf("the report %q does not mention %q", r.errors[0], want)
		}
	}
}
