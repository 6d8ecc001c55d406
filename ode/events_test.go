package ode_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

const gravity = 9.81

func fall(du, u []float64, _ []float32, _ float64) {
	du[0] = u[1]
	du[1] = -gravity
}

// bounceTimes are the analytic ground hits of a ball dropped from height x0
// with restitution r.
func bounceTimes(x0, r float64, n int) []float64 {
	t := math.Sqrt(2 * x0 / gravity)
	v := gravity * t
	ts := []float64{t}
	for k := 1; k < n; k++ {
		v *= r
		t += 2 * v / gravity
		ts = append(ts, t)
	}
	return ts
}

func TestBouncingBall(t *testing.T) {
	want := bounceTimes(1, 0.9, 6)
	for _, dir := range []int{-1, 0} {
		for _, m := range []ode.Method{ode.Tsit5(), ode.DP5(), ode.Vern7(), ode.BS3()} {
			var hits []float64
			ball := ode.Event[float64]{
				G:         func(u []float64, _ float64) float64 { return u[0] },
				Direction: dir,
				Affect: func(u []float64, t float64) bool {
					hits = append(hits, t)
					u[1] = -0.9 * u[1]
					return false
				},
			}
			prob := ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 4, Events: []ode.Event[float64]{ball}}
			sol, err := ode.Solve(bg, prob, m, ode.SaveEveryStep(), ode.Dense())
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != len(want) {
				t.Fatalf("%s dir %d: %d bounces at %v, want %v", m.Name(), dir, len(hits), hits, want)
			}
			for k := range want {
				// The flight is a parabola, which every method and interpolant
				// reproduces exactly: the times are exact to rounding.
				if d := math.Abs(hits[k] - want[k]); d > 1e-11 {
					t.Errorf("%s dir %d: bounce %d at %.16g, want %.16g (off by %.2g)", m.Name(), dir, k, hits[k], want[k], d)
				}
			}
			// the state at an event is saved before and after Affect
			i := slices.Index(sol.T, hits[0])
			if i < 0 || sol.T[i+1] != hits[0] || !(sol.U[i][1] < 0 && sol.U[i+1][1] > 0) || math.Abs(sol.U[i][0]) > 1e-12 {
				t.Errorf("%s: around the first bounce saved %v %v", m.Name(), sol.T[max(i, 0):max(i, 0)+2], sol.U[max(i, 0):max(i, 0)+2])
			}
			// At is right-continuous at the event: the state after Affect.
			if u, _ := sol.At(hits[0]); u[1] < 0 {
				t.Errorf("%s: At(event) = %v, want the state after the bounce", m.Name(), u)
			}
			if sol.Stats.Retcode != ode.Success || sol.T[len(sol.T)-1] != 4 {
				t.Errorf("%s: %v ending at %v", m.Name(), sol.Stats.Retcode, sol.T[len(sol.T)-1])
			}
		}
	}
}

func TestEventTerminates(t *testing.T) {
	hit := bounceTimes(1, 1, 1)[0]
	ground := ode.Event[float64]{G: func(u []float64, _ float64) float64 { return u[0] }} // nil Affect: stop
	prob := ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 4, Events: []ode.Event[float64]{ground}}
	sol, err := ode.Solve(bg, prob, ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	if sol.Stats.Retcode != ode.Terminated || len(sol.T) != 2 || math.Abs(sol.T[1]-hit) > 1e-12 {
		t.Fatalf("terminated solve: %v at %v, want Terminated at %v", sol.Stats.Retcode, sol.T, hit)
	}
	if u := sol.U[1]; math.Abs(u[0]) > 1e-12 || math.Abs(u[1]+gravity*hit) > 1e-9 {
		t.Errorf("state at the ground %v, want [0 %g]", u, -gravity*hit)
	}
	// Affect can modify the state and then terminate.
	prob.Events[0].Affect = func(u []float64, _ float64) bool { u[1] = 0; return true }
	sol, err = ode.Solve(bg, prob, ode.Tsit5(), ode.SaveEveryStep())
	if err != nil || sol.Stats.Retcode != ode.Terminated {
		t.Fatal(err, sol.Stats.Retcode)
	}
	if last := sol.U[len(sol.U)-1]; last[1] != 0 {
		t.Errorf("final state %v, want the state after Affect", last)
	}
}

// sin(t) on [0, 10] falls through 0 at π and 3π and rises at 2π; it is
// exactly 0 at t0, which is not an event.
func TestEventDirection(t *testing.T) {
	clock := func(du, _ []float64, _ []float32, _ float64) { du[0] = 1 }
	for _, c := range []struct {
		dir  int
		want []float64
	}{
		{0, []float64{math.Pi, 2 * math.Pi, 3 * math.Pi}},
		{+1, []float64{2 * math.Pi}},
		{-1, []float64{math.Pi, 3 * math.Pi}},
	} {
		var got []float64
		ev := ode.Event[float64]{
			G:         func(_ []float64, t float64) float64 { return math.Sin(t) },
			Direction: c.dir,
			Affect:    func(_ []float64, t float64) bool { got = append(got, t); return false },
		}
		prob := ode.Problem[float64]{F: clock, U0: []float64{0}, T1: 10, Events: []ode.Event[float64]{ev}}
		if _, err := ode.Solve(bg, prob, ode.Tsit5(), ode.Tol(1e-8, 1e-10)); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("direction %+d: events at %v, want %v", c.dir, got, c.want)
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-8 {
				t.Errorf("direction %+d: event %d at %.12g, want %.12g", c.dir, i, got[i], c.want[i])
			}
		}
	}
}

func TestEventsOrderAndStepEnds(t *testing.T) {
	clock := func(du, _ []float64, _ []float32, _ float64) { du[0] = 1 }
	var got []string
	mk := func(name string, at float64) ode.Event[float64] {
		return ode.Event[float64]{
			G:      func(u []float64, _ float64) float64 { return u[0] - at },
			Affect: func(_ []float64, t float64) bool { got = append(got, name); return false },
		}
	}
	// two events inside one fixed step fire in time order; an event exactly
	// at a step end (a TStop) fires once.
	prob := ode.Problem[float64]{F: clock, U0: []float64{0}, T1: 4,
		Events: []ode.Event[float64]{mk("1.5", 1.5), mk("1.2", 1.2), mk("3", 3)}}
	sol, err := ode.Solve(bg, prob, ode.RK4(), ode.FixedStep(1), ode.SaveEveryStep())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"1.2", "1.5", "3"}) {
		t.Fatalf("events fired %v, want [1.2 1.5 3]", got)
	}
	// events cut the steps: 1.2 and 1.5 (to rounding: the event state is
	// the first representable point past the crossing) and 3 exactly.
	if !slices.ContainsFunc(sol.T, func(s float64) bool { return math.Abs(s-1.2) < 1e-14 }) ||
		!slices.ContainsFunc(sol.T, func(s float64) bool { return math.Abs(s-1.5) < 1e-14 }) ||
		!slices.Contains(sol.T, 3) {
		t.Errorf("step ends %v", sol.T)
	}
}
