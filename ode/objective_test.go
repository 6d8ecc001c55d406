package ode_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/internal/sir"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// sirFit fits the SIR problem (internal/sir) with optimisers.Minimize and
// its method opt (nil: the default L-BFGS), gradients by s through method
// m, and returns the fitted (β, γ) and how many evaluations failed.
func sirFit(t *testing.T, m ode.Method, s ode.Sensitivity, opt optimize.Method) ([]float32, int) {
	t.Helper()
	obs, err := sir.Observations()
	if err != nil {
		t.Fatal(err)
	}
	θ := sir.Start()
	gs, err := ode.NewGradientSolver(sir.Problem(θ), m, s, ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	obj := gs.Objective(context.Background(), sir.Loss(obs))
	failed := 0
	counted := func(θ, grad []float32) (float64, error) {
		f, err := obj(θ, grad)
		if err != nil {
			failed++
		}
		return f, err
	}
	res, err := optimisers.Minimize(counted, θ, opt, nil)
	if err != nil {
		t.Fatalf("%s: %v", s.Name(), err)
	}
	t.Logf("%s: θ = %v, status %v, %d evaluations (%d failed)", s.Name(), θ, res.Status, res.FuncEvaluations, failed)
	return θ, failed
}

// The SIR fit: L-BFGS's first trial step takes γ to −0.56, where the solve
// reaches MaxSteps. Minimize takes the failure as an infeasible point and
// the fit converges to within 2 % of the true β, γ with every sensitivity
// method. Before, Minimize stopped at the start: "the objective failed at
// evaluation 2: … max steps reached".
func TestSIRFit(t *testing.T) {
	for _, c := range []struct {
		m ode.Method
		s ode.Sensitivity
	}{
		{ode.Tsit5(), ode.ForwardSensitivity{}},
		{ode.Tsit5(), ode.InterpolatingAdjoint{}},
		{ode.Tsit5(), ode.DiscreteAdjoint{}},
	} {
		t.Run(c.s.Name(), func(t *testing.T) {
			θ, failed := sirFit(t, c.m, c.s, nil)
			if failed == 0 {
				t.Errorf("no evaluation failed; the test wants the first trial step to fail")
			}
			if err := sir.Check(θ, 0.02); err != nil {
				t.Error(err)
			}
		})
	}
}

// The objective's errors: a failed solve is the solver's *Error; a wrong
// grad length is named.
func TestObjectiveErrors(t *testing.T) {
	obs, err := sir.Observations()
	if err != nil {
		t.Fatal(err)
	}
	gs, err := ode.NewGradientSolver(sir.Problem(sir.Start()), ode.Tsit5(), ode.ForwardSensitivity{}, ode.MaxSteps(200))
	if err != nil {
		t.Fatal(err)
	}
	obj := gs.Objective(context.Background(), sir.Loss(obs))
	if _, err := obj([]float32{0.3, 0.2}, make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "grad has length 3, want 2") {
		t.Errorf("error %v; want the grad length named", err)
	}
	_, err = obj([]float32{0.95, -0.56}, make([]float32, 2))
	var oe *ode.Error
	if !errors.As(err, &oe) || oe.Code != ode.MaxStepsReached {
		t.Fatalf("error %v; want an *ode.Error with MaxStepsReached", err)
	}
}

// The max-steps error does not only blame stiffness: a fit may have moved
// the parameters out of the region where the model is well behaved, and
// the error names their range. Before, it read "raise MaxSteps or check
// the problem for stiffness".
func TestMaxStepsNamesParameters(t *testing.T) {
	_, err := ode.Solve(context.Background(), sir.Problem([]float32{0.95, -0.56}), ode.Tsit5(), ode.MaxSteps(200))
	var oe *ode.Error
	if !errors.As(err, &oe) || oe.Code != ode.MaxStepsReached {
		t.Fatalf("error %v; want an *ode.Error with MaxStepsReached", err)
	}
	if want := (ode.ParamRange{N: 2, Min: -0.56, Max: 0.95}); oe.P != want {
		t.Errorf("P = %+v; want %+v", oe.P, want)
	}
	// Not only stiffness: the parameters may have left the region.
	for _, want := range []string{"may be stiff", "or its 2 parameters in [-0.56, 0.95] may have left the region where the model is well behaved"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// sirLayout names θ's two elements for the bounds and transforms by path.
func sirLayout(t *testing.T) *layout.Layout {
	t.Helper()
	lay, err := layout.NewBuilder().Add("beta", 1).Add("gamma", 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// The SIR fit with bounds (β ≥ 0, γ ∈ [0, 1]) by LBFGSB: the bound keeps
// every trial step where the solve succeeds, and the fit converges to
// within 2 % with every sensitivity method.
func TestSIRFitBounded(t *testing.T) {
	b, err := optimisers.BoundsByPath(sirLayout(t), map[string]optimisers.Interval{
		"beta":  {Lo: 0, Hi: math.Inf(1)},
		"gamma": {Lo: 0, Hi: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.DiscreteAdjoint{}} {
		t.Run(s.Name(), func(t *testing.T) {
			θ, _ := sirFit(t, ode.Tsit5(), s, &optimisers.LBFGSB{Bounds: b})
			if θ[1] < 0 || θ[1] > 1 || θ[0] < 0 {
				t.Errorf("θ = %v left the bounds", θ)
			}
			if err := sir.Check(θ, 0.02); err != nil {
				t.Error(err)
			}
		})
	}
}

// The SIR fit in log-rates: Positive on both, the default L-BFGS on the
// unconstrained z, the answer read back in the user's units.
func TestSIRFitPositive(t *testing.T) {
	tr, err := optimisers.TransformsByPath(sirLayout(t), map[string]optimisers.Transform{
		"beta": optimisers.Positive(), "gamma": optimisers.Positive(),
	})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := sir.Observations()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.DiscreteAdjoint{}} {
		t.Run(s.Name(), func(t *testing.T) {
			θ := sir.Start()
			gs, err := ode.NewGradientSolver(sir.Problem(θ), ode.Tsit5(), s, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatal(err)
			}
			z := make([]float32, len(θ))
			if err := tr.FromUser(z, θ); err != nil {
				t.Fatal(err)
			}
			res, err := optimisers.Minimize(tr.Wrap(gs.Objective(context.Background(), sir.Loss(obs))), z, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			if err := tr.ToUser(θ, z); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: θ = %v, status %v, %d evaluations", s.Name(), θ, res.Status, res.FuncEvaluations)
			if err := sir.Check(θ, 0.02); err != nil {
				t.Error(err)
			}
		})
	}
}
