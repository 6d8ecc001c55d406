package ode_test

import (
	"context"
	"fmt"

	"github.com/flatkit/flatkit/ode"
)

// A rate that switches at an event. An effect must not write into the
// parameters, so the switch is kept in the state: a component s with
// zero derivative that F reads and the effect sets. Here x' = −a,
// y' = b·s, s' = 0 from (1, 0, 1); when x reaches 0, at t = 1/a, s becomes
// 0 and y stops at b/a. The condition and the effect see the parameters
// (a, b); the effect changes only the state.
func ExampleEvent_switch() {
	f := func(du, u []float64, p []float32, _ float64) {
		a, b := float64(p[0]), float64(p[1])
		du[0] = -a
		du[1] = b * u[2]
		du[2] = 0 // the switch
	}
	off := ode.Event[float64]{
		Cond:      func(u []float64, _ []float32, _ float64) float64 { return u[0] },
		Direction: -1,
		Effect: func(u []float64, _ []float32, _ float64) bool {
			u[2] = 0 // b·s becomes 0 for the rest of the solve
			return false
		},
	}
	prob := ode.Problem[float64]{F: f, U0: []float64{1, 0, 1}, T1: 1, P: []float32{2, 1},
		Events: []ode.Event[float64]{off}}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P(), ode.BDF()} {
		sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-10, 1e-12))
		if err != nil {
			fmt.Println(err)
			return
		}
		y := sol.U[len(sol.U)-1][1]
		fmt.Printf("%s: y(1) = %.10f (b/a = 0.5)\n", m.Name(), y)
	}
	// Output:
	// Tsit5: y(1) = 0.5000000000 (b/a = 0.5)
	// Rodas5P: y(1) = 0.5000000000 (b/a = 0.5)
	// BDF: y(1) = 0.5000000000 (b/a = 0.5)
}

// A dosing schedule: u' = −k·u with a dose D added at t = 1, 2 and 3,
// exactly at those times and without root finding. The dose is a
// parameter, so that it can be fitted.
func ExampleSchedule() {
	prob := ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, _ float64) { du[0] = -float64(p[0]) * u[0] },
		U0: []float64{0}, T1: 4, P: []float32{0.5, 10},
		Schedules: []ode.Schedule[float64]{{
			Times: []float64{1, 2, 3},
			Effect: func(u []float64, p []float32, _ float64) bool {
				u[0] += float64(p[1])
				return false
			},
		}},
	}
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(1, 2, 3, 4), ode.Dense())
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, t := range sol.T {
		after, _ := sol.At(t)
		fmt.Printf("t=%g  before %.6f  after %.6f\n", t, sol.U[i][0], after[0])
	}
	// Output:
	// t=1  before 0.000000  after 10.000000
	// t=2  before 6.065307  after 16.065307
	// t=3  before 9.744101  after 19.744101
	// t=4  before 11.975403  after 11.975403
}
