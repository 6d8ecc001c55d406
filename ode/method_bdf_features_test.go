package ode_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/ode"
)

// BDF with the integrator's features: SaveAt and the dense output,
// TStops, events, ensembles, float32, failures and allocations.

// prothero is the Prothero–Robinson problem y' = λ(y − sin t) + cos t with
// λ = −1e4 beside a non-stiff y2' = −y2: y = (sin t, e^−t) from (0, 1).
func prothero(du, u []float64, _ []float32, t float64) {
	du[0] = -1e4*(u[0]-math.Sin(t)) + math.Cos(t)
	du[1] = -u[1]
}

func protheroExact(t float64) []float64 { return []float64{math.Sin(t), math.Exp(-t)} }

// SaveAt and Dense read the Nordsieck polynomial of each step; it is
// continuous from step to step and as accurate as the steps.
func TestBDFDenseOutput(t *testing.T) {
	prob := ode.Problem[float64]{F: prothero, U0: []float64{0, 1}, T1: 10}
	ts := make([]float64, 101)
	for i := range ts {
		ts[i] = 0.1 * float64(i)
	}
	rtol, atol := 1e-7, 1e-9
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(rtol, atol), ode.SaveAt(ts...), ode.Dense())
	if err != nil {
		t.Fatal(err)
	}
	if len(sol.T) != len(ts) {
		t.Fatalf("%d saved points, want %d", len(sol.T), len(ts))
	}
	worst := 0.0
	for i, s := range ts {
		worst = max(worst, weightedErr(sol.U[i], protheroExact(s), rtol, atol))
		u, err := sol.At(s + 0.05*math.Min(1, 10-s))
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, weightedErr(u, protheroExact(s+0.05*math.Min(1, 10-s)), rtol, atol))
	}
	t.Logf("worst weighted error at the save points and between: %.3g; %d steps", worst, sol.Stats.Accepted)
	if worst > bdfBound {
		t.Errorf("dense output: weighted error %.3g > %d", worst, bdfBound)
	}
	// Continuity: each step's polynomial starts where the step starts.
	it, err := ode.NewIntegrator(prob, ode.BDF(), ode.Tol(rtol, atol))
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, 2)
	for k := 0; k < 50 && !it.Done(); k++ {
		t0, u0 := it.T(), append([]float64(nil), it.U()...)
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
		if err := it.AtInto(dst, t0); err != nil {
			t.Fatal(err)
		}
		if !bitwise.Equal(dst, u0) {
			t.Fatalf("step %d: the polynomial at its start is %v, the state was %v", k, dst, u0)
		}
		if err := it.AtInto(dst, it.T()); err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(dst, it.U()); d > 1e-15 {
			t.Fatalf("step %d: the polynomial at its end is %v, the state %v", k, dst, it.U())
		}
	}
}

// TStops: the steps land on each stop, where F jumps, and the solution
// stays accurate across the jumps.
func TestBDFTStops(t *testing.T) {
	// y' = −1e3·(y − g(t)), g = 1 on (1, 2], 0 elsewhere: a stiff
	// relaxation to a step function. Exactly, y = 1 − e^(−1e3(t−1)) on
	// [1, 2]. g is continuous from the left, as an implicit method needs:
	// the step that lands on a stop evaluates F there.
	f := func(du, u []float64, _ []float32, t float64) {
		g := 0.0
		if t > 1 && t <= 2 {
			g = 1
		}
		du[0] = -1e3 * (u[0] - g)
	}
	prob := ode.Problem[float64]{F: f, U0: []float64{0}, T1: 3}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-8), ode.TStops(1, 2), ode.SaveEveryStep())
	if err != nil {
		t.Fatal(err)
	}
	hit := map[float64]bool{}
	for _, s := range sol.T {
		hit[s] = true
	}
	if !hit[1] || !hit[2] {
		t.Fatalf("steps do not land on the stops 1 and 2")
	}
	for i, s := range sol.T {
		want := 0.0
		if s > 1 && s <= 2 {
			want = 1 - math.Exp(-1e3*(s-1))
		} else if s > 2 {
			want = (1 - math.Exp(-1e3)) * math.Exp(-1e3*(s-2))
		}
		if d := math.Abs(sol.U[i][0] - want); d > 1e-4 {
			t.Errorf("t=%g: y = %g, want %g", s, sol.U[i][0], want)
		}
	}
	t.Logf("%d steps, %+v", len(sol.T)-1, sol.Stats)
	if sol.Stats.Accepted > 300 {
		t.Errorf("%d steps, want ≤ 300", sol.Stats.Accepted)
	}
}

// Events: a continuing one restarts BDF at order 1; a terminating one
// ends the solve at the root.
func TestBDFEvents(t *testing.T) {
	// y' = −y from 1; each time y falls to 1/2 it is reset to 1: the
	// events are at k·ln 2.
	f := func(du, u []float64, _ []float32, _ float64) { du[0] = -u[0] }
	var times []float64
	ev := ode.Event[float64]{
		G:         func(u []float64, _ float64) float64 { return u[0] - 0.5 },
		Direction: -1,
		Affect: func(u []float64, t float64) bool {
			times = append(times, t)
			u[0] = 1
			return false
		},
	}
	prob := ode.Problem[float64]{F: f, U0: []float64{1}, T1: 5, Events: []ode.Event[float64]{ev}}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 7 {
		t.Fatalf("%d events, want 7: %v", len(times), times)
	}
	for k, s := range times {
		if d := math.Abs(s - float64(k+1)*math.Ln2); d > 1e-6 {
			t.Errorf("event %d at %.10g, want %.10g", k, s, float64(k+1)*math.Ln2)
		}
	}
	want := math.Exp(-(5 - 7*math.Ln2))
	if d := math.Abs(sol.U[1][0] - want); d > 1e-6 {
		t.Errorf("y(5) = %.10g, want %.10g", sol.U[1][0], want)
	}

	prob.Events[0].Affect = nil
	sol, err = ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	last := len(sol.T) - 1
	if sol.Stats.Retcode != ode.Terminated || math.Abs(sol.T[last]-math.Ln2) > 1e-6 {
		t.Errorf("terminating event: %v at t=%.10g, want Terminated at %.10g", sol.Stats.Retcode, sol.T[last], math.Ln2)
	}
}

// Ensembles: BDF keeps nothing from one trajectory to the next, so the
// results do not depend on the workers and match fresh integrators.
func TestBDFEnsemble(t *testing.T) {
	ens := ode.Ensemble[float64]{
		Base: ode.Problem[float64]{F: robertsonEns, U0: []float64{1, 0, 0}, T1: 1e3}, N: 24, ShardSize: 4,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0], p.U0[2] = 1-0.01*float64(i), 0.01*float64(i)
			p.T1 = 1e3 * (1 + float64(i%5))
		},
	}
	m := ode.BDF()
	a, err := ens.Solve(bg, m, ode.Workers(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ens.Solve(bg, m, ode.Workers(3))
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "BDF 3 workers vs 1", b, a)
	for _, i := range []int{0, 7, 23} {
		it, err := ode.NewIntegrator(ens.Problem(i), m)
		if err == nil {
			err = it.Run(bg)
		}
		if err != nil || !bitwise.Equal(it.U(), a.U[i]) {
			t.Fatalf("trajectory %d: ensemble %v, fresh integrator %v (%v)", i, a.U[i], it.U(), err)
		}
	}
}

// float32: Robertson at rtol 1e-4 with a difference-quotient Jacobian and
// with the user's.
func TestBDFFloat32(t *testing.T) {
	for _, jac := range []bool{true, false} {
		prob := ode.Problem[float32]{F: robertson[float32], U0: []float32{1, 0, 0}, T1: 1e5}
		if jac {
			prob.Jac = robertsonJac[float32]
		}
		sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-4, 1e-7))
		if err != nil {
			t.Fatalf("Jac %v: %v", jac, err)
		}
		u := []float64{float64(sol.U[1][0]), float64(sol.U[1][1]), float64(sol.U[1][2])}
		w := weightedErr(u, robertsonRef1e5, 1e-4, 1e-7)
		t.Logf("float32 Jac %v: weighted error %.3g, %+v", jac, w, sol.Stats)
		if w > bdfBound {
			t.Errorf("float32 Jac %v: weighted error %.3g > %d", jac, w, bdfBound)
		}
	}
}

// A solution that blows up ends with an error naming t.
func TestBDFBlowUp(t *testing.T) {
	// y' = y², y(0) = 1: y = 1/(1 − t).
	f := func(du, u []float64, _ []float32, _ float64) { du[0] = u[0] * u[0] }
	sol, err := ode.Solve(bg, ode.Problem[float64]{F: f, U0: []float64{1}, T1: 2}, ode.BDF())
	var e *ode.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *ode.Error", err)
	}
	t.Logf("%v; %+v", err, sol.Stats)
	if e.T < 0.99 || e.T > 1.001 || !strings.Contains(err.Error(), "t=") {
		t.Errorf("err = %v, want it at t ≈ 1", err)
	}
}

// A Jacobian that turns NaN ends the solve with NonFinite naming the
// entry and t, after the step has been retried smaller.
func TestBDFBadJacobian(t *testing.T) {
	f := func(du, u []float64, _ []float32, _ float64) { du[0] = -u[0] }
	jac := func(J, u []float64, _ []float32, t float64) {
		J[0] = -1
		if t > 0.5 {
			J[0] = math.NaN()
		}
	}
	_, err := ode.Solve(bg, ode.Problem[float64]{F: f, Jac: jac, U0: []float64{1}, T1: 100}, ode.BDF())
	var e *ode.Error
	if !errors.As(err, &e) || e.Code != ode.NonFinite || !strings.Contains(err.Error(), "J[0][0]") {
		t.Fatalf("err = %v, want NonFinite naming J[0][0]", err)
	}
	t.Log(err)
}

func TestBDFSettings(t *testing.T) {
	prob := ode.Problem[float64]{F: robertson[float64], U0: []float64{1, 0, 0}, T1: 1}
	for _, c := range []struct {
		m    ode.Method
		opts []ode.SolveOption
		want string
	}{
		{ode.BDFMethod{MaxOrder: 6}, nil, "MaxOrder = 6"},
		{&ode.BDFMethod{MaxOrder: -1}, nil, "MaxOrder = -1"},
		{ode.BDF(), []ode.SolveOption{ode.FixedStep(0.1)}, "FixedStep"},
	} {
		_, err := ode.NewIntegrator(prob, c.m, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one naming %q", c.m, err, c.want)
		}
	}
	for q := 1; q <= 5; q++ {
		sol, err := ode.Solve(bg, prob, ode.BDFMethod{MaxOrder: q}, ode.Tol(1e-6, 1e-8))
		if err != nil {
			t.Fatalf("MaxOrder %d: %v", q, err)
		}
		t.Logf("MaxOrder %d: %d steps", q, sol.Stats.Accepted)
	}
	if s := (ode.BDFMethod{MaxOrder: 3}).String(); s != "BDF(MaxOrder 3)" {
		t.Errorf("String() = %q", s)
	}
	// The settings as a value and through a pointer are the same method.
	val := ode.BDFMethod{MaxOrder: 3, Linear: ode.BandLU{}}
	band := prob
	band.JacStructure = ode.BandJacobian{Lower: 2, Upper: 2}
	a, err := ode.Solve(bg, band, val, ode.Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ode.Solve(bg, band, &val, ode.Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	if a.Stats != b.Stats || a.U[len(a.U)-1][1] != b.U[len(b.U)-1][1] {
		t.Errorf("BDFMethod by value: %+v; through a pointer: %+v", a.Stats, b.Stats)
	}
}

// A reused integrator allocates nothing: Reinit and Run, with SaveAt and
// events.
func TestBDFAllocs(t *testing.T) {
	for _, c := range []struct {
		name string
		prob ode.Problem[float64]
		opts []ode.SolveOption
	}{
		{"bruss1d N=20", bruss1d(20, true), nil},
		{"POLLU", pollu(), []ode.SolveOption{ode.SaveAt(1, 10, 30)}},
		{"events", ode.Problem[float64]{F: func(du, u []float64, _ []float32, _ float64) { du[0] = -u[0] }, U0: []float64{1}, T1: 5,
			Events: []ode.Event[float64]{{G: func(u []float64, _ float64) float64 { return u[0] - 0.5 },
				Affect: func(u []float64, _ float64) bool { u[0] = 1; return false }}}}, nil},
	} {
		it, err := ode.NewIntegrator(c.prob, ode.BDF(), c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		run := func() {
			if err := it.Reinit(c.prob.U0, c.prob.T0, c.prob.T1, nil); err != nil {
				t.Fatal(err)
			}
			if err := it.Run(bg); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(5, run); a != 0 {
			t.Errorf("%s: %v allocations per Reinit and Run, want 0", c.name, a)
		}
	}
}

// Gradients through BDF agree with those through Rodas5P to the
// tolerance's accuracy.
func TestBDFGradient(t *testing.T) {
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.BacksolveAdjoint{}} {
		g, err := ode.Gradient(bg, lvProblem(), ode.BDF(), lvLoss(), s, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatalf("%T: %v", s, err)
		}
		r, err := ode.Gradient(bg, lvProblem(), ode.Rodas5P(), lvLoss(), s, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatalf("%T: Rodas5P: %v", s, err)
		}
		for k := range g.P {
			if d := math.Abs(g.P[k] - r.P[k]); d > 1e-4*math.Abs(r.P[k]) {
				t.Errorf("%T: dL/dθ[%d] = %.10g, through Rodas5P %.10g", s, k, g.P[k], r.P[k])
			}
		}
	}
}

// Per-component tolerances, with a component left out of the error
// control by an infinite atol.
func TestBDFTolPerComponent(t *testing.T) {
	prob := ode.Problem[float64]{F: robertson[float64], Jac: robertsonJac[float64], U0: []float64{1, 0, 0}, T1: 1e5}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.TolPerComponent(1e-6, []float64{1e-8, 1e-14, 1e-8}))
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(sol.U[1][1]-robertsonRef1e5[1]) / robertsonRef1e5[1]; d > 1e-3 {
		t.Errorf("y2 = %g with atol 1e-14, relative error %.3g", sol.U[1][1], d)
	}
	free, err := ode.Solve(bg, prob, ode.BDF(), ode.TolPerComponent(1e-6, []float64{1e-8, math.Inf(1), 1e-8}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("y2 controlled: %d steps; left out: %d steps", sol.Stats.Accepted, free.Stats.Accepted)
	if free.Stats.Accepted >= sol.Stats.Accepted {
		t.Errorf("leaving y2 out of the error control takes %d steps, not fewer than %d", free.Stats.Accepted, sol.Stats.Accepted)
	}
	if w := weightedErr([]float64{free.U[1][0], free.U[1][2]}, []float64{robertsonRef1e5[0], robertsonRef1e5[2]}, 1e-6, 1e-8); w > bdfBound {
		t.Errorf("y1, y3 with y2 left out: weighted error %.3g > %d", w, bdfBound)
	}
}

// A reused float32 integrator allocates nothing either.
func TestBDFAllocsFloat32(t *testing.T) {
	prob := ode.Problem[float32]{F: robertson[float32], U0: []float32{1, 0, 0}, T1: 1e3}
	it, err := ode.NewIntegrator(prob, ode.BDF(), ode.Tol(1e-4, 1e-7), ode.SaveAt(1, 10, 100))
	if err != nil {
		t.Fatal(err)
	}
	run := func() {
		if err := it.Reinit(prob.U0, 0, 1e3, nil); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(bg); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(5, run); a != 0 {
		t.Errorf("%v allocations per Reinit and Run, want 0", a)
	}
}

// Backwards in time: the same steps as forwards on the mirrored problem;
// and from a given first step.
func TestBDFBackwardAndInitialStep(t *testing.T) {
	// y1' = −y1 + y2, y2' = −2·y2 from t = 1 back to 0: y2 = e^(−2t),
	// y1 = 2e^(−t) − e^(−2t). The solution grows backwards, and with it
	// the global error: the weighted error is 37 at rtol 1e-8, 1 forwards.
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -u[0] + u[1]
		du[1] = -2 * u[1]
	}
	mirrored := func(du, u []float64, _ []float32, _ float64) {
		du[0] = u[0] - u[1]
		du[1] = 2 * u[1]
	}
	exact := func(t float64) []float64 { return []float64{2*math.Exp(-t) - math.Exp(-2*t), math.Exp(-2 * t)} }
	fwd, err := ode.Solve(bg, ode.Problem[float64]{F: mirrored, U0: exact(1), T0: 0, T1: 1}, ode.BDF(), ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	prob := ode.Problem[float64]{F: f, U0: exact(1), T0: 1, T1: 0}
	for _, opts := range [][]ode.SolveOption{
		{ode.Tol(1e-8, 1e-10)},
		{ode.Tol(1e-8, 1e-10), ode.InitialStep(1e-3)},
	} {
		sol, err := ode.Solve(bg, prob, ode.BDF(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		w := weightedErr(sol.U[1], exact(0), 1e-8, 1e-10)
		t.Logf("%d options: y(0) = %v, weighted error %.3g, %d steps", len(opts), sol.U[1], w, sol.Stats.Accepted)
		if sol.T[1] != 0 || w > 100 {
			t.Errorf("backwards to %g: weighted error %.3g > 100", sol.T[1], w)
		}
		if len(opts) == 1 && (sol.Stats.Accepted != fwd.Stats.Accepted || maxAbsDiff(sol.U[1], fwd.U[1]) > 1e-14) {
			t.Errorf("backwards: %v in %d steps; forwards on the mirrored problem %v in %d", sol.U[1], sol.Stats.Accepted, fwd.U[1], fwd.Stats.Accepted)
		}
	}
}
