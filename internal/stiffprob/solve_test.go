package stiffprob_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// solveSegments solves prob's segments one after the other with m, each
// from the state the last left, and returns the final state.
func solveSegments(t *testing.T, f func(du, u []float64, p []float32, t float64), jac func(J, u []float64, p []float32, t float64),
	u0 []float64, segs []stiffprob.Segment, m ode.Method, rtol, atol float64) []float64 {
	t.Helper()
	u := u0
	for _, s := range segs {
		prob := ode.Problem[float64]{F: f, Jac: jac, U0: u, T0: s.T0, T1: s.T1, P: s.P}
		sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(rtol, atol))
		if err != nil {
			t.Fatalf("segment [%g, %g]: %v", s.T0, s.T1, err)
		}
		u = sol.U[len(sol.U)-1]
	}
	return u
}

// TestPolluReference solves POLLU with Rodas5P and checks y(60) against
// the Test Set's reference solution.
func TestPolluReference(t *testing.T) {
	var p stiffprob.Pollu[float64]
	u := solveSegments(t, p.F, nil, p.U0(), p.Segments(), ode.Rodas5P(), 1e-10, 1e-14)
	for i, want := range stiffprob.PolluRef {
		if e := math.Abs(u[i] - want); e > 1e-7*math.Abs(want)+1e-13 {
			t.Errorf("y%d(60) = %.16g, reference %.16g", i+1, u[i], want)
		}
	}
}

// TestMedakzoSegments checks that solving MEDAKZO in its two segments, φ
// passed in p, agrees with one solve on [0, 20] that lands on t = 5 and
// takes φ from t.
func TestMedakzoSegments(t *testing.T) {
	m := stiffprob.Medakzo[float64]{N: 20}
	u := solveSegments(t, m.F, m.Jac, m.U0(), m.Segments(), ode.Rodas5P(), 1e-9, 1e-12)
	prob := ode.Problem[float64]{F: m.F, Jac: m.Jac, U0: m.U0(), T0: 0, T1: 20}
	sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-9, 1e-12), ode.TStops(5))
	if err != nil {
		t.Fatal(err)
	}
	w := sol.U[len(sol.U)-1]
	for i := range u {
		if math.Abs(u[i]-w[i]) > 1e-6*math.Abs(w[i])+1e-9 {
			t.Errorf("u[%d](20): %.12g in two segments, %.12g in one", i, u[i], w[i])
		}
	}
}
