package ode_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// float32 state: the arithmetic is float32, the error norm float64; the
// accuracy is that of float32 (≈1e-6 relative at best).
func lotkaVolterra32(du, u []float32, _ []float32, _ float64) {
	du[0] = 1.5*u[0] - u[0]*u[1]
	du[1] = -3*u[1] + u[0]*u[1]
}

func TestFloat32State(t *testing.T) {
	ref := refProblems[0].ref
	for _, c := range []struct {
		m    ode.Method
		opts []ode.SolveOption
		tol  float64
	}{
		{ode.Tsit5(), []ode.SolveOption{ode.Tol(1e-5, 1e-7)}, 2e-4},
		{ode.BS3(), []ode.SolveOption{ode.Tol(1e-4, 1e-6)}, 2e-3},
		{ode.Vern7(), []ode.SolveOption{ode.Tol(1e-5, 1e-7), ode.Dense()}, 2e-4},
		{ode.RK4(), []ode.SolveOption{ode.FixedStep(0.01)}, 2e-4},
	} {
		prob := ode.Problem[float32]{F: lotkaVolterra32, U0: []float32{1, 1}, T1: 10}
		sol, err := ode.Solve(bg, prob, c.m, c.opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.m.Name(), err)
		}
		u := sol.U[len(sol.U)-1]
		e := math.Max(math.Abs(float64(u[0])-ref[0]), math.Abs(float64(u[1])-ref[1]))
		t.Logf("%s float32: error %.3g in %d steps", c.m.Name(), e, sol.Stats.Accepted)
		if e > c.tol {
			t.Errorf("%s float32: error %.3g > %g", c.m.Name(), e, c.tol)
		}
	}
	// events and SaveAt work on float32 too
	type f32 float32 // a defined type on float32 is a Float
	var hit float64
	ev := ode.Event[f32]{G: func(u []f32, _ float64) float64 { return float64(u[0]) - 2 }, Direction: 1,
		Affect: func(_ []f32, t float64) bool { hit = t; return true }}
	prob := ode.Problem[f32]{F: func(du, u []f32, _ []float32, _ float64) { du[0] = u[0] }, U0: []f32{1}, T1: 2, Events: []ode.Event[f32]{ev}}
	sol, err := ode.Solve(bg, prob, ode.Tsit5(), ode.Tol(1e-5, 1e-7))
	if err != nil || sol.Stats.Retcode != ode.Terminated || math.Abs(hit-math.Ln2) > 1e-5 {
		t.Errorf("float32 event: %v %v at %v, want Terminated at ln 2", err, sol.Stats.Retcode, hit)
	}
}

func TestReinitMatchesSolve(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	opts := []ode.SolveOption{ode.Tol(1e-7, 1e-9), ode.SaveAt(1, 2, 3), ode.Dense()}
	it, err := ode.NewIntegrator(prob, ode.Tsit5(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, u0 := range [][]float64{{1, 1}, {1.5, 0.5}, {1, 1}, {2, 3}} {
		for _, span := range [][2]float64{{0, 10}, {0, 5}} {
			if err := it.Reinit(u0, span[0], span[1], nil); err != nil {
				t.Fatal(err)
			}
			if err := it.Run(bg); err != nil {
				t.Fatal(err)
			}
			p := prob
			p.U0, p.T1 = u0, span[1]
			sol, err := ode.Solve(bg, p, ode.Tsit5(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			ts, us := it.Saved()
			end, _ := sol.At(span[1])
			if !slices.Equal(ts, sol.T) || it.Stats() != sol.Stats || maxAbsDiff(it.U(), end) > 1e-13 {
				t.Fatalf("run %d: Reinit+Run %v %v %+v differs from Solve %v %v %+v", i, ts, it.U(), it.Stats(), sol.T, end, sol.Stats)
			}
			for k := range us {
				if !slices.Equal(us[k], sol.U[k]) {
					t.Fatalf("run %d: saved state %d %v, Solve %v", i, k, us[k], sol.U[k])
				}
			}
			if it.T() != span[1] {
				t.Fatalf("T() = %v", it.T())
			}
		}
	}
	if err := it.Reinit([]float64{1}, 0, 1, nil); err == nil {
		t.Error("Reinit with the wrong length: no error")
	}
}

func TestReinitProblemAndParameters(t *testing.T) {
	// parameters come from the flat float32 buffer (lvF reads p)
	θ := []float32{1.5, 1, 3, 1}
	prob := ode.Problem[float64]{F: lvF, U0: []float64{1, 1}, T1: 10, P: θ}
	it, err := ode.NewIntegrator(prob, ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	if err := it.Run(bg); err != nil {
		t.Fatal(err)
	}
	if w := weightedErr(it.U(), refProblems[0].ref, 1e-6, 1e-8); w > accuracyBound {
		t.Errorf("parameterised LV: weighted error %.3g", w)
	}
	// a different F, with an event, in the same integrator
	var hits int
	p2 := ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 4, Events: []ode.Event[float64]{{
		G: func(u []float64, _ float64) float64 { return u[0] }, Direction: -1,
		Affect: func(u []float64, _ float64) bool { hits++; u[1] = -0.9 * u[1]; return false }}}}
	if err := it.ReinitProblem(p2); err != nil {
		t.Fatal(err)
	}
	if err := it.Run(bg); err != nil || hits != 6 {
		t.Fatalf("ReinitProblem with events: %v, %d bounces", err, hits)
	}
	if err := it.ReinitProblem(ode.Problem[float64]{F: fall, U0: []float64{1}, T1: 1}); err == nil {
		t.Error("ReinitProblem with another dimension: no error")
	}
}

func TestStepByStepAndAtInto(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	it, err := ode.NewIntegrator(prob, ode.DP5())
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, 2)
	if err := it.AtInto(dst, 0); err == nil {
		t.Error("AtInto before a step: no error")
	}
	prev := 0.0
	for !it.Done() {
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
		mid := (prev + it.T()) / 2
		if err := it.AtInto(dst, mid); err != nil {
			t.Fatal(err)
		}
		if err := it.AtInto(dst, it.T()+1); err == nil {
			t.Fatal("AtInto past the step: no error")
		}
		prev = it.T()
	}
	sol, _ := ode.Solve(bg, prob, ode.DP5())
	if !slices.Equal(it.U(), sol.U[1]) {
		t.Errorf("stepping by hand ends at %v, Solve at %v", it.U(), sol.U[1])
	}
}

// Zero allocations per solve once warm, for the plain solve, SaveAt,
// SaveEveryStep, Dense, events and every method.
func TestIntegratorAllocatesNothing(t *testing.T) {
	ball := []ode.Event[float64]{{G: func(u []float64, _ float64) float64 { return u[0] }, Direction: -1,
		Affect: func(u []float64, _ float64) bool { u[1] = -0.9 * u[1]; return false }}}
	cases := []struct {
		name string
		prob ode.Problem[float64]
		m    ode.Method
		opts []ode.SolveOption
	}{
		{"Tsit5", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.Tsit5(), []ode.SolveOption{ode.Tol(1e-6, 1e-8)}},
		{"DP5 SaveAt", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.DP5(), []ode.SolveOption{ode.SaveAt(1, 2, 3, 4.5)}},
		{"BS3 every step", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.BS3(), []ode.SolveOption{ode.SaveEveryStep()}},
		{"Vern7 dense", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.Vern7(), []ode.SolveOption{ode.Dense(), ode.TStops(5)}},
		{"RK4", ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.RK4(), []ode.SolveOption{ode.FixedStep(0.01)}},
		{"Tsit5 events", ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 4, Events: ball}, ode.Tsit5(), nil},
	}
	for _, c := range cases {
		it, err := ode.NewIntegrator(c.prob, c.m, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		u0 := c.prob.U0
		run := func() {
			if err := it.Reinit(u0, c.prob.T0, c.prob.T1, nil); err != nil {
				t.Fatal(err)
			}
			if err := it.Run(bg); err != nil {
				t.Fatal(err)
			}
		}
		run() // warm: grow the output buffers once
		if a := testing.AllocsPerRun(20, run); a != 0 {
			t.Errorf("%s: Reinit+Run allocates %v times per solve", c.name, a)
		}
	}
	// a cancellable context is checked without allocating
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	it, _ := ode.NewIntegrator(cases[0].prob, ode.Tsit5())
	run := func() {
		_ = it.Reinit([]float64{1, 1}, 0, 10, nil)
		if err := it.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("Run with a cancellable context allocates %v times per solve", a)
	}
}

// One Method value shared by many goroutines, each with its own
// integrator: run under -race.
func TestConcurrentSolves(t *testing.T) {
	var wg sync.WaitGroup
	results := make([][]float64, 8)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sol, err := ode.Solve(bg, ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, ode.Tsit5(), ode.Dense())
			if err != nil {
				t.Error(err)
				return
			}
			results[g] = sol.U[1]
		}()
	}
	wg.Wait()
	for g := range results {
		if !slices.Equal(results[g], results[0]) {
			t.Errorf("goroutine %d: %v, goroutine 0: %v", g, results[g], results[0])
		}
	}
}
