package ode_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/sir"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"github.com/flatkit/flatkit/optimisers"
)

// sirSwitchThreshold is the level of I whose first crossing halves β.
const sirSwitchThreshold = 0.2

// sirSwitch is the SIR intervention of issue 29 as a new user writes it
// with odead: the state is (S, I, R, s), where s, the switch, has zero
// derivative and multiplies β; the event halves s when I rises through
// 0.2. θ = (β, γ).
func sirSwitch(t *testing.T, θ []float32) ode.Problem[float64] {
	t.Helper()
	f := func(u, p ad.Var, _ float64) ad.Var {
		S, I, s := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 3, 4)
		inf := ad.Mul(ad.Mul(ad.Mul(ad.Slice(p, 0, 1), s), S), I)
		rec := ad.Mul(ad.Slice(p, 1, 2), I)
		return ad.Concat(0, ad.Neg(inf), ad.Sub(inf, rec), rec, ad.Scale(s, 0))
	}
	prob, err := odead.Problem(f, []float64{sir.S0, sir.I0, 0, 1}, 0, sir.T1, θ)
	if err != nil {
		t.Fatal(err)
	}
	cond := func(u, _, _ ad.Var) ad.Var { return ad.Sub(ad.Slice(u, 1, 2), ad.ScalarLike(u, sirSwitchThreshold)) }
	halve := func(u, _, _ ad.Var) ad.Var { return ad.Concat(0, ad.Slice(u, 0, 3), ad.Scale(ad.Slice(u, 3, 4), 0.5)) }
	if err := odead.AddEvent(&prob, cond, halve, odead.Direction(+1)); err != nil {
		t.Fatal(err)
	}
	return prob
}

// sirSwitchObservations are I of the true model at sir.Times with
// Gaussian noise of σ = sir.Sigma from a fixed seed.
func sirSwitchObservations(t *testing.T) []float64 {
	t.Helper()
	sol, err := ode.Solve(context.Background(), sirSwitch(t, []float32{sir.Beta, sir.Gamma}), ode.Tsit5(),
		ode.Tol(1e-10, 1e-12), ode.SaveAt(sir.Times()...))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(sir.Seed, 29))
	obs := make([]float64, sir.N)
	for i, u := range sol.U {
		obs[i] = u[1] + sir.Sigma*rng.NormFloat64()
	}
	return obs
}

// The SIR intervention (issue 29): β halved for the rest of the solve when
// I first crosses 0.2. β and γ are fitted to 30 noisy observations of I by
// L-BFGS with gradients through the event from each sensitivity method, to
// within 2 % of (0.5, 0.1). The event fires at the true rates; the fit's
// path crosses parameters where it does not (γ < 0 at the first trial
// step, where the solve fails and Minimize steps back).
// MaxSteps(5000) bounds the cost of the first trial step's failed solve.
func TestSIRSwitchFit(t *testing.T) {
	obs := sirSwitchObservations(t)
	for _, c := range []struct {
		name string
		m    ode.Method
		s    ode.Sensitivity
	}{
		{"ForwardSensitivity", ode.Tsit5(), ode.ForwardSensitivity{}},
		{"InterpolatingAdjoint", ode.Tsit5(), ode.InterpolatingAdjoint{}},
		{"InterpolatingAdjoint/Checkpoints", ode.Tsit5(), ode.InterpolatingAdjoint{Checkpoints: 8}},
		{"DiscreteAdjoint", ode.Tsit5(), ode.DiscreteAdjoint{}},
		{"ForwardSensitivity/Rodas5P", ode.Rodas5P(), ode.ForwardSensitivity{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			θ := sir.Start()
			gs, err := ode.NewGradientSolver(sirSwitch(t, θ), c.m, c.s, ode.Tol(1e-8, 1e-10), ode.MaxSteps(5000))
			if err != nil {
				t.Fatal(err)
			}
			obj := gs.Objective(context.Background(), sir.Loss(obs))
			res, err := optimisers.Minimize(obj, θ, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			t.Logf("%s: θ = %v, status %v, %d evaluations", c.name, θ, res.Status, res.FuncEvaluations)
			if err := sir.Check(θ, 0.02); err != nil {
				t.Error(err)
			}
		})
	}
}

// The event fires once at the true rates, where I rises through 0.2, and
// the intervention changes the epidemic's course: the check that the
// fit's data hold the event.
func TestSIRSwitchFires(t *testing.T) {
	prob := sirSwitch(t, []float32{sir.Beta, sir.Gamma})
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	if s := sol.U[len(sol.U)-1][3]; s != 0.5 {
		t.Errorf("the switch s(60) = %v, want 0.5 (one firing)", s)
	}
	prob.Events = nil
	plain, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	// Without the intervention R(60), the epidemic's size, is larger.
	if a, b := sol.U[len(sol.U)-1][2], plain.U[len(plain.U)-1][2]; !(a < b-0.05) {
		t.Errorf("R(60) = %.4f with the intervention, %.4f without; want it smaller by more than 0.05", a, b)
	}
}
