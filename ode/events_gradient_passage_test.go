package ode_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Loss.End: a loss of where the solve ended, a terminating event's time
// (a first-passage time) and its state after the effect, or T1 and u(T1).

// fallingBall is h' = v, v' = −g from (h0, v0), p = (g, e), ended by the
// first impact h = 0, whose effect scales v by e.
func fallingBall(h0, v0 float64) ode.Problem[float64] {
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0], du[1] = u[1], -float64(p[0]) },
		U0: []float64{h0, v0}, T1: 10, P: []float32{9.8, 0.7},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0], jv[1] = v[1], 0
			if dp != nil {
				jv[1] = -dp[0]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[1] += w[0]
			if dp != nil {
				dp[0] -= w[1]
			}
		},
		Jac: func(J []float64, u []float64, p []float32, t float64) { J[0], J[1], J[2], J[3] = 0, 1, 0, 0 },
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, p []float32, t float64) float64 { return u[0] },
			Direction: -1,
			Effect:    func(u []float64, p []float32, t float64) bool { u[1] *= float64(p[1]); return true },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 {
				du[0]++
				return 0
			},
			EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
				jv[0], jv[1] = v[0], float64(p[1])*v[1]
				if dp != nil {
					jv[1] += u[1] * dp[1]
				}
			},
			EffectVJP: func(du, dp, w, u []float64, p []float32, t float64) float64 {
				du[0] += w[0]
				du[1] += float64(p[1]) * w[1]
				if dp != nil {
					dp[1] += u[1] * w[1]
				}
				return 0
			},
		}},
	}
}

// passageSens are the sensitivity methods Loss.End is checked with; the
// discrete adjoint takes no BDF.
func passageSens(m ode.Method) []ode.Sensitivity {
	s := []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{},
		ode.InterpolatingAdjoint{Checkpoints: 3}, ode.GaussAdjoint{}, ode.GaussAdjoint{Checkpoints: 3}}
	if m.Name() != ode.BDF().Name() {
		s = append(s, ode.DiscreteAdjoint{})
	}
	return s
}

// passageSensFD are passageSens with FiniteDiff set, for a problem
// without derivatives.
func passageSensFD(m ode.Method) []ode.Sensitivity {
	s := []ode.Sensitivity{ode.ForwardSensitivity{FiniteDiff: true}, ode.InterpolatingAdjoint{FiniteDiff: true},
		ode.GaussAdjoint{Checkpoints: 3, FiniteDiff: true}}
	if m.Name() != ode.BDF().Name() {
		s = append(s, ode.DiscreteAdjoint{FiniteDiff: true})
	}
	return s
}

// firstPassage is the loss τ: End returns t.
func firstPassage() ode.Loss[float64] {
	return ode.Loss[float64]{End: func(t float64, u, dLdu []float64) (float64, float64) { return t, 1 }}
}

// The first-passage time of the falling ball from rest: τ = √(2h0/g),
// dτ/dh0 = 1/√(2h0g), dτ/dv0 = 1/g, dτ/dg = −τ/(2g), dτ/de = 0, and
// dτ/dT0 = 1 (a later start, a later impact); T1 does not matter.
func TestFirstPassage(t *testing.T) {
	const h0 = 10.0
	prob := fallingBall(h0, 0)
	g := float64(prob.P[0])
	tau := math.Sqrt(2 * h0 / g)
	fd := withoutDerivs(prob)
	for _, m := range forwardHybridMethods() {
		for i, s := range append(passageSens(m), passageSensFD(m)...) {
			pr, tol := prob, 1e-8
			if i >= len(passageSens(m)) {
				pr, tol = fd, 1e-6 // the derivatives by differences
			}
			what := m.Name() + ", " + s.Name()
			r, err := ode.Gradient(context.Background(), pr, m, firstPassage(), s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			checkRel(t, what+": τ", r.Value, tau, tol)
			checkRels(t, what+": dτ/dp", r.P, []float64{-tau / (2 * g), 0}, tol)
			checkRels(t, what+": dτ/du0", r.U0, []float64{1 / math.Sqrt(2*h0*g), 1 / g}, tol)
			checkRel(t, what+": dτ/dT0", r.T0, 1, tol)
			checkRel(t, what+": dτ/dT1", r.T1, 0, 0)
		}
	}
}

// A loss of the time and of the state after the effect, with a save
// time before the impact and a running cost: from rest,
//
//	L = τ + v(τ)² + h(½) + ∫₀^τ v dt = τ + 2e²g·h0 + (h0 − g/8) − h0,
//
// since v(τ) = −e·gτ after the effect and the integral is h(τ) − h0.
func TestFirstPassageMixed(t *testing.T) {
	const h0 = 10.0
	prob := fallingBall(h0, 0)
	g, e := float64(prob.P[0]), float64(prob.P[1])
	tau := math.Sqrt(2 * h0 / g)
	loss := ode.Loss[float64]{
		At: []float64{0.5},
		Point: func(i int, t float64, u, dLdu []float64) float64 {
			dLdu[0] = 1
			return u[0]
		},
		Running:         func(u []float64, p []float32, t float64) float64 { return u[1] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[1]++ },
		End: func(t float64, u, dLdu []float64) (float64, float64) {
			dLdu[1] = 2 * u[1]
			return t + u[1]*u[1], 1
		},
	}
	want := tau + 2*e*e*g*h0 - g/8
	wantP := []float64{-tau/(2*g) + 2*e*e*h0 - 1.0/8, 4 * e * g * h0}
	// dL/dv0: τ moves by 1/g, v(τ)² = e²(v0 − gτ)² by 2e²(−gτ)(1 − g/g) = 0,
	// h(½) by ½, ∫v = h(τ) − h0 by 0.
	wantU0 := []float64{1/math.Sqrt(2*h0*g) + 2*e*e*g, 1/g + 0.5}
	for _, m := range forwardHybridMethods() {
		for _, s := range passageSens(m) {
			what := m.Name() + ", " + s.Name()
			r, err := ode.Gradient(context.Background(), prob, m, loss, s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			tol := 1e-8
			checkRel(t, what+": L", r.Value, want, tol)
			checkRels(t, what+": dL/dp", r.P, wantP, tol)
			checkRels(t, what+": dL/du0", r.U0, wantU0, tol)
			checkRel(t, what+": dL/dT1", r.T1, 0, 0)
		}
	}
}

// endCentralDiff is solveCentralDiff for a loss of End alone: each solve
// ends at the terminating event, and End reads its last time and state.
func endCentralDiff(t *testing.T, prob ode.Problem[float64], m ode.Method, end func(t float64, u, dLdu []float64) (float64, float64), rel float64, opts ...ode.SolveOption) (value float64, dp, du0 []float64) {
	t.Helper()
	eval := func(pr ode.Problem[float64]) float64 {
		sol, err := ode.Solve(context.Background(), pr, m, opts...)
		if err != nil {
			t.Fatalf("endCentralDiff: %v", err)
		}
		k := len(sol.T) - 1
		l, _ := end(sol.T[k], sol.U[k], make([]float64, len(pr.U0)))
		return l
	}
	value = eval(prob)
	dp = make([]float64, len(prob.P))
	for k, p := range prob.P {
		h := rel * max(math.Abs(float64(p)), 1)
		q := prob
		q.P = append([]float32(nil), prob.P...)
		hi, lo := float32(float64(p)+h), float32(float64(p)-h)
		q.P[k] = hi
		fp := eval(q)
		q.P = append([]float32(nil), prob.P...)
		q.P[k] = lo
		fm := eval(q)
		dp[k] = (fp - fm) / (float64(hi) - float64(lo))
	}
	du0 = make([]float64, len(prob.U0))
	for j, u := range prob.U0 {
		h := rel * max(math.Abs(u), 1)
		q := prob
		q.U0 = append([]float64(nil), prob.U0...)
		q.U0[j] = u + h
		fp := eval(q)
		q.U0 = append([]float64(nil), prob.U0...)
		q.U0[j] = u - h
		fm := eval(q)
		du0[j] = (fp - fm) / (2 * h)
	}
	return value, dp, du0
}

// τ + v(τ)² of a ball thrown upwards, against central differences of
// solves.
func TestFirstPassageCentralDiff(t *testing.T) {
	prob := fallingBall(7, 3)
	end := func(t float64, u, dLdu []float64) (float64, float64) {
		dLdu[1] = 2 * u[1]
		return t + u[1]*u[1], 1
	}
	loss := ode.Loss[float64]{End: end}
	for _, m := range forwardHybridMethods() {
		v, dp, du0 := endCentralDiff(t, prob, m, end, 1e-4, ode.Tol(1e-12, 1e-13))
		for _, s := range passageSens(m) {
			what := m.Name() + ", " + s.Name()
			r, err := ode.Gradient(context.Background(), prob, m, loss, s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			checkRel(t, what+": L", r.Value, v, 1e-8)
			checkRels(t, what+": dL/dp", r.P, dp, 1e-6)
			checkRels(t, what+": dL/du0", r.U0, du0, 1e-6)
		}
	}
}

// predatorPrey is a forced Lotka-Volterra system on [0, 3], with p = (a, b).
func predatorPrey() ode.Problem[float64] {
	return ode.Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) {
			a, b := float64(p[0]), float64(p[1])
			du[0] = a*u[0] - u[0]*u[1]
			du[1] = -b*u[1] + u[0]*u[1] + 0.1*math.Sin(t)
		},
		U0: []float64{1, 0.5}, T1: 3, P: []float32{1.1, 0.9},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			a, b := float64(p[0]), float64(p[1])
			jv[0] = (a-u[1])*v[0] - u[0]*v[1]
			jv[1] = u[1]*v[0] + (u[0]-b)*v[1]
			if dp != nil {
				jv[0] += u[0] * dp[0]
				jv[1] -= u[1] * dp[1]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			a, b := float64(p[0]), float64(p[1])
			du[0] += w[0]*(a-u[1]) + w[1]*u[1]
			du[1] += -w[0]*u[0] + w[1]*(u[0]-b)
			if dp != nil {
				dp[0] += w[0] * u[0]
				dp[1] -= w[1] * u[1]
			}
		},
		Jac: func(J []float64, u []float64, p []float32, t float64) {
			a, b := float64(p[0]), float64(p[1])
			J[0], J[1], J[2], J[3] = a-u[1], -u[0], u[1], u[0]-b
		},
	}
}

// End on a solve without events reads T1 and u(T1): it is a save at T1
// whose dL/dt adds to dL/dT1. L = T1·u₀(T1) + u₁(T1)² of Lotka-Volterra-
// like dynamics, as End and as a Point at T1.
func TestEndWithoutEvents(t *testing.T) {
	prob := predatorPrey()
	end := func(t float64, u, dLdu []float64) (float64, float64) {
		dLdu[0], dLdu[1] = t, 2*u[1]
		return t*u[0] + u[1]*u[1], u[0]
	}
	var u1 float64 // u₀(T1), seen by the point form: its dL/dT1 lacks ∂L/∂t = u₀
	point := ode.Loss[float64]{At: []float64{3}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		u1 = u[0]
		l, _ := end(t, u, dLdu)
		return l
	}}
	for _, m := range forwardHybridMethods() {
		sens := append(passageSens(m), ode.BacksolveAdjoint{})
		for _, s := range sens {
			what := m.Name() + ", " + s.Name()
			ctx := context.Background()
			want, err := ode.Gradient(ctx, prob, m, point, s, ode.Tol(1e-9, 1e-11))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			// End alone: the same solves as the point form, the same bits.
			// End beside save times at T1 and 1: the backward solves stop
			// at 1 too, a difference of the order of the tolerance.
			saved := func(ts []float64, us, dl [][]float64) float64 {
				if len(ts) != 2 || len(us) != 2 || len(dl) != 2 || ts[0] != 3 || ts[1] != 1 {
					t.Fatalf("Saved sees %v and %d states, want Loss.At's [3 1]: not End's", ts, len(us))
				}
				return 0
			}
			for i, loss := range []ode.Loss[float64]{{End: end},
				{At: []float64{3, 1}, Point: func(i int, t float64, u, dLdu []float64) float64 { return 0 }, End: end},
				{At: []float64{3, 1}, Saved: saved, End: end}} {
				tol := 0.0
				if i > 0 {
					tol = 1e-7
				}
				got, err := ode.Gradient(ctx, prob, m, loss, s, ode.Tol(1e-9, 1e-11))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				checkRel(t, what+": L", got.Value, want.Value, tol)
				checkRels(t, what+": dL/dp", got.P, want.P, tol)
				checkRels(t, what+": dL/du0", got.U0, want.U0, tol)
				checkRel(t, what+": dL/dT0", got.T0, want.T0, tol)
				checkRel(t, what+": dL/dT1", got.T1, want.T1+u1, tol)
			}
		}
	}
}

// A save time after the impact is an error naming it, and so is a
// non-finite derivative from End.
func TestFirstPassageErrors(t *testing.T) {
	prob := fallingBall(10, 0)
	loss := firstPassage()
	loss.At = []float64{5}
	loss.Point = func(i int, t float64, u, dLdu []float64) float64 { return u[0] }
	nan := ode.Loss[float64]{End: func(t float64, u, dLdu []float64) (float64, float64) { return t, math.NaN() }}
	for _, s := range passageSens(ode.Vern7()) {
		_, err := ode.Gradient(context.Background(), prob, ode.Vern7(), loss, s, ode.Tol(1e-8, 1e-10))
		if err == nil || !strings.Contains(err.Error(), "Loss.At") {
			t.Errorf("%s: a save time after the impact: got %v, want an error naming Loss.At", s.Name(), err)
		}
		_, err = ode.Gradient(context.Background(), prob, ode.Vern7(), nan, s, ode.Tol(1e-8, 1e-10))
		if err == nil || !strings.Contains(err.Error(), "Loss.End") || !strings.Contains(err.Error(), "NaN") {
			t.Errorf("%s: End's dL/dt NaN: got %v, want an error naming Loss.End", s.Name(), err)
		}
	}
}

// A loss of End alone on a solve that does not reach its event: End reads
// T1, and backwards in time too.
func TestFirstPassageNotReached(t *testing.T) {
	prob := fallingBall(100, 0)
	prob.T1 = 2
	g := float64(prob.P[0])
	end := func(t float64, u, dLdu []float64) (float64, float64) {
		dLdu[0] = 1
		return t + u[0], 1
	}
	back := prob
	back.T0, back.T1 = 2, 0
	back.U0 = []float64{100 - g*2, -g * 2}
	for _, m := range forwardHybridMethods() {
		for _, s := range passageSens(m) {
			what := m.Name() + ", " + s.Name()
			r, err := ode.Gradient(context.Background(), prob, m, ode.Loss[float64]{End: end}, s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			// L = T1 + h0 + v0·T1 − g·T1²/2.
			checkRel(t, what+": L", r.Value, 2+100-2*g, 1e-9)
			checkRels(t, what+": dL/dp", r.P, []float64{-2, 0}, 1e-8)
			checkRels(t, what+": dL/du0", r.U0, []float64{1, 2}, 1e-8)
			checkRel(t, what+": dL/dT1", r.T1, 1-g*2, 1e-8)
			// Backwards from T0 = 2 to T1 = 0: L = 0 + h(0).
			r, err = ode.Gradient(context.Background(), back, m, ode.Loss[float64]{End: end}, s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s backwards: %v", what, err)
			}
			checkRel(t, what+" backwards: L", r.Value, 100, 1e-9)
			checkRels(t, what+" backwards: dL/du0", r.U0, []float64{1, -2}, 1e-8)
			checkRel(t, what+" backwards: dL/dT1", r.T1, 1, 1e-8)
		}
	}
}

// Warm gradients of a first-passage loss allocate nothing.
func TestFirstPassageAllocs(t *testing.T) {
	prob := fallingBall(10, 0)
	loss := ode.Loss[float64]{End: func(t float64, u, dLdu []float64) (float64, float64) {
		dLdu[1] = 2 * u[1]
		return t + u[1]*u[1], 1
	}}
	for _, m := range forwardHybridMethods() {
		for _, s := range passageSens(m) {
			gs, err := ode.NewGradientSolver(prob, m, s, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatal(err)
			}
			run := func() {
				if _, err := gs.Gradient(context.Background(), prob.P, loss); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if a := testing.AllocsPerRun(3, run); a != 0 {
				t.Errorf("%s, %s: %v allocations per warm gradient, want 0", m.Name(), s.Name(), a)
			}
		}
	}
}

// Loss.End on the hybrid cases, whose events and schedules fire before T1
// without ending the solve: End is their endLoss at T1, and reaches the
// same references by every method, as TestInterpolatingAdjointHybridCases.
func TestEndHybridCases(t *testing.T) {
	ctx := context.Background()
	for _, c := range hybridCases() {
		loss := ode.Loss[float64]{End: func(t float64, u, dLdu []float64) (float64, float64) {
			s := 0.0
			for k, w := range c.weights {
				s += w * u[k]
				dLdu[k] = w
			}
			return s, 0
		}}
		for _, m := range forwardHybridMethods() {
			for _, s := range passageSens(m) {
				what := c.name + ", " + m.Name() + ", " + s.Name()
				g, err := ode.Gradient(ctx, c.prob, m, loss, s, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				checkRel(t, what+": L", g.Value, c.value, c.tol)
				checkRels(t, what+": dL/dp", g.P, c.dp, c.tol)
				if c.du0 != nil {
					checkRels(t, what+": dL/du0", g.U0, c.du0, c.tol)
				}
			}
		}
	}
}

// A solver that took a loss with End and then one without gives the
// latter's gradient: nothing of End stays.
func TestEndSolverReuse(t *testing.T) {
	prob := predatorPrey()
	end := ode.Loss[float64]{End: func(t float64, u, dLdu []float64) (float64, float64) {
		dLdu[0] = 1
		return u[0], 5
	}}
	point := ode.Loss[float64]{At: []float64{3}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		dLdu[0] = 1
		return u[0]
	}}
	for _, s := range passageSens(ode.Vern7()) {
		want, err := ode.Gradient(context.Background(), prob, ode.Vern7(), point, s, ode.Tol(1e-9, 1e-11))
		if err != nil {
			t.Fatal(err)
		}
		gs, err := ode.NewGradientSolver(prob, ode.Vern7(), s, ode.Tol(1e-9, 1e-11))
		if err != nil {
			t.Fatal(err)
		}
		g, err := gs.Gradient(context.Background(), prob.P, end)
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, s.Name()+": End's dL/dT1", g.T1, want.T1+5, 1e-7)
		if g, err = gs.Gradient(context.Background(), prob.P, point); err != nil {
			t.Fatal(err)
		}
		checkRel(t, s.Name()+": then Point's L", g.Value, want.Value, 1e-7)
		checkRel(t, s.Name()+": then Point's dL/dT1", g.T1, want.T1, 1e-7)
		checkRels(t, s.Name()+": then Point's dL/dp", g.P, want.P, 1e-7)
	}
}
