package ode_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// withoutDerivs removes every derivative a hybrid problem gives, so that
// a gradient takes them by differences (FiniteDiff).
func withoutDerivs(p ode.Problem[float64]) ode.Problem[float64] {
	p.JVP, p.VJP, p.Jac = nil, nil, nil
	p.Events = append([]ode.Event[float64](nil), p.Events...)
	for j := range p.Events {
		e := &p.Events[j]
		e.CondGrad, e.EffectJVP, e.EffectVJP = nil, nil, nil
	}
	p.Schedules = append([]ode.Schedule[float64](nil), p.Schedules...)
	for k := range p.Schedules {
		s := &p.Schedules[k]
		s.EffectJVP, s.EffectVJP, s.TimesFromJac = nil, nil, nil
	}
	return p
}

// checkHybrid compares a gradient with a case's references, skipping NaN
// entries, each relative to itself.
func checkHybrid(t *testing.T, what string, c hybridCase, g *ode.GradientResult[float64], tol float64) {
	t.Helper()
	checkHybridScaled(t, what, c, g, tol, false)
}

// checkHybridScaled is checkHybrid, with the errors relative to the
// largest reference derivative when scaled is set: a lower order method's
// error in a small component is that of the whole gradient.
func checkHybridScaled(t *testing.T, what string, c hybridCase, g *ode.GradientResult[float64], tol float64, scaled bool) {
	t.Helper()
	scale := 1e-300
	if scaled {
		for _, v := range append(append([]float64(nil), c.dp...), c.du0...) {
			if !math.IsNaN(v) {
				scale = max(scale, math.Abs(v))
			}
		}
	}
	if e := math.Abs(g.Value-c.value) / math.Abs(c.value); e > tol {
		t.Errorf("%s: loss %.15g, want %.15g (relative error %.2g > %g)", what, g.Value, c.value, e, tol)
	}
	cmp := func(name string, got, want []float64) {
		for k, w := range want {
			if math.IsNaN(w) {
				continue
			}
			if e := math.Abs(got[k]-w) / max(math.Abs(w), scale); e > tol {
				t.Errorf("%s: %s[%d] = %.12g, want %.12g (relative error %.2g > %g)", what, name, k, got[k], w, e, tol)
			}
		}
	}
	cmp("dL/dp", g.P, c.dp)
	if c.du0 != nil {
		cmp("dL/du0", g.U0, c.du0)
	}
}

// DiscreteAdjoint through events and schedules reaches the references of
// every hybrid case, with an explicit and a Rosenbrock method, with the
// problems' derivatives and with differences in place of all of them,
// with and without checkpoints.
func TestDiscreteAdjointHybridCases(t *testing.T) {
	ctx := context.Background()
	for _, c := range hybridCases() {
		for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
			for _, fd := range []bool{false, true} {
				for _, ck := range []int{0, 4} {
					prob, tol := c.prob, c.tol
					if fd {
						prob = withoutDerivs(prob)
						tol = max(tol, 1e-7) // the differences of the derivatives
					}
					s := ode.DiscreteAdjoint{FiniteDiff: fd, Checkpoints: ck}
					g, err := ode.Gradient(ctx, prob, m, endLoss(c), s, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
					what := c.name + ", " + m.Name()
					if fd {
						what += ", FiniteDiff"
					}
					if ck > 0 {
						what += ", Checkpoints"
					}
					if err != nil {
						t.Errorf("%s: %v", what, err)
						continue
					}
					checkHybrid(t, what, c, g, tol)
				}
			}
		}
	}
}

// Tsit5 and Rosenbrock23 go through the same firings, at their own
// accuracy: errors relative to the largest derivative of each case.
func TestDiscreteAdjointHybridLowerOrder(t *testing.T) {
	for _, c := range hybridCases() {
		for _, m := range []ode.Method{ode.Tsit5(), ode.Rosenbrock23()} {
			tol, rtol := 1e-8, 1e-10
			if m.Name() == "Rosenbrock23" {
				tol, rtol = 1e-5, 1e-8
			}
			g, err := ode.Gradient(context.Background(), c.prob, m, endLoss(c), ode.DiscreteAdjoint{}, ode.Tol(rtol, rtol/100))
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, m.Name(), err)
			}
			checkHybridScaled(t, c.name+", "+m.Name(), c, g, max(tol, c.tol), true)
		}
	}
}

// A loss time equal to a dose time sees the state before the dose: the
// reverse pass goes through the dose's jump before it adds that time's
// dL/du⁻. The loss u(τ⁻) + u(5) of the dose-times case, in closed form,
// u(τ⁻) = u0·e^{−kτ}; its derivative in τ is the one with the loss time
// staying before the dose (τ moving later). The derivatives in k, d and
// u0 are also checked against central differences of ode.Solve.
func TestDiscreteAdjointLossAtDoseTime(t *testing.T) {
	ctx := context.Background()
	c := doseTimesCase()
	k, tau := float64(c.prob.P[0]), float64(c.prob.P[2])
	loss := ode.Loss[float64]{At: []float64{tau, c.prob.T1}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		dLdu[0] = 1
		return u[0]
	}}
	eb := math.Exp(-k * tau)
	want := c.value + eb
	wantP := []float64{c.dp[0] - tau*eb, c.dp[1], c.dp[2]}
	wantU0 := c.du0[0] + eb
	solveLoss := func(p []float32, u0 float64) float64 {
		pr := c.prob
		pr.P, pr.U0 = p, []float64{u0}
		sol, err := ode.Solve(ctx, pr, ode.Vern7(), ode.Tol(1e-12, 1e-14), ode.SaveAt(tau, c.prob.T1))
		if err != nil {
			t.Fatal(err)
		}
		return sol.U[0][0] + sol.U[1][0]
	}
	for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
		g, err := ode.Gradient(ctx, c.prob, m, loss, ode.DiscreteAdjoint{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatal(err)
		}
		if e := math.Abs(g.Value-want) / want; e > 1e-8 {
			t.Errorf("%s: loss %.15g, want %.15g", m.Name(), g.Value, want)
		}
		for i, w := range wantP {
			if e := math.Abs(g.P[i]-w) / math.Abs(w); e > 1e-8 {
				t.Errorf("%s: dL/dp[%d] = %.12g, want %.12g (relative error %.2g)", m.Name(), i, g.P[i], w, e)
			}
		}
		if e := math.Abs(g.U0[0]-wantU0) / wantU0; e > 1e-8 {
			t.Errorf("%s: dL/du0 = %.12g, want %.12g", m.Name(), g.U0[0], wantU0)
		}
	}
	// Central differences of the solve in k and d, Richardson-extrapolated.
	for i := range 2 {
		d := richardsonCD(c.prob.P, i, 1.0/1024, func(p []float32) float64 { return solveLoss(p, 1) })
		if e := math.Abs(d-wantP[i]) / math.Abs(wantP[i]); e > 1e-7 {
			t.Errorf("central difference in p[%d] = %.12g, closed form %.12g", i, d, wantP[i])
		}
	}
	d := (solveLoss(c.prob.P, 1+1e-4) - solveLoss(c.prob.P, 1-1e-4)) / 2e-4
	if e := math.Abs(d-wantU0) / wantU0; e > 1e-7 {
		t.Errorf("central difference in u0 = %.12g, closed form %.12g", d, wantU0)
	}
}

// richardsonCD is the derivative of f in p[i] by central differences with
// steps h and 2h, exact in float32, Richardson-extrapolated.
func richardsonCD(p []float32, i int, h float32, f func(p []float32) float64) float64 {
	cd := func(h float32) float64 {
		pp := append([]float32(nil), p...)
		pm := append([]float32(nil), p...)
		pp[i] += h
		pm[i] -= h
		return (f(pp) - f(pm)) / float64(pp[i]-pm[i])
	}
	return (4*cd(h) - cd(2*h)) / 3
}

// fixedDoses is the dose-times case with its doses at fixed times.
func fixedDoses() ode.Problem[float64] {
	p := doseTimesCase().prob
	s := p.Schedules[0]
	s.Times, s.TimesFrom, s.TimesFromJac = []float64{1.5, 3}, nil, nil
	p.Schedules = []ode.Schedule[float64]{s}
	return p
}

// With fixed steps and a schedule at fixed times, the steps do not depend
// on the parameters, so the discrete adjoint is the derivative of the
// solve itself: it matches central differences of the same fixed-step
// solve (Richardson-extrapolated in float32 parameters).
func TestDiscreteAdjointFixedStepSchedule(t *testing.T) {
	ctx := context.Background()
	prob := fixedDoses()
	at := []float64{1.5, 2.2, 5}
	loss := ode.Loss[float64]{At: at, Point: func(i int, t float64, u, dLdu []float64) float64 {
		w := float64(i + 1)
		dLdu[0] = 2 * w * u[0]
		return w * u[0] * u[0]
	}}
	for _, m := range []ode.Method{ode.RK4(), ode.Tsit5(), ode.Rodas5P()} {
		opts := []ode.GradientOption{ode.FixedStep(0.25)}
		g, err := ode.Gradient(ctx, prob, m, loss, ode.DiscreteAdjoint{}, opts...)
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		solve := func(p []float32, u0 float64) float64 {
			pr := prob
			pr.P, pr.U0 = p, []float64{u0}
			sol, err := ode.Solve(ctx, pr, m, ode.FixedStep(0.25), ode.SaveAt(at...))
			if err != nil {
				t.Fatal(err)
			}
			s := 0.0
			for i, u := range sol.U {
				s += float64(i+1) * u[0] * u[0]
			}
			return s
		}
		if v := solve(prob.P, 1); math.Abs(v-g.Value) > 1e-14*math.Abs(v) {
			t.Errorf("%s: loss %.17g, the solve's %.17g", m.Name(), g.Value, v)
		}
		tol := 1e-9
		if m.Name() == "Rodas5P" {
			tol = 1e-7 // W's derivative by differences
		}
		for i := range 2 {
			d := richardsonCD(prob.P, i, 1.0/2048, func(p []float32) float64 { return solve(p, 1) })
			if e := math.Abs(d-g.P[i]) / math.Abs(d); e > tol {
				t.Errorf("%s: dL/dp[%d] = %.12g, central differences %.12g (relative %.2g)", m.Name(), i, g.P[i], d, e)
			}
		}
		h := 1e-5
		d := (solve(prob.P, 1+h) - solve(prob.P, 1-h)) / (2 * h)
		if e := math.Abs(d-g.U0[0]) / math.Abs(d); e > tol {
			t.Errorf("%s: dL/du0 = %.12g, central differences %.12g (relative %.2g)", m.Name(), g.U0[0], d, e)
		}
	}
}

// terminalDecay is u' = −k·u, u(0) = 1, ending when u falls to c: with
// the running cost ∫u dt, L = (1 − c)/k, dL/dk = −(1 − c)/k², dL/dc = −1/k.
func terminalDecay() ode.Problem[float64] {
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0] = -float64(p[0]) * u[0] },
		U0: []float64{1}, T1: 10, P: []float32{0.5, 0.25},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[0] -= float64(p[0]) * w[0]
			if dp != nil {
				dp[0] -= u[0] * w[0]
			}
		},
		Events: []ode.Event[float64]{{
			Cond: func(u []float64, p []float32, t float64) float64 { return u[0] - float64(p[1]) },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 {
				du[0]++
				if dp != nil {
					dp[1]--
				}
				return 0
			},
		}},
	}
}

// A terminating event: the running cost stops at the event time, which
// moves with the parameters; dL/dT1 is 0; loss times after it are an
// error.
func TestDiscreteAdjointTerminatingEvent(t *testing.T) {
	ctx := context.Background()
	prob := terminalDecay()
	k, c := float64(prob.P[0]), float64(prob.P[1])
	loss := ode.Loss[float64]{
		Running: func(u []float64, p []float32, t float64) float64 { return u[0] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) {
			du[0]++
		},
	}
	for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
		for _, ck := range []int{0, 3} {
			g, err := ode.Gradient(ctx, prob, m, loss, ode.DiscreteAdjoint{Checkpoints: ck}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
			want := []float64{-(1 - c) / (k * k), -1 / k}
			if e := math.Abs(g.Value-(1-c)/k) / ((1 - c) / k); e > 1e-8 {
				t.Errorf("%s: loss %.15g, want %.15g", m.Name(), g.Value, (1-c)/k)
			}
			for i, w := range want {
				if e := math.Abs(g.P[i]-w) / math.Abs(w); e > 1e-8 {
					t.Errorf("%s, Checkpoints %d: dL/dp[%d] = %.12g, want %.12g (relative %.2g)", m.Name(), ck, i, g.P[i], w, e)
				}
			}
			// dL/du0: τ = ln(u0/c)/k, L = (u0 − c)/k.
			if e := math.Abs(g.U0[0]-1/k) * k; e > 1e-8 {
				t.Errorf("%s: dL/du0 = %.12g, want %.12g", m.Name(), g.U0[0], 1/k)
			}
			if g.T1 != 0 {
				t.Errorf("%s: dL/dT1 = %g, want 0 after a terminating event", m.Name(), g.T1)
			}
		}
	}
	late := ode.Loss[float64]{At: []float64{1, 9}, Point: func(i int, t float64, u, dLdu []float64) float64 { return 0 }}
	_, err := ode.Gradient(ctx, prob, ode.Tsit5(), late, ode.DiscreteAdjoint{})
	if err == nil || !strings.Contains(err.Error(), "Loss.At time 9") {
		t.Errorf("a loss time after the terminating event: error %v, want one naming Loss.At time 9", err)
	}
}

// Simultaneous firings, tangential crossings and BDF are errors.
func TestDiscreteAdjointHybridRefusals(t *testing.T) {
	ctx := context.Background()
	c := doseTimesCase()
	if _, err := ode.Gradient(ctx, c.prob, ode.BDF(), endLoss(c), ode.DiscreteAdjoint{}); err == nil || !strings.Contains(err.Error(), "not BDF") {
		t.Errorf("BDF: error %v, want DiscreteAdjoint's refusal of BDF", err)
	}
	prob := c.prob
	s := prob.Schedules[0]
	prob.Schedules = []ode.Schedule[float64]{s, s}
	_, err := ode.Gradient(ctx, prob, ode.Tsit5(), endLoss(c), ode.DiscreteAdjoint{})
	if err == nil || !strings.Contains(err.Error(), "fire together") {
		t.Errorf("two schedules at the same times: error %v, want one about firing together", err)
	}
	// u' = 2(1 − t), u(0) = 0: u = 1 − (1 − t)² touches 1 at t = 1 only.
	tang := ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0] = 2 * (1 - t) * float64(p[0]) },
		U0: []float64{0}, T1: 2, P: []float32{1},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) { dp[0] += 2 * (1 - t) * w[0] },
		Events: []ode.Event[float64]{{
			Cond:     func(u []float64, p []float32, t float64) float64 { return t - 1 },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 { return 0 },
			Effect:   func(u []float64, p []float32, t float64) bool { return false },
			EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
				copy(jv, v)
			},
			EffectVJP: func(du, dp, w, u []float64, p []float32, t float64) float64 {
				du[0] += w[0]
				return 0
			},
		}},
	}
	_, err = ode.Gradient(ctx, tang, ode.Tsit5(), ode.Loss[float64]{At: []float64{2}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		dLdu[0] = 1
		return u[0]
	}}, ode.DiscreteAdjoint{})
	if err == nil || !strings.Contains(err.Error(), "transversal") {
		t.Errorf("a tangential crossing: error %v, want one asking for a transversal crossing", err)
	}
}

// Warm gradients through events and schedules allocate nothing.
func TestDiscreteAdjointHybridAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	for _, c := range []hybridCase{ballCase(), doseTimesCase()} {
		for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
			gs, err := ode.NewGradientSolver(c.prob, m, ode.DiscreteAdjoint{}, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatal(err)
			}
			loss := endLoss(c)
			run := func() {
				if _, err := gs.Gradient(ctx, c.prob.P, loss); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if a := testing.AllocsPerRun(5, run); a != 0 {
				t.Errorf("%s, %s: %g allocations per warm gradient, want 0", c.name, m.Name(), a)
			}
		}
	}
}

// A running cost through an event: L = ∫₀¹⁰ N dt of the dosing case,
// p₁(10 − ¾) + (p₂ − p₁/4)(1 − e^{τ−10}) with τ = ln 4. The integrand
// jumps at τ, which the reverse pass takes with the jump: τ moves with
// N(0), by −1/p₁, and dL/dN(0) = 1 + (p₂ − p₁/4)e^{τ−10}/p₁.
func TestDiscreteAdjointRunningCostThroughEvent(t *testing.T) {
	c := dosingCase()
	p1, p2 := float64(c.prob.P[0]), float64(c.prob.P[1])
	e := math.Exp(math.Log(4) - 10)
	want := p1*9.25 + (p2-p1/4)*(1-e)
	wantP := []float64{9.25 - (1-e)/4, 1 - e}
	wantU0 := 1 + (p2-p1/4)*e/p1
	loss := ode.Loss[float64]{
		Running:         func(u []float64, p []float32, t float64) float64 { return u[0] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[0]++ },
	}
	for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
		for _, ck := range []int{0, 3} {
			g, err := ode.Gradient(context.Background(), c.prob, m, loss, ode.DiscreteAdjoint{Checkpoints: ck}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
			if r := math.Abs(g.Value-want) / want; r > 1e-8 {
				t.Errorf("%s: loss %.15g, want %.15g", m.Name(), g.Value, want)
			}
			for i, w := range wantP {
				if r := math.Abs(g.P[i]-w) / math.Abs(w); r > 1e-8 {
					t.Errorf("%s, Checkpoints %d: dL/dp[%d] = %.12g, want %.12g (relative %.2g)", m.Name(), ck, i, g.P[i], w, r)
				}
			}
			if r := math.Abs(g.U0[0]-wantU0) / wantU0; r > 1e-8 {
				t.Errorf("%s, Checkpoints %d: dL/du0 = %.12g, want %.12g (relative %.2g)", m.Name(), ck, g.U0[0], wantU0, r)
			}
		}
	}
}

// Backward in time, the doses fire in the other order; the gradient
// matches central differences of the solve.
func TestDiscreteAdjointScheduleBackward(t *testing.T) {
	ctx := context.Background()
	prob := fixedDoses()
	prob.T0, prob.T1 = 5, 0
	loss := ode.Loss[float64]{At: []float64{0, 2}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		dLdu[0] = 2 * u[0]
		return u[0] * u[0]
	}}
	solve := func(p []float32, u0 float64) float64 {
		pr := prob
		pr.P, pr.U0 = p, []float64{u0}
		sol, err := ode.Solve(ctx, pr, ode.Vern7(), ode.Tol(1e-12, 1e-14), ode.SaveAt(0, 2))
		if err != nil {
			t.Fatal(err)
		}
		return sol.U[0][0]*sol.U[0][0] + sol.U[1][0]*sol.U[1][0]
	}
	for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
		g, err := ode.Gradient(ctx, prob, m, loss, ode.DiscreteAdjoint{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		for i := range 2 {
			d := richardsonCD(prob.P, i, 1.0/2048, func(p []float32) float64 { return solve(p, 1) })
			if r := math.Abs(d-g.P[i]) / math.Abs(d); r > 1e-7 {
				t.Errorf("%s: dL/dp[%d] = %.12g, central differences %.12g (relative %.2g)", m.Name(), i, g.P[i], d, r)
			}
		}
		d := (solve(prob.P, 1+1e-5) - solve(prob.P, 1-1e-5)) / 2e-5
		if r := math.Abs(d-g.U0[0]) / math.Abs(d); r > 1e-7 {
			t.Errorf("%s: dL/du0 = %.12g, central differences %.12g", m.Name(), g.U0[0], d)
		}
	}
}
