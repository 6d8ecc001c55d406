package main

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// TestBenchStiffSensQuick runs stiffsens -quick (N = 5) and checks its
// lines: the reference; each flatkit gradient either skipped with ode's
// reason or within 1e-3 of the reference (the methods' errors at rtol
// 1e-6 are below 1e-4; a wrong gradient is off by far more) with no
// allocation per call; and the CVODES peer's lines, scored the same way,
// when SUNDIALS is installed, else one skipped line that says why (CI
// does not install it).
func TestBenchStiffSensQuick(t *testing.T) {
	stiffSensCacheOverride = t.TempDir()
	defer func() { stiffSensCacheOverride = "" }()
	cases := runBench(t, []string{"stiffsens"})
	ref := figure(t, cases, "bruss1d N=5 reference")
	if ref == nil {
		return
	}
	if g, ok := ref["dGdtheta"].([]any); !ok || len(g) != 3 {
		t.Errorf("reference dG/dθ %v, want 3 numbers", ref["dGdtheta"])
	}
	solved := 0
	for _, m := range stiffSensMethods {
		for _, c := range stiffSensCombos() {
			s, st := c.s, c.st
			name := "bruss1d N=5 " + m.name + " " + st + " " + sensName(s)
			f := figure(t, cases, name)
			if f == nil {
				continue
			}
			if f["unit"] == "skipped" {
				if r, _ := f["skipped"].(string); r == "" {
					t.Errorf("%s: skipped without a reason", name)
				}
				continue
			}
			solved++
			checkAtMost(t, name, f, "max_rel_err", 1e-3)
			checkAtMost(t, name, f, "rel_err_u0", 1e-3)
			checkAtMost(t, name, f, "allocs", 2)
			if x, ok := f["x_forward_solve"].(float64); !ok || x <= 0 {
				t.Errorf("%s: x_forward_solve %v", name, f["x_forward_solve"])
			}
		}
		for _, st := range stiffSensStructures {
			figure(t, cases, "bruss1d N=5 forward solve "+m.name+" "+st)
		}
	}
	if solved < 8 {
		t.Errorf("%d gradients solved, want at least InterpolatingAdjoint and ForwardSensitivity with BDF and Rodas5P, band and sparse", solved)
	}

	if skip, ok := cases["CVODES peer"]; ok {
		if _, err := exec.LookPath("cc"); err == nil && !strings.Contains(skip["skipped"].(string), "libsundials-dev") {
			t.Errorf("peer skipped for another reason than SUNDIALS: %v", skip["skipped"])
		}
		t.Logf("peer: %v", skip["skipped"])
		return
	}
	checkAtMost(t, "reference", ref, "cvodes_check_rel_err", 1e-5)
	peer := 0
	for name, f := range cases {
		if f["peer"] != true {
			continue
		}
		peer++
		if f["method"] != "forward" {
			checkAtMost(t, name, f, "max_rel_err", 1e-3)
		}
	}
	if peer != 3 {
		t.Errorf("%d peer lines, want 3 (forward solve, adjoint, forward sensitivities)", peer)
	}
}

// stiffSensCombos are the sensitivity methods × structures of the lines.
func stiffSensCombos() (c []struct {
	s  ode.Sensitivity
	st string
}) {
	for _, s := range append(stiffSensAdjoints, stiffSensForward...) {
		for _, st := range stiffSensStructures {
			c = append(c, struct {
				s  ode.Sensitivity
				st string
			}{s, st})
		}
	}
	return c
}

// TestStiffSensErrors checks the error measure on made-up gradients: the
// largest relative error over dG/dθ, the relative error in norm over
// dG/du0, and the larger of the two.
func TestStiffSensErrors(t *testing.T) {
	ref := &stiffSensRef{Theta: []float64{1, -2, 4}, U0: []float64{3, 4}}
	e, et, eu := stiffSensErrors(ref, []float64{1.01, -2, 4.02}, []float64{3, 4.5})
	if math.Abs(et-0.01) > 1e-15 || math.Abs(eu-0.1) > 1e-15 || e != eu {
		t.Errorf("errors %g, %g, %g, want 0.1 (max), 0.01 (θ), 0.1 (u0)", e, et, eu)
	}
	e, et, eu = stiffSensErrors(ref, []float64{1, -2.2, 4}, nil)
	if math.Abs(et-0.1) > 1e-15 || eu != -1 || e != et {
		t.Errorf("errors without u0 %g, %g, %g, want 0.1, 0.1, -1", e, et, eu)
	}
}

// TestStiffSensReferenceCache checks that a second reference at the same
// N comes from the cache, equal to the first.
func TestStiffSensReferenceCache(t *testing.T) {
	stiffSensCacheOverride = t.TempDir()
	defer func() { stiffSensCacheOverride = "" }()
	a, cached, err := stiffSensReference(context.Background(), 2)
	if err != nil || cached {
		t.Fatalf("first reference: cached %v, err %v", cached, err)
	}
	b, cached, err := stiffSensReference(context.Background(), 2)
	if err != nil || !cached {
		t.Fatalf("second reference: cached %v, err %v", cached, err)
	}
	if a.G != b.G || a.Theta[2] != b.Theta[2] || a.U0[3] != b.U0[3] {
		t.Errorf("cached reference %+v differs from %+v", b, a)
	}
}

// TestBenchStiffSensScaleQuick runs the scaling lines in -quick mode (N =
// 5 and 10, 3 extra parameters): each N has its forward solve and the
// adjoint with 3 and 6 parameters, allocation-free, the latter within
// the tolerance's reach of the former (the extra terms are 1e-12) and
// with its time ratio.
func TestBenchStiffSensScaleQuick(t *testing.T) {
	stiffSensCacheOverride = t.TempDir()
	defer func() { stiffSensCacheOverride = "" }()
	cases := runBench(t, []string{"-stiffsens-scale", "-stiffsens-nopeer", "stiffsens"})
	for _, n := range []int{5, 10} {
		base := fmt.Sprintf("bruss1d N=%d scaling ", n)
		figure(t, cases, base+"forward solve BDF band")
		for _, np := range []int{3, 6} {
			name := fmt.Sprintf("%sBDF band InterpolatingAdjoint, %d parameters", base, np)
			f := figure(t, cases, name)
			if f == nil {
				continue
			}
			checkAtMost(t, name, f, "allocs", 2)
			if x, ok := f["us_per_state"].(float64); !ok || x <= 0 {
				t.Errorf("%s: us_per_state %v", name, f["us_per_state"])
			}
			if np == 6 {
				checkAtMost(t, name, f, "rel_diff_3_params", 1e-3)
				if x, ok := f["x_3_params"].(float64); !ok || x <= 0 {
					t.Errorf("%s: x_3_params %v", name, f["x_3_params"])
				}
			}
		}
	}
}
