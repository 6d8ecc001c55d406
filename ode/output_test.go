package ode_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

var bg = context.Background()

// lvAt returns the Lotka-Volterra solution at t from a Vern7 solve at
// 1e-13 that ends exactly at t (no interpolation involved).
func lvAt(t *testing.T, at float64) []float64 {
	t.Helper()
	if at == 0 {
		return []float64{1, 1}
	}
	sol, err := ode.Solve(bg, ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: at}, ode.Vern7(), ode.Tol(1e-13, 1e-15))
	if err != nil {
		t.Fatal(err)
	}
	return sol.U[len(sol.U)-1]
}

func TestSaveAtThroughInterpolant(t *testing.T) {
	ts := []float64{9.9, 0, 0.5, 1.7, 3.3, 5, 7.25, 10} // unordered on purpose
	want := slices.Clone(ts)
	slices.Sort(want)
	refs := make([][]float64, len(want))
	for i, s := range want {
		refs[i] = lvAt(t, s)
	}
	const rtol, atol = 1e-6, 1e-8
	for _, m := range []ode.Method{ode.Tsit5(), ode.DP5(), ode.BS3(), ode.Vern7()} {
		prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
		plain, err := ode.Solve(bg, prob, m, ode.Tol(rtol, atol))
		if err != nil {
			t.Fatal(err)
		}
		sol, err := ode.Solve(bg, prob, m, ode.Tol(rtol, atol), ode.SaveAt(ts...))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sol.T, want) {
			t.Fatalf("%s: saved times %v, want %v", m.Name(), sol.T, want)
		}
		// SaveAt never changes the steps.
		if sol.Stats.Accepted != plain.Stats.Accepted || sol.Stats.Rejected != plain.Stats.Rejected {
			t.Errorf("%s: SaveAt changed the steps: %+v vs %+v", m.Name(), sol.Stats, plain.Stats)
		}
		if !slices.Equal(sol.U[len(sol.U)-1], plain.U[1]) {
			t.Errorf("%s: final state with SaveAt %v differs from %v", m.Name(), sol.U[len(sol.U)-1], plain.U[1])
		}
		worst := 0.0
		for i := range want {
			worst = max(worst, weightedErr(sol.U[i], refs[i], rtol, atol))
		}
		t.Logf("%s: worst weighted error over SaveAt points %.3g", m.Name(), worst)
		if worst > accuracyBound {
			t.Errorf("%s: SaveAt weighted error %.3g > %d", m.Name(), worst, accuracyBound)
		}
	}
}

func TestDenseAt(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	const rtol, atol = 1e-8, 1e-10
	for _, m := range []ode.Method{ode.Tsit5(), ode.DP5(), ode.Vern7(), ode.BS3()} {
		sol, err := ode.Solve(bg, prob, m, ode.Tol(rtol, atol), ode.Dense())
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for k := 0; k <= 40; k++ {
			s := 0.25 * float64(k)
			u, err := sol.At(s)
			if err != nil {
				t.Fatal(err)
			}
			worst = max(worst, weightedErr(u, lvAt(t, s), rtol, atol))
		}
		t.Logf("%s: worst weighted error of At over 41 points %.3g", m.Name(), worst)
		if worst > accuracyBound {
			t.Errorf("%s: At weighted error %.3g > %d", m.Name(), worst, accuracyBound)
		}
		// At the ends At is the saved state itself (up to the interpolant's rounding).
		u0, _ := sol.At(0)
		u1, _ := sol.At(10)
		if maxAbsDiff(u0, []float64{1, 1}) > 1e-15 || maxAbsDiff(u1, sol.U[1]) > 1e-12 {
			t.Errorf("%s: At(0) = %v, At(10) = %v, want %v and %v", m.Name(), u0, u1, []float64{1, 1}, sol.U[1])
		}
		for _, bad := range []float64{-0.1, 10.5, math.NaN()} {
			if _, err := sol.At(bad); err == nil {
				t.Errorf("%s: At(%g) outside the span: no error", m.Name(), bad)
			}
		}
		dst := make([]float64, 2)
		if allocs := testing.AllocsPerRun(100, func() { _ = sol.AtInto(dst, 3.3) }); allocs != 0 {
			t.Errorf("AtInto allocates %v", allocs)
		}
	}
	sol, _ := ode.Solve(bg, prob, ode.Tsit5())
	if _, err := sol.At(1); err == nil {
		t.Error("At without Dense(): no error")
	}
}

func TestTStopsLandExactly(t *testing.T) {
	stops := []float64{7.123456789, 2.5, -1, 15, 0.1 + 0.2} // two outside the span
	cases := []struct {
		m        ode.Method
		opt      ode.Option
		adaptive bool
	}{
		{ode.Tsit5(), ode.Tol(1e-6, 1e-8), true},
		{ode.Vern7(), ode.Tol(1e-6, 1e-8), true},
		{ode.Tsit5(), ode.FixedStep(0.37), false},
		{ode.RK4(), ode.FixedStep(0.37), false},
	}
	for _, c := range cases {
		prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
		sol, err := ode.Solve(bg, prob, c.m, c.opt, ode.TStops(stops...), ode.SaveEveryStep())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []float64{0.1 + 0.2, 2.5, 7.123456789, 10} {
			if !slices.Contains(sol.T, s) {
				t.Errorf("%s: step ends %v miss the stop %v", c.m.Name(), sol.T, s)
			}
		}
		if !slices.IsSorted(sol.T) || sol.T[0] != 0 || sol.T[len(sol.T)-1] != 10 {
			t.Errorf("%s: step ends not increasing from 0 to 10: %v", c.m.Name(), sol.T)
		}
		if w := weightedErr(sol.U[len(sol.U)-1], refProblems[0].ref, 1e-6, 1e-8); c.adaptive && w > accuracyBound {
			t.Errorf("%s: final weighted error %.3g", c.m.Name(), w)
		}
	}
}

func TestSaveEveryStep(t *testing.T) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	sol, err := ode.Solve(bg, prob, ode.Tsit5(), ode.SaveEveryStep())
	if err != nil {
		t.Fatal(err)
	}
	if len(sol.T) != sol.Stats.Accepted+1 || len(sol.U) != len(sol.T) {
		t.Fatalf("%d points for %d steps", len(sol.T), sol.Stats.Accepted)
	}
	for i := 1; i < len(sol.T); i++ {
		if !(sol.T[i] > sol.T[i-1]) {
			t.Fatalf("times not increasing at %d: %v", i, sol.T[i-1:i+1])
		}
	}
	if sol.T[len(sol.T)-1] != 10 {
		t.Errorf("last time %v", sol.T[len(sol.T)-1])
	}
	// every saved state is the state of an accepted step: restarting from
	// any of them to the end agrees with the reference.
	if w := weightedErr(sol.U[len(sol.U)-1], refProblems[0].ref, 1e-6, 1e-8); w > accuracyBound {
		t.Errorf("final weighted error %.3g", w)
	}
}

func TestBackwardInTime(t *testing.T) {
	p := refProblems[0]
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7()} {
		prob := ode.Problem[float64]{F: p.f, U0: p.ref, T0: 10, T1: 0}
		sol, err := ode.Solve(bg, prob, m, ode.Tol(1e-10, 1e-12), ode.SaveAt(5, 0), ode.Dense(), ode.TStops(2.5))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sol.T, []float64{5, 0}) {
			t.Fatalf("%s: saved times %v, want [5 0]", m.Name(), sol.T)
		}
		if e := maxAbsDiff(sol.U[1], []float64{1, 1}); e > 1e-7 {
			t.Errorf("%s: backwards to 0 gives %v, want [1 1] (error %.3g)", m.Name(), sol.U[1], e)
		}
		u5, err := sol.At(5)
		if err != nil {
			t.Fatal(err)
		}
		if e := maxAbsDiff(u5, lvAt(t, 5)); e > 1e-7 {
			t.Errorf("%s: At(5) off by %.3g", m.Name(), e)
		}
		if _, err := sol.At(10.5); err == nil {
			t.Errorf("%s: At outside a backward span: no error", m.Name())
		}
	}
}

func TestEmptySpan(t *testing.T) {
	sol, err := ode.Solve(bg, ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 2}, T0: 3, T1: 3}, ode.Tsit5(), ode.Dense())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sol.T, []float64{3, 3}) || sol.Stats.Retcode != ode.Success || sol.Stats.FEvals != 0 {
		t.Fatalf("empty span: %v %+v", sol.T, sol.Stats)
	}
	u, err := sol.At(3)
	if err != nil || !slices.Equal(u, []float64{1, 2}) {
		t.Fatalf("At(3) = %v, %v", u, err)
	}
}
