package ode_test

import (
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
)

// near compares a solution with the closed form to 1e-7 relative, or 1e-10
// absolute where the decay has made it small: BDF's global error at rtol
// 1e-10 reaches 1e-7 relative on a value of 5e-5 (k = 2 over [0, 5]).
func near(got, want float64) bool { return math.Abs(got-want) <= 1e-7*math.Abs(want)+1e-10 }

// Random dosing schedules of a decay u' = −k·u against the closed form:
// two schedules whose times fall on a grid of quarters, so that doses
// coincide with each other, with save times and with the ends. Additions
// commute, so coinciding doses are no error. The saved states are before
// the doses at their time, the final state after those at T1.
func TestScheduleRapid(t *testing.T) {
	methods := []ode.Method{ode.Tsit5(), ode.Rodas5P(), ode.BDF()}
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.Float64Range(0.1, 2).Draw(rt, "k")
		d := [2]float64{rapid.Float64Range(0.1, 5).Draw(rt, "d0"), rapid.Float64Range(0.1, 5).Draw(rt, "d1")}
		quarters := func(name string) []float64 {
			q := rapid.SliceOfN(rapid.IntRange(-2, 22), 0, 5).Draw(rt, name)
			ts := make([]float64, len(q))
			for i, v := range q {
				ts[i] = float64(v) / 4
			}
			return ts
		}
		times := [2][]float64{quarters("t0"), quarters("t1")}
		save := []float64{0, 1.25, 2.5, 3, 4.75, 5}
		m := methods[rapid.IntRange(0, len(methods)-1).Draw(rt, "method")]

		p := []float32{float32(k), float32(d[0]), float32(d[1])}
		prob := ode.Problem[float64]{
			F:  func(du, u []float64, p []float32, _ float64) { du[0] = -float64(p[0]) * u[0] },
			U0: []float64{1}, T1: 5, P: p,
		}
		for j := range 2 {
			prob.Schedules = append(prob.Schedules, ode.Schedule[float64]{Times: times[j], Effect: func(u []float64, p []float32, _ float64) bool {
				u[0] += float64(p[1+j])
				return false
			}})
		}
		sol, err := ode.Solve(bg, prob, m, ode.Tol(1e-10, 1e-12), ode.SaveAt(save...))
		if err != nil {
			rt.Fatalf("%s: %v", m.Name(), err)
		}
		kk := float64(p[0])
		exact := func(t float64, after bool) float64 {
			u := math.Exp(-kk * t)
			for j := range 2 {
				for _, s := range times[j] {
					if s >= 0 && (s < t || after && s == t) {
						u += float64(p[1+j]) * math.Exp(-kk*(t-s))
					}
				}
			}
			return u
		}
		for i, s := range save {
			if want := exact(s, false); !near(sol.U[i][0], want) {
				rt.Errorf("%s: u(%g) = %.12g, want %.12g", m.Name(), s, sol.U[i][0], want)
			}
		}
		it, err := ode.NewIntegrator(prob, m, ode.Tol(1e-10, 1e-12))
		if err != nil {
			rt.Fatal(err)
		}
		if err := it.Run(bg); err != nil {
			rt.Fatal(err)
		}
		if want := exact(5, true); !near(it.U()[0], want) {
			rt.Errorf("%s: final u(5) = %.12g, want %.12g after the doses at 5", m.Name(), it.U()[0], want)
		}
	})
}

// ReinitProblem replaces the schedules. BDF's global error on the decay
// at rtol 1e-10 is about 2e-8 relative without doses, the same as a fresh
// solve's.
func TestReinitProblemSchedules(t *testing.T) {
	a := decayDoses([]float64{1, 2})
	it, err := ode.NewIntegrator(a, ode.BDF(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range [][]float64{{3}, {0.5, 1.5, 2.5, 3.5}, nil, {1, 2}} {
		b := decayDoses(ts)
		if err := it.ReinitProblem(b); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(bg); err != nil {
			t.Fatal(err)
		}
		if got, want := it.U()[0], dosedExact(ts, 5, true); relErr(got, want) > 1e-7 {
			t.Errorf("doses at %v: u(5) = %.12g, want %.12g", ts, got, want)
		}
	}
}

// Random threshold dosing: u' = −k·u from 1; whenever u falls below the
// level L = p[1], a dose D = p[2] is added. The doses come at
// t₁ = ln(1/L)/k and then every ln((L+D)/L)/k, which gives u(5) in
// closed form.
func TestEventDosingRapid(t *testing.T) {
	methods := hybridMethods()
	rapid.Check(t, func(rt *rapid.T) {
		p := []float32{
			float32(rapid.Float64Range(0.2, 2).Draw(rt, "k")),
			float32(rapid.Float64Range(0.1, 0.9).Draw(rt, "L")),
			float32(rapid.Float64Range(0.1, 2).Draw(rt, "D")),
		}
		m := methods[rapid.IntRange(0, len(methods)-1).Draw(rt, "method")]
		k, l, d := float64(p[0]), float64(p[1]), float64(p[2])
		const T = 5.0
		t1, period := math.Log(1/l)/k, math.Log((l+d)/l)/k
		want := math.Exp(-k * T)
		if T >= t1 {
			n := math.Floor((T - t1) / period)
			tn := t1 + n*period
			if T-tn < 1e-6 || tn+period-T < 1e-6 {
				return // a dose too close to T1 for the comparison
			}
			want = (l + d) * math.Exp(-k*(T-tn))
		}
		if math.Abs(T-t1) < 1e-6 {
			return
		}
		prob := ode.Problem[float64]{
			F:  func(du, u []float64, p []float32, _ float64) { du[0] = -float64(p[0]) * u[0] },
			U0: []float64{1}, T1: T, P: p,
			Events: []ode.Event[float64]{{
				Cond:      func(u []float64, p []float32, _ float64) float64 { return u[0] - float64(p[1]) },
				Direction: -1,
				Effect: func(u []float64, p []float32, _ float64) bool {
					u[0] += float64(p[2])
					return false
				},
			}},
		}
		sol, err := ode.Solve(bg, prob, m, ode.Tol(1e-10, 1e-12))
		if err != nil {
			rt.Fatalf("%s: %v", m.Name(), err)
		}
		if got := sol.U[1][0]; !near(got, want) {
			rt.Errorf("%s: u(5) = %.12g, want %.12g (k %g, L %g, D %g)", m.Name(), got, want, k, l, d)
		}
	})
}

// A dosing time that is a parameter moves with it; Reinit with new
// parameters moves it again.
func TestScheduleTimesFrom(t *testing.T) {
	prob := decayDoses([]float64{0, 0})
	prob.P = append(prob.P, 1.5)
	prob.Schedules[0].TimesFrom = func(ts []float64, p []float32) { ts[0], ts[1] = float64(p[2]), 2*float64(p[2]) }
	it, err := ode.NewIntegrator(prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(1, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range []float32{1.5, 1, 2.5} {
		p := []float32{0.75, 2, td}
		if err := it.Reinit([]float64{1}, 0, 5, p); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(bg); err != nil {
			t.Fatal(err)
		}
		doses := []float64{float64(td), 2 * float64(td)}
		ts, us := it.Saved()
		for i, s := range ts {
			if want := dosedExact(doses, s, false); relErr(us[i][0], want) > 1e-8 {
				t.Errorf("doses at %v: u(%g) = %.12g, want %.12g", doses, s, us[i][0], want)
			}
		}
		if want := dosedExact(doses, 5, true); relErr(it.U()[0], want) > 1e-8 {
			t.Errorf("doses at %v: u(5) = %.12g, want %.12g", doses, it.U()[0], want)
		}
	}
	prob.Schedules[0].TimesFrom = func(ts []float64, _ []float32) { ts[1] = math.Inf(1) }
	if _, err := ode.Solve(bg, prob, ode.Tsit5()); err == nil || !strings.Contains(err.Error(), "Problem.Schedules[0].TimesFrom(P)[1] = +Inf, want a finite time") {
		t.Errorf("an infinite time: %v, want an error naming it", err)
	}
}
