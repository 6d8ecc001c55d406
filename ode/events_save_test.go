package ode_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// A terminating event's time and state end the solution whatever SaveAt
// asks; the SaveAt times after it are not saved.
func TestTerminatingEventSaveAt(t *testing.T) {
	hit := bounceTimes(1, 1, 1)[0]
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P(), ode.BDF()} {
		ground := ode.Event[float64]{
			Cond:      func(u []float64, _ []float32, _ float64) float64 { return u[0] },
			Direction: -1,
			Effect:    func(u []float64, _ []float32, _ float64) bool { u[1] = 0; return true },
		}
		prob := ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 4, Events: []ode.Event[float64]{ground}}
		sol, err := ode.Solve(bg, prob, m, ode.Tol(1e-10, 1e-12), ode.SaveAt(0.1, 0.2, 1, 3))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if sol.Stats.Retcode != ode.Terminated || len(sol.T) != 3 || sol.T[0] != 0.1 || sol.T[1] != 0.2 || math.Abs(sol.T[2]-hit) > 1e-9 {
			t.Fatalf("%s: %v at %v, want Terminated at [0.1 0.2 %g]", m.Name(), sol.Stats.Retcode, sol.T, hit)
		}
		if u := sol.U[2]; math.Abs(u[0]) > 1e-9 || u[1] != 0 {
			t.Errorf("%s: last state %v, want [0 0], after the effect", m.Name(), u)
		}
		if u := sol.U[1]; math.Abs(u[0]-(1-gravity*0.02)) > 1e-9 {
			t.Errorf("%s: u(0.2) = %v, want h = %g", m.Name(), u, 1-gravity*0.02)
		}
	}

	// A schedule entry that terminates at a SaveAt time: the state before
	// it is saved there, and the one after it ends the solution.
	stop := ode.Schedule[float64]{Times: []float64{2}, Effect: func(u []float64, _ []float32, _ float64) bool { u[0] = -1; return true }}
	prob := decayDoses(nil)
	prob.Schedules = []ode.Schedule[float64]{stop}
	sol, err := ode.Solve(bg, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sol.T, []float64{1, 2, 2}) || relErr(sol.U[1][0], math.Exp(-1.5)) > 1e-8 || sol.U[2][0] != -1 {
		t.Errorf("terminated at a SaveAt time: %v %v, want [1 2 2], the state before and after", sol.T, sol.U)
	}
	// One that leaves the state as it was is not saved twice.
	prob.Schedules[0].Effect = func([]float64, []float32, float64) bool { return true }
	sol, err = ode.Solve(bg, prob, ode.Tsit5(), ode.SaveAt(1, 2, 3))
	if err != nil || !slices.Equal(sol.T, []float64{1, 2}) || sol.Stats.Retcode != ode.Terminated {
		t.Errorf("terminated without a change at a SaveAt time: %v %v, want [1 2]", err, sol.T)
	}
	// SaveEveryStep saves the point before and after the effect, as for
	// every event, and finishing adds no third.
	sol, err = ode.Solve(bg, prob, ode.Tsit5(), ode.SaveEveryStep())
	if n := len(sol.T); err != nil || sol.T[n-1] != 2 || sol.T[n-2] != 2 || sol.T[n-3] == 2 {
		t.Errorf("SaveEveryStep: %v ends %v, want two points at 2", err, sol.T[max(0, n-3):])
	}
}
