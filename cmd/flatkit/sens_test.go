package main

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode"
)

// TestBenchSensQuick runs the sens scenario with tiny sample counts and
// checks that every sensitivity method has its figure, with a gradient
// within 1e-4 (relative, over dG/dp and dG/du0) of the reference, no
// allocation per gradient and its step counters; not the timings.
func TestBenchSensQuick(t *testing.T) {
	// 21 samples (≥ 21 gradients per figure) dilute the runtime's own
	// allocations below 1 per call; see the allocs check below.
	cases := runBench(t, []string{"-samples", "21", "sens"}, "fwd_steps", "bwd_steps")
	if want := len(sensSolvers) * (len(sensMethods) + 1); len(cases) != want {
		t.Errorf("%d figures, want %d", len(cases), want)
	}
	for _, sv := range sensSolvers {
		solve, ok := cases["Lotka-Volterra forward solve "+sv.name+", reused Integrator"]
		if !ok {
			t.Errorf("no figure for the %s forward solve", sv.name)
		} else if e, _ := solve["err_max_abs"].(float64); !(e < 1e-4) || solve["fwd_steps"].(float64) <= 0 {
			t.Errorf("%s forward solve: error %v, %v steps", sv.name, solve["err_max_abs"], solve["fwd_steps"])
		}
	}
	for i := range len(sensSolvers) * len(sensMethods) {
		sv, s := sensSolvers[i/len(sensMethods)], sensMethods[i%len(sensMethods)]
		name := "Lotka-Volterra gradient " + sv.name + ", " + sensName(s)
		m := figure(t, cases, name)
		if m == nil {
			continue
		}
		checkAtMost(t, name, m, "max_rel_err", 1e-4)
		checkAtMost(t, name, m, "value_rel_err", 1e-3)
		// The figure counts the whole process's allocations over a few
		// dozen calls, so in quick mode the runtime's own can show as a
		// fraction per call (up to 6 per figure: an M for a new OS thread
		// when ReadMemStats restarts the world, and a timer heap growing);
		// a gradient that allocated would show at least 1.
		// TestSensGradientAllocatesNothing pins the gradient itself at
		// exactly 0.
		if a := m["allocs"].(float64); a >= 1 {
			t.Errorf("%s: %v allocs per gradient, want 0", name, a)
		}
		if g, _ := m["grad"].([]any); len(g) != 6 {
			t.Errorf("%s: grad %v, want 6 numbers", name, m["grad"])
		}
		checkSensSteps(t, name, s, m)
	}
}

// TestSensGradientAllocatesNothing pins each method's warm gradient, as the
// scenario times it, and the forward solve at zero allocations, and checks
// the gradient against the reference.
func TestSensGradientAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	loss := sensLoss()
	for i := range len(sensSolvers) * len(sensMethods) {
		sv, s := sensSolvers[i/len(sensMethods)], sensMethods[i%len(sensMethods)]
		name := sv.name + ", " + sensName(s)
		gs, err := newSensSolver(sv.method, s)
		if err != nil {
			t.Fatal(err)
		}
		var g *ode.GradientResult[float64]
		grad := func() {
			if g, err = gs.Gradient(ctx, sensParams, loss); err != nil {
				t.Fatal(err)
			}
		}
		grad()
		if a := testing.AllocsPerRun(100, grad); a != 0 {
			t.Errorf("%s: %v allocations per gradient, want 0", name, a)
		}
		if e, _ := sensErrors(g); !(e <= 1e-4) {
			t.Errorf("%s: max relative error %.3g over dG/dp, dG/du0, want ≤ 1e-4", name, e)
		}
	}
	prob := sensProblem()
	it, err := ode.NewIntegrator(prob, ode.Tsit5(), ode.Tol(sensRTol, sensATol))
	if err != nil {
		t.Fatal(err)
	}
	solve := func() {
		if err := it.Reinit(prob.U0, prob.T0, prob.T1, prob.P); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	solve()
	if a := testing.AllocsPerRun(100, solve); a != 0 {
		t.Errorf("forward solve: %v allocations, want 0", a)
	}
}
