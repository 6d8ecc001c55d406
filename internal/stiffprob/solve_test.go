package stiffprob_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
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

// TestBruss2DSegmentUnforced checks that the first segment of Bruss2D,
// [0, 1.1], is solved without the forcing that starts at t = 1.1. BDF's step
// that lands on T1 = 1.1 evaluates F there; with the forcing taken from t
// alone, that step added it, an error of about 5·h in the disc that the
// GMRES case of the stiff benchmark carried into the second segment. The
// solve must equal, bit for bit, one whose F never sees t = 1.1.
func TestBruss2DSegmentUnforced(t *testing.T) {
	b := stiffprob.NewBruss2D[float64](8)
	seg := b.Segments()[0]
	before := math.Nextafter(seg.T1, 0)
	unforced := func(du, u []float64, _ []float32, t float64) { b.F(du, u, nil, min(t, before)) }
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		got := solveSegments(t, b.F, nil, b.U0(), []stiffprob.Segment{seg}, m, 1e-4, 1e-6)
		want := solveSegments(t, unforced, nil, b.U0(), []stiffprob.Segment{seg}, m, 1e-4, 1e-6)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: state %d at t = 1.1 is %.17g, want %.17g as without the forcing (%.3g apart)",
					m.Name(), i, got[i], want[i], got[i]-want[i])
			}
		}
	}
}

// TestPatternsProbed checks the declared patterns and bands against
// ode's probing of F: each pattern is exactly the one probed, and
// CheckStructure accepts the bands.
func TestPatternsProbed(t *testing.T) {
	b1, b2 := stiffprob.NewBruss1D[float64](9), stiffprob.NewBruss2D[float64](6)
	for _, c := range []struct {
		name string
		prob ode.Problem[float64]
		want *linalg.Pattern
	}{
		{"Bruss1D", ode.Problem[float64]{F: b1.F, U0: b1.U0(), T1: 10}, b1.Pattern()},
		{"Bruss2D", ode.Problem[float64]{F: b2.F, U0: b2.U0(), T1: 11.5}, b2.Pattern()},
	} {
		got, err := ode.ProbePattern(c.prob)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got.RowPtr, c.want.RowPtr) || !slices.Equal(got.ColIdx, c.want.ColIdx) {
			t.Errorf("%s: probed pattern of %d entries differs from the declared one of %d", c.name, got.NNZ(), c.want.NNZ())
		}
		c.prob.JacStructure = ode.SparseJacobian{Pattern: c.want}
		if err := ode.CheckStructure(c.prob); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	m := stiffprob.Medakzo[float64]{N: 8}
	for _, prob := range []ode.Problem[float64]{
		{F: b1.F, U0: b1.U0(), T1: 10, JacStructure: ode.BandJacobian{Lower: 2, Upper: 2}},
		{F: m.F, U0: m.U0(), T1: 20, P: []float32{2}, JacStructure: ode.BandJacobian{Lower: 2, Upper: 2}},
	} {
		if err := ode.CheckStructure(prob); err != nil {
			t.Error(err)
		}
	}
}
