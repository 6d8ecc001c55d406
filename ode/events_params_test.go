package ode_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// hybridMethods are the explicit and stiff methods the hybrid tests run.
func hybridMethods() []ode.Method {
	return []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P(), ode.BDF()}
}

// dosingProblem is SciMLSensitivity's continuous-callback test: N' = p₁ − N,
// N(0) = 0; when N crosses 3p₁/4, p₂ is added to N.
func dosingProblem() ode.Problem[float64] {
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, _ float64) { du[0] = float64(p[0]) - u[0] },
		U0: []float64{0}, T1: 10, P: []float32{100, 50},
		Events: []ode.Event[float64]{{
			Cond: func(u []float64, p []float32, _ float64) float64 { return u[0] - 0.75*float64(p[0]) },
			Effect: func(u []float64, p []float32, _ float64) bool {
				u[0] += float64(p[1])
				return false
			},
		}},
	}
}

// The reference value is SciMLSensitivity's; in closed form it is
// 100 + 100·e⁻¹⁰ (the dose at t = ln 4 brings N to 125).
func TestEventParamsDosing(t *testing.T) {
	const want = 100.00453999297625
	for _, m := range hybridMethods() {
		sol, err := ode.Solve(bg, dosingProblem(), m, ode.Tol(1e-10, 1e-10))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if got := sol.U[len(sol.U)-1][0]; relErr(got, want) > 1e-8 {
			t.Errorf("%s: N(10) = %.16g, want %.16g (relative error %.2g)", m.Name(), got, want, relErr(got, want))
		}
	}
	// The threshold moves with p₁: at p₁ = 80 the dose comes at N = 60.
	prob := dosingProblem()
	prob.P = []float32{80, 50}
	var at float64
	eff := prob.Events[0].Effect
	prob.Events[0].Effect = func(u []float64, p []float32, t float64) bool { at = t; return eff(u, p, t) }
	sol, err := ode.Solve(bg, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Log(4); math.Abs(at-want) > 1e-9 {
		t.Errorf("p₁ = 80: dose at %.12g, want ln 4 = %.12g", at, want)
	}
	if got, want := sol.U[1][0], 80+120*math.Exp(-10); relErr(got, want) > 1e-8 {
		t.Errorf("p₁ = 80: N(10) = %.16g, want 80 + 120·e⁻¹⁰ = %.16g", got, want)
	}
}

// bouncingBall is h' = v, v' = −9.8 from (50, 0); at each impact
// v ← −e·v with the restitution e = p[0].
func bouncingBall(e float32) ode.Problem[float64] {
	return ode.Problem[float64]{
		F: func(du, u []float64, _ []float32, _ float64) {
			du[0] = u[1]
			du[1] = -9.8
		},
		U0: []float64{50, 0}, T1: 15, P: []float32{e},
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, _ []float32, _ float64) float64 { return u[0] },
			Direction: -1,
			Effect: func(u []float64, p []float32, _ float64) bool {
				u[1] = -float64(p[0]) * u[1]
				return false
			},
		}},
	}
}

func TestEventParamsBouncingBall(t *testing.T) {
	// The reference is at e = 0.8 exactly; float32(0.8) is 1.2e-8 more,
	// which moves h(15) by ∂h/∂e·1.2e-8 ≈ 3.7e-6, and that is corrected
	// for to first order.
	e32 := float32(0.8)
	want := 8.494217007606046 + 314.56884*(float64(e32)-0.8)
	for _, m := range hybridMethods() {
		sol, err := ode.Solve(bg, bouncingBall(e32), m, ode.Tol(1e-10, 1e-10))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if got := sol.U[len(sol.U)-1][0]; relErr(got, want) > 1e-6 {
			t.Errorf("%s: h(15) = %.16g, want %.16g (relative error %.2g)", m.Name(), got, want, relErr(got, want))
		}
	}
}

// decayDoses is u' = −k·u, u(0) = 1, with a dose D = p[1] added at each of
// the times ts; k = p[0].
func decayDoses(ts []float64) ode.Problem[float64] {
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, _ float64) { du[0] = -float64(p[0]) * u[0] },
		U0: []float64{1}, T1: 5, P: []float32{0.75, 2},
		Schedules: []ode.Schedule[float64]{{Times: ts, Effect: func(u []float64, p []float32, _ float64) bool {
			u[0] += float64(p[1])
			return false
		}}},
	}
}

// dosedExact is decayDoses's closed form at t: the doses at times ≤ t count
// when after is set, those < t otherwise.
func dosedExact(ts []float64, t float64, after bool) float64 {
	const k, d = 0.75, 2.0
	u := math.Exp(-k * t)
	for _, s := range ts {
		if s < t || after && s == t {
			u += d * math.Exp(-k*(t-s))
		}
	}
	return u
}

func TestScheduleDosing(t *testing.T) {
	ts := []float64{2.5, 1, 4, 7} // unsorted; 7 is outside the span
	save := []float64{0.5, 1, 2, 2.5, 3.25, 4, 5}
	for _, m := range hybridMethods() {
		var doses []float64
		prob := decayDoses(ts)
		eff := prob.Schedules[0].Effect
		prob.Schedules[0].Effect = func(u []float64, p []float32, t float64) bool { doses = append(doses, t); return eff(u, p, t) }
		sol, err := ode.Solve(bg, prob, m, ode.Tol(1e-10, 1e-12), ode.SaveAt(save...), ode.Dense())
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if len(doses) != 3 || doses[0] != 1 || doses[1] != 2.5 || doses[2] != 4 {
			t.Errorf("%s: doses at %v, want exactly at [1 2.5 4]", m.Name(), doses)
		}
		for i, s := range save {
			// a saved point at a dose time is the state before the dose
			if want := dosedExact(ts, s, false); relErr(sol.U[i][0], want) > 1e-8 {
				t.Errorf("%s: u(%g) = %.12g, want %.12g", m.Name(), s, sol.U[i][0], want)
			}
			// At is right-continuous: after the dose
			u, err := sol.At(s)
			if err != nil {
				t.Fatal(err)
			}
			if want := dosedExact(ts, s, true); relErr(u[0], want) > 1e-8 {
				t.Errorf("%s: At(%g) = %.12g, want %.12g", m.Name(), s, u[0], want)
			}
		}
	}
}

// Doses at T0 and T1 change the initial state after it is saved and the
// final state; a time before T0 is ignored; a backward solve doses in its
// own order.
func TestScheduleEnds(t *testing.T) {
	ts := []float64{-1, 0, 2, 5}
	sol, err := ode.Solve(bg, decayDoses(ts), ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	if sol.U[0][0] != 1 {
		t.Errorf("u(0) saved %g, want 1 (before the dose at T0)", sol.U[0][0])
	}
	if got, want := sol.U[1][0], dosedExact(ts[1:], 5, true); relErr(got, want) > 1e-8 {
		t.Errorf("u(5) = %.12g, want %.12g (after the dose at T1)", got, want)
	}

	// backwards from u(5) = 1 to 0: doses at 4 and 1 add D each going back.
	back := decayDoses([]float64{1, 4})
	back.T0, back.T1 = 5, 0
	sol, err = ode.Solve(bg, back, ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	want := ((math.Exp(0.75)+2)*math.Exp(0.75*3) + 2) * math.Exp(0.75) // 5→4, dose, 4→1, dose, 1→0
	if got := sol.U[1][0]; relErr(got, want) > 1e-8 {
		t.Errorf("backward solve: u(0) = %.12g, want %.12g", got, want)
	}
}

// clockEvents is x' = 1 from 0 with two more components the effects
// change, and events at x = 1 with the given effects.
func clockEvents(effects ...func(u []float64, p []float32, t float64) bool) ode.Problem[float64] {
	prob := ode.Problem[float64]{
		F:  func(du, _ []float64, _ []float32, _ float64) { du[0], du[1], du[2] = 1, 0, 0 },
		U0: []float64{0, 1, 1}, T1: 2,
	}
	for _, e := range effects {
		prob.Events = append(prob.Events, ode.Event[float64]{
			Cond:   func(u []float64, _ []float32, _ float64) float64 { return u[0] - 1 },
			Effect: e,
		})
	}
	return prob
}

func addTo(i int, v float64) func(u []float64, p []float32, t float64) bool {
	return func(u []float64, _ []float32, _ float64) bool { u[i] += v; return false }
}

func TestEventsSimultaneous(t *testing.T) {
	double := func(u []float64, _ []float32, _ float64) bool { u[1] *= 2; return false }
	for _, m := range []ode.Method{ode.Tsit5(), ode.BDF()} {
		// Effects that commute both apply, once each.
		sol, err := ode.Solve(bg, clockEvents(addTo(1, 1), addTo(2, 3), addTo(1, 0.5)), m)
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if u := sol.U[1]; u[1] != 2.5 || u[2] != 4 {
			t.Errorf("%s: commuting simultaneous events gave %v, want [_ 2.5 4]", m.Name(), u)
		}
		// Effects that do not commute are an error naming both.
		_, err = ode.Solve(bg, clockEvents(addTo(1, 1), addTo(2, 3), double), m)
		var e *ode.Error
		if !errors.As(err, &e) || e.Code != ode.Failed || !strings.Contains(err.Error(), "order matters") ||
			!strings.Contains(err.Error(), "Problem.Events[0], Problem.Events[1] and Problem.Events[2]") || math.Abs(e.T-1) > 1e-12 {
			t.Errorf("%s: non-commuting events: %v, want a Failed error that their order matters at t=1", m.Name(), err)
		}
		// An event and a schedule entry at the same time are simultaneous too.
		prob := clockEvents(double)
		prob.Schedules = []ode.Schedule[float64]{{Times: []float64{1}, Effect: addTo(1, 1)}}
		_, err = ode.Solve(bg, prob, m)
		if err == nil || !strings.Contains(err.Error(), "Problem.Events[0] and Problem.Schedules[0] happen at t=1 and their order matters") {
			t.Errorf("%s: an event and a dose at once: %v, want the order error", m.Name(), err)
		}
		prob.Schedules[0].Effect = addTo(2, 1)
		sol, err = ode.Solve(bg, prob, m)
		if err != nil || sol.U[1][1] != 2 || sol.U[1][2] != 2 {
			t.Errorf("%s: a commuting event and dose: %v %v, want [_ 2 2]", m.Name(), err, sol.U)
		}
	}
	// Two events at distinct times, however close, are not simultaneous.
	prob := clockEvents(addTo(1, 1), double)
	prob.Events[1].Cond = func(u []float64, _ []float32, _ float64) float64 { return u[0] - (1 + 1e-9) }
	sol, err := ode.Solve(bg, prob, ode.Tsit5())
	if err != nil || sol.U[1][1] != 4 {
		t.Errorf("events 1e-9 apart: %v %v, want u[1] = (1+1)·2", err, sol.U)
	}
}

func TestEffectMustNotWriteP(t *testing.T) {
	prob := dosingProblem()
	prob.Events[0].Effect = func(u []float64, p []float32, _ float64) bool { p[1] = 0; return false }
	_, err := ode.Solve(bg, prob, ode.Tsit5())
	if err == nil || !strings.Contains(err.Error(), "Problem.Events[0] changed p[1] from 50 to 0") {
		t.Errorf("an effect that writes p: %v, want an error naming it", err)
	}
}

func TestEventValidation(t *testing.T) {
	g := func(u []float64, _ float64) float64 { return u[0] }
	cond := func(u []float64, _ []float32, _ float64) float64 { return u[0] }
	aff := func([]float64, float64) bool { return false }
	eff := func([]float64, []float32, float64) bool { return false }
	for _, c := range []struct {
		ev   ode.Event[float64]
		sch  ode.Schedule[float64]
		want string
	}{
		{ev: ode.Event[float64]{}, want: "Problem.Events[0].G and Cond are both nil, want exactly one of them"},
		{ev: ode.Event[float64]{G: g, Cond: cond}, want: "Problem.Events[0].G and Cond are both set"},
		{ev: ode.Event[float64]{Cond: cond, Affect: aff, Effect: eff}, want: "has both Affect and Effect, want at most one"},
		{ev: ode.Event[float64]{Cond: cond, Direction: 2}, want: "Direction = 2"},
		{ev: ode.Event[float64]{Cond: cond}, sch: ode.Schedule[float64]{Times: []float64{1}}, want: "Problem.Schedules[0].Effect is nil"},
		{ev: ode.Event[float64]{Cond: cond}, sch: ode.Schedule[float64]{Times: []float64{1, math.NaN()}, Effect: eff}, want: "Problem.Schedules[0].Times[1] = NaN, want a finite time"},
	} {
		prob := ode.Problem[float64]{F: fall, U0: []float64{1, 0}, T1: 1, Events: []ode.Event[float64]{c.ev}}
		if c.sch.Times != nil {
			prob.Schedules = []ode.Schedule[float64]{c.sch}
		}
		if _, err := ode.Solve(bg, prob, ode.Tsit5()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ev, err, c.want)
		}
	}
}

// Reinit and Run with events and a schedule allocate nothing once warm.
func TestEventsScheduleAllocs(t *testing.T) {
	prob := decayDoses([]float64{1, 2.5, 4})
	prob.Events = dosingProblem().Events
	prob.Events[0].Cond = func(u []float64, _ []float32, _ float64) float64 { return u[0] - 1.5 }
	it, err := ode.NewIntegrator(prob, ode.Tsit5(), ode.SaveAt(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	u0 := []float64{1}
	run := func() {
		if err := it.Reinit(u0, 0, 5, prob.P); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(bg); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(10, run); a != 0 {
		t.Errorf("%g allocations per solve, want 0", a)
	}
}
