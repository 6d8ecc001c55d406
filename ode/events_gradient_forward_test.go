package ode_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// ForwardSensitivity through events and schedules, against the hybrid
// cases' references (events_gradient_problems_test.go) and central
// differences of solves.

// forwardHybridMethods are the methods the hybrid gradients are checked with.
func forwardHybridMethods() []ode.Method {
	return []ode.Method{ode.Vern7(), ode.Rodas5P(), ode.BDF()}
}

// withoutDerivs is c's problem without the derivatives of its right-hand
// side, events and schedules, for the finite-difference path.
func withoutDerivs(prob ode.Problem[float64]) ode.Problem[float64] {
	prob.JVP, prob.VJP, prob.Jac = nil, nil, nil
	evs := append([]ode.Event[float64](nil), prob.Events...)
	for j := range evs {
		evs[j].CondGrad, evs[j].EffectJVP, evs[j].EffectVJP = nil, nil, nil
	}
	prob.Events = evs
	ss := append([]ode.Schedule[float64](nil), prob.Schedules...)
	for k := range ss {
		ss[k].EffectJVP, ss[k].EffectVJP, ss[k].TimesFromJac = nil, nil, nil
	}
	prob.Schedules = ss
	return prob
}

// checkRel fails when got differs from want by more than tol relative;
// a NaN want is not checked, and a zero want is checked absolutely.
func checkRel(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(want) {
		return
	}
	scale := math.Abs(want)
	if scale == 0 {
		scale = 1
	}
	if e := math.Abs(got-want) / scale; !(e <= tol) {
		t.Errorf("%s = %.15g, want %.15g (relative error %.2g > %g)", what, got, want, e, tol)
	}
}

// Every hybrid case's loss and gradient by ForwardSensitivity with an
// explicit method, Rodas5P and BDF, from the exact derivatives and from
// differences.
func TestForwardSensitivityHybridCases(t *testing.T) {
	ctx := context.Background()
	for _, c := range hybridCases() {
		for _, fd := range []bool{false, true} {
			prob, tol := c.prob, c.tol
			if fd {
				prob = withoutDerivs(prob)
				tol = max(tol, 1e-6) // central differences in float32 parameters
			}
			for _, m := range forwardHybridMethods() {
				name := c.name + ", " + m.Name()
				if fd {
					name += ", FiniteDiff"
				}
				g, err := ode.Gradient(ctx, prob, m, endLoss(c), ode.ForwardSensitivity{FiniteDiff: fd},
					ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				tol := methodTol(m, tol)
				checkRel(t, name+": loss", g.Value, c.value, tol)
				for k, want := range c.dp {
					checkRel(t, name+": dL/dp["+strconv.Itoa(k)+"]", float64(g.P[k]), want, tol)
				}
				for k, want := range c.du0 {
					checkRel(t, name+": dL/du0["+strconv.Itoa(k)+"]", float64(g.U0[k]), want, tol)
				}
				// Sens at T1 holds the jumped sensitivities: the loss's
				// gradient is wᵀ·S.
				n := len(c.prob.U0)
				for k := range c.dp {
					s := 0.0
					for i, w := range c.weights {
						s += w * g.Sens[0][k*n+i]
					}
					checkRel(t, name+": wᵀ·Sens column "+strconv.Itoa(k), s, c.dp[k], tol)
				}
			}
		}
	}
}

// solveCentralDiff is the gradient of a loss of the solution of prob by
// central differences of ode.Solve, in each parameter and each component
// of U0: the reference of the hybrid gradient tests. The loss is
// loss.Point or loss.Saved at loss.At (Running is not supported). A
// parameter is stepped by rel·|p_k| (rel·1 at zero), rounded to float32,
// and the quotient takes the rounded step; a component of U0 by rel·max(|u0|, 1).
// Solves take opts; the nominal value is returned too.
func solveCentralDiff(t *testing.T, prob ode.Problem[float64], m ode.Method, loss ode.Loss[float64], rel float64, opts ...ode.SolveOption) (value float64, dp, du0 []float64) {
	t.Helper()
	eval := func(pr ode.Problem[float64]) float64 {
		o := append([]ode.SolveOption{ode.SaveAt(loss.At...)}, opts...)
		sol, err := ode.Solve(context.Background(), pr, m, o...)
		if err != nil {
			t.Fatalf("solveCentralDiff: %v", err)
		}
		if len(sol.U) != len(loss.At) {
			t.Fatalf("solveCentralDiff: %d saved states, want one per Loss.At time (%d)", len(sol.U), len(loss.At))
		}
		n := len(pr.U0)
		dl := make([][]float64, len(loss.At))
		for i := range dl {
			dl[i] = make([]float64, n)
		}
		// Solve saves in ascending time; loss.At is taken in that order.
		switch {
		case loss.Saved != nil:
			return loss.Saved(sol.T, sol.U, dl)
		case loss.Point != nil:
			v := 0.0
			for i := range sol.U {
				v += loss.Point(i, sol.T[i], sol.U[i], dl[i])
			}
			return v
		}
		t.Fatalf("solveCentralDiff: the loss has neither Point nor Saved")
		return 0
	}
	value = eval(prob)
	dp = make([]float64, len(prob.P))
	for k, p := range prob.P {
		h := rel * max(math.Abs(float64(p)), 1)
		pp := append([]float32(nil), prob.P...)
		hi, lo := float32(float64(p)+h), float32(float64(p)-h)
		pp[k] = hi
		q := prob
		q.P = pp
		fp := eval(q)
		pm := append([]float32(nil), prob.P...)
		pm[k] = lo
		q.P = pm
		fm := eval(q)
		dp[k] = (fp - fm) / (float64(hi) - float64(lo))
	}
	du0 = make([]float64, len(prob.U0))
	for j, u := range prob.U0 {
		h := rel * max(math.Abs(u), 1)
		up := append([]float64(nil), prob.U0...)
		um := append([]float64(nil), prob.U0...)
		up[j], um[j] = u+h, u-h
		q := prob
		q.U0 = up
		fp := eval(q)
		q.U0 = um
		fm := eval(q)
		du0[j] = (fp - fm) / (2 * h)
	}
	return value, dp, du0
}

// A Loss.At time equal to a dose time sees the state before the dose, and
// its sensitivities before the jump: doseTimesCase with At = {τ, T1} and
// L = 3·u(τ) + u(T1).
func TestForwardSensitivitySaveAtDose(t *testing.T) {
	c := doseTimesCase()
	tau := float64(c.prob.P[2])
	k := float64(c.prob.P[0])
	loss := ode.Loss[float64]{At: []float64{tau, c.prob.T1}, Point: func(i int, ti float64, u, dLdu []float64) float64 {
		w := 1.0
		if i == 0 {
			w = 3
		}
		dLdu[0] = w
		return w * u[0]
	}}
	// u(τ⁻) = e^{−kτ} does not move with the dose time τ while the dose
	// stays after the save time: dL/dτ is the one-sided derivative, that
	// of u(T1) alone. Central differences hold for k, d and u0.
	before := math.Exp(-k * tau)
	wantP := []float64{c.dp[0] - 3*tau*before, c.dp[1], c.dp[2]}
	wantU0 := 3*before + c.du0[0]
	for _, m := range forwardHybridMethods() {
		v, dp, du0 := solveCentralDiff(t, c.prob, m, loss, 1e-4, ode.Tol(1e-11, 1e-13))
		g, err := ode.Gradient(context.Background(), c.prob, m, loss, ode.ForwardSensitivity{},
			ode.Tol(1e-10, 1e-12), ode.TStops(loss.At...))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		name := m.Name()
		checkRel(t, name+": loss", g.Value, 3*before+c.value, 1e-8)
		checkRel(t, name+": loss of the solves", v, 3*before+c.value, 1e-8)
		checkRel(t, name+": Sens at τ (before the dose), ∂u/∂d", g.Sens[0][1], 0, 1e-10)
		for j := 0; j < 2; j++ {
			checkRel(t, name+": dL/dp["+strconv.Itoa(j)+"]", float64(g.P[j]), wantP[j], 1e-8)
			checkRel(t, name+": dL/dp["+strconv.Itoa(j)+"] against central differences", float64(g.P[j]), dp[j], 1e-6)
		}
		checkRel(t, name+": dL/dτ", float64(g.P[2]), wantP[2], 1e-8)
		checkRel(t, name+": dL/du0", float64(g.U0[0]), wantU0, 1e-8)
		checkRel(t, name+": dL/du0 against central differences", float64(g.U0[0]), du0[0], 1e-6)
	}
}

// A running cost through the bouncing ball's impacts: ∫ v dt = h(T1) − h(0),
// so its gradient is the ball's, less 1 in h(0). The quadratures jump with
// the integrand at each impact.
func TestForwardSensitivityHybridRunning(t *testing.T) {
	c := ballCase()
	loss := ode.Loss[float64]{
		Running:         func(u []float64, p []float32, t float64) float64 { return u[1] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[1]++ },
	}
	for _, m := range forwardHybridMethods() {
		g, err := ode.Gradient(context.Background(), c.prob, m, loss, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		checkRel(t, m.Name()+": loss", g.Value, c.value-50, 1e-6)
		checkRel(t, m.Name()+": dL/de", float64(g.P[0]), c.dp[0], 1e-6)
		checkRel(t, m.Name()+": dL/dh0", float64(g.U0[0]), c.du0[0]-1, 1e-6)
	}
}

// terminatingBall is the ball whose first impact ends the solve.
func terminatingBall() ode.Problem[float64] {
	prob := ballCase().prob
	prob.Events = append([]ode.Event[float64](nil), prob.Events...)
	prob.Events[0].Effect = func(u []float64, p []float32, t float64) bool { u[1] *= -float64(p[0]); return true }
	return prob
}

// A terminating impact: ∫ v dt up to it is −h(0), whatever e, and the
// integral's end moves with h(0) (the running cost's jump is g(u⁻)·dτ
// there, with nothing after). dL/dT1 is 0.
func TestForwardSensitivityTerminating(t *testing.T) {
	prob := terminatingBall()
	loss := ode.Loss[float64]{
		Running:         func(u []float64, p []float32, t float64) float64 { return u[1] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[1]++ },
	}
	for _, m := range forwardHybridMethods() {
		g, err := ode.Gradient(context.Background(), prob, m, loss, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		checkRel(t, m.Name()+": loss", g.Value, -50, 1e-8)
		checkRel(t, m.Name()+": dL/de", float64(g.P[0]), 0, 1e-8)
		checkRel(t, m.Name()+": dL/dh0", float64(g.U0[0]), -1, 1e-8)
		checkRel(t, m.Name()+": dL/dv0", float64(g.U0[1]), 0, 1e-8)
		checkRel(t, m.Name()+": dL/dT1", g.T1, 0, 0)
	}
	// A save time after the impact is not reached.
	at := ode.Loss[float64]{At: []float64{1, 15}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		dLdu[0] = 1
		return u[0]
	}}
	_, err := ode.Gradient(context.Background(), prob, ode.Vern7(), at, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
	if err == nil || !strings.Contains(err.Error(), "Loss.At") || !strings.Contains(err.Error(), "terminating") {
		t.Errorf("save time after a terminating event: got %v, want an error naming the Loss.At times not reached", err)
	}
	// A save time before it is.
	at.At = []float64{1}
	g, err := ode.Gradient(context.Background(), prob, ode.Vern7(), at, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "h(1)", g.Value, 50-9.8/2, 1e-9)
	checkRel(t, "dh(1)/dh0", float64(g.U0[0]), 1, 1e-9)
}

// Two schedule entries at the same time: a clear error, even when their
// effects commute.
func TestForwardSensitivitySimultaneous(t *testing.T) {
	c := doseTimesCase()
	prob := c.prob
	extra := prob.Schedules[0]
	extra.Times, extra.TimesFrom, extra.TimesFromJac = []float64{float64(prob.P[2])}, nil, nil
	prob.Schedules = append(append([]ode.Schedule[float64](nil), prob.Schedules...), extra)
	_, err := ode.Gradient(context.Background(), prob, ode.Vern7(), endLoss(c), ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
	if err == nil || !strings.Contains(err.Error(), "Problem.Schedules[0] and Problem.Schedules[1] fire together") ||
		!strings.Contains(err.Error(), "simultaneous firings are not supported") {
		t.Errorf("got %v, want the error of simultaneous firings", err)
	}
}

// Warm gradients of a hybrid problem allocate nothing.
func TestForwardSensitivityHybridAllocs(t *testing.T) {
	for _, c := range hybridCases() {
		for _, m := range forwardHybridMethods() {
			gs, err := ode.NewGradientSolver(c.prob, m, ode.ForwardSensitivity{}, ode.Tol(1e-8, 1e-10))
			if err != nil {
				t.Fatal(err)
			}
			loss := endLoss(c)
			ctx := context.Background()
			run := func() {
				if _, err := gs.Gradient(ctx, c.prob.P, loss); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if a := testing.AllocsPerRun(3, run); a != 0 {
				t.Errorf("%s, %s: %v allocations per warm gradient, want 0", c.name, m.Name(), a)
			}
		}
	}
}

// inStructure is the switch case or the dose-times case with its Jacobian
// in a band or sparse structure, with Jac in that storage or without Jac.
func inStructure(t *testing.T, c hybridCase, band, jac bool) ode.Problem[float64] {
	prob := c.prob
	n := len(prob.U0)
	dense := prob.Jac
	full := make([]float64, n*n)
	// The band and the pattern hold the diagonal and the first upper
	// diagonal: the switch case's one entry, ∂y'/∂s, is (1, 2).
	if band {
		prob.JacStructure = ode.BandJacobian{Lower: 0, Upper: 1}
		prob.Jac = func(J []float64, u []float64, p []float32, t float64) {
			dense(full, u, p, t)
			clear(J)
			for i := range n {
				for j := i; j <= i+1 && j < n; j++ {
					J[i*2+j-i] = full[i*n+j]
				}
			}
		}
	} else {
		var es []linalg.Entry
		for i := range n {
			for j := i; j <= i+1 && j < n; j++ {
				es = append(es, linalg.Entry{Row: i, Col: j})
			}
		}
		pat, err := linalg.NewPattern(n, n, es)
		if err != nil {
			t.Fatal(err)
		}
		prob.JacStructure = ode.SparseJacobian{Pattern: pat}
		prob.Jac = func(J []float64, u []float64, p []float32, t float64) {
			dense(full, u, p, t)
			for i := range n {
				for x, j := range pat.Row(i) {
					J[pat.RowPtr[i]+x] = full[i*n+j]
				}
			}
		}
	}
	if !jac {
		prob.Jac = nil
	}
	return prob
}

// methodTol is tol, or larger for the methods that locate an event's time
// less precisely at rtol 1e-10: on the dosing case ∂N(10)/∂p₂ =
// e^{−(10−τ)} carries the error of the event time τ, relatively,
// 1.7e-8 with BDF and 7e-7 with Rosenbrock23 (their plain solves place τ
// within 1.1e-9 and 6.6e-8 of ln 4; Vern7 within 8e-14).
func methodTol(m ode.Method, tol float64) float64 {
	switch m.Name() {
	case ode.Rosenbrock23().Name():
		return max(tol, 1e-6)
	case ode.BDF().Name():
		return max(tol, 5e-8)
	}
	return tol
}

// The stiff methods in a band and a sparse structure, with Jac and from
// JVP; Tsit5 and Rosenbrock23 on every case; Rodas5P and BDF matrix-free.
func TestForwardSensitivityHybridStructures(t *testing.T) {
	ctx := context.Background()
	for _, c := range []hybridCase{switchCase(), doseTimesCase()} {
		for _, band := range []bool{true, false} {
			for _, jac := range []bool{true, false} {
				prob := inStructure(t, c, band, jac)
				for _, m := range []ode.Method{ode.Rodas5P(), ode.Rosenbrock23(), ode.BDF()} {
					name := c.name + ", " + m.Name() + ", " + prob.JacStructure.String()
					if !jac {
						name += " without Jac"
					}
					g, err := ode.Gradient(ctx, prob, m, endLoss(c), ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					for k, want := range c.dp {
						checkRel(t, name+": dL/dp["+strconv.Itoa(k)+"]", float64(g.P[k]), want, methodTol(m, c.tol))
					}
				}
			}
		}
	}
	for _, c := range hybridCases() {
		for _, m := range []ode.Method{ode.Tsit5(), ode.Rosenbrock23()} {
			g, err := ode.Gradient(ctx, c.prob, m, endLoss(c), ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
			if err != nil {
				t.Errorf("%s, %s: %v", c.name, m.Name(), err)
				continue
			}
			tol := methodTol(m, c.tol)
			for k, want := range c.dp {
				checkRel(t, c.name+", "+m.Name()+": dL/dp["+strconv.Itoa(k)+"]", float64(g.P[k]), want, tol)
			}
		}
	}
	// Matrix-free, by GMRES, on every case.
	for _, c := range hybridCases() {
		prob := c.prob
		prob.JacStructure = ode.MatrixFreeJacobian{}
		for _, m := range []ode.Method{ode.Rodas5PMethod{Linear: ode.GMRES{}}, ode.BDFMethod{Linear: ode.GMRES{}}} {
			name := c.name + ", " + m.Name() + ", matrix-free"
			g, err := ode.Gradient(ctx, prob, m, endLoss(c), ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			for k, want := range c.dp {
				// GMRES's inexact solves move the event time as BDF does.
				checkRel(t, name+": dL/dp["+strconv.Itoa(k)+"]", float64(g.P[k]), want, max(c.tol, 5e-8))
			}
		}
	}
}

// The initial state from the parameters, with a dose at T0: the dose-times
// case with u0 = d/2 and a third dose at t = 0, fixed. In closed form
// u(5) = (u0 + d)·e^{−5k} + d·e^{−k(5−τ)} + d·e^{−k(5−2τ)}, so
// dL/dd = (3/2)·e^{−5k} + e^{−k(5−τ)} + e^{−k(5−2τ)}.
func TestForwardSensitivityHybridU0From(t *testing.T) {
	c := doseTimesCase()
	prob := c.prob
	prob.U0From = func(u0 []float64, p []float32) { u0[0] = float64(p[1]) / 2 }
	prob.U0FromVJP = func(dp, w []float64, p []float32) { dp[1] += w[0] / 2 }
	first := prob.Schedules[0]
	first.Times, first.TimesFrom, first.TimesFromJac = []float64{0}, nil, nil
	prob.Schedules = append([]ode.Schedule[float64]{first}, prob.Schedules...)
	k, d, tau := float64(prob.P[0]), float64(prob.P[1]), float64(prob.P[2])
	e0, e1, e2 := math.Exp(-5*k), math.Exp(-k*(5-tau)), math.Exp(-k*(5-2*tau))
	u0 := d / 2
	value := (u0+d)*e0 + d*e1 + d*e2
	wantP := []float64{-5*(u0+d)*e0 - d*(5-tau)*e1 - d*(5-2*tau)*e2, 1.5*e0 + e1 + e2, d*k*e1 + 2*d*k*e2}
	for _, fd := range []bool{false, true} {
		pr := prob
		if fd {
			pr = withoutDerivs(prob)
		}
		for _, m := range forwardHybridMethods() {
			name := m.Name()
			if fd {
				name += ", FiniteDiff"
			}
			g, err := ode.Gradient(context.Background(), pr, m, endLoss(c), ode.ForwardSensitivity{FiniteDiff: fd}, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkRel(t, name+": loss", g.Value, value, 1e-8)
			for j, want := range wantP {
				checkRel(t, name+": dL/dp["+strconv.Itoa(j)+"]", float64(g.P[j]), want, 1e-7)
			}
			checkRel(t, name+": dL/du0", float64(g.U0[0]), e0, 1e-7)
		}
	}
}

// A condition whose time derivative at the crossing is zero, as its
// CondGrad says, has no derivative of its time: prepare's error is the
// gradient's.
func TestForwardSensitivityTangential(t *testing.T) {
	c := dosingCase()
	prob := c.prob
	prob.Events = append([]ode.Event[float64](nil), prob.Events...)
	prob.Events[0].CondGrad = func(du, dp []float64, u []float64, p []float32, t float64) float64 { return 0 }
	_, err := ode.Gradient(context.Background(), prob, ode.Vern7(), endLoss(c), ode.ForwardSensitivity{}, ode.Tol(1e-8, 1e-10))
	if err == nil || !strings.Contains(err.Error(), "transversal") {
		t.Errorf("got %v, want the error of a tangential crossing", err)
	}
}

// BenchmarkForwardSensitivityHybrid is a warm gradient of the dosing and
// the ball cases.
func BenchmarkForwardSensitivityHybrid(b *testing.B) {
	for _, c := range []hybridCase{dosingCase(), ballCase()} {
		for _, m := range forwardHybridMethods() {
			b.Run(c.name+"/"+m.Name(), func(b *testing.B) { benchHybrid(b, c, m, ode.ForwardSensitivity{}) })
		}
	}
}

// Backwards in time, against central differences of solves: the dose-times
// case from t = 5 down to 0, and the dosing case from N(10) = 90 down to
// 0 (its event now fires as N falls through 3p₁/4 going back).
func TestForwardSensitivityHybridBackwards(t *testing.T) {
	for _, c := range []hybridCase{doseTimesCase(), dosingCase()} {
		prob := c.prob
		prob.T0, prob.T1 = c.prob.T1, 0
		if c.name == "dosing" {
			prob.U0 = []float64{90}
			prob.Events = append([]ode.Event[float64](nil), prob.Events...)
			prob.Events[0].Direction = 0
		}
		loss := ode.Loss[float64]{At: []float64{0}, Point: func(i int, t float64, u, dLdu []float64) float64 {
			dLdu[0] = 1
			return u[0]
		}}
		for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
			v, dp, du0 := solveCentralDiff(t, prob, m, loss, 1e-4, ode.Tol(1e-11, 1e-13))
			g, err := ode.Gradient(context.Background(), prob, m, loss, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, m.Name(), err)
			}
			name := c.name + " backwards, " + m.Name()
			checkRel(t, name+": loss", g.Value, v, 1e-8)
			for k := range dp {
				checkRel(t, name+": dL/dp["+strconv.Itoa(k)+"]", float64(g.P[k]), dp[k], 1e-6)
			}
			checkRel(t, name+": dL/du0", float64(g.U0[0]), du0[0], 1e-6)
		}
	}
}

// ForwardSensitivity with Rodas5P and FiniteDiff: the augmented
// Jacobian's coupling columns are differences of difference products, so
// their step is ∛ε, not √ε. With √ε their noise (ε^⅙) cost 15–200× the
// steps of the exact products (dosing 3664 against 180); the bar here is
// 4×, with and without the events. The ball and the switch are left out:
// their pieces are polynomials, which Rodas5P integrates exactly with the
// exact J in 9–14 steps, and any error in J costs steps there (the ball
// takes 152 without events, against 2661 before).
func TestForwardSensitivityFiniteDiffRosenbrockSteps(t *testing.T) {
	// The dose-times case also in band and sparse structures, whose
	// solves take the coupling products by differences of their own
	// (augSys.product; with √ε, 1566 steps against 89 with the events).
	type structured struct {
		c          hybridCase
		band, used bool
	}
	cases := []structured{{c: dosingCase()}, {c: doseTimesCase()}, {c: doseTimesCase(), band: true, used: true}, {c: doseTimesCase(), used: true}}
	for _, sc := range cases {
		c := sc.c
		for _, events := range []bool{true, false} {
			exact := c.prob
			name := c.name
			if sc.used {
				exact = inStructure(t, c, sc.band, true)
				name += ", " + exact.JacStructure.String()
			}
			if !events {
				exact.Events, exact.Schedules = nil, nil
			}
			fd := withoutDerivs(exact)
			fd.JVP, fd.VJP, fd.Jac = nil, nil, nil
			grad := func(prob ode.Problem[float64], s ode.ForwardSensitivity) *ode.GradientResult[float64] {
				g, err := ode.Gradient(context.Background(), prob, ode.Rodas5P(), endLoss(c), s, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
				if err != nil {
					t.Fatalf("%s (events %v): %v", name, events, err)
				}
				return g
			}
			ga, gb := grad(exact, ode.ForwardSensitivity{}), grad(fd, ode.ForwardSensitivity{FiniteDiff: true})
			a, b := ga.Forward.Accepted+ga.Forward.Rejected, gb.Forward.Accepted+gb.Forward.Rejected
			if b > 4*a {
				t.Errorf("%s (events %v): %d step attempts with FiniteDiff, %d with the exact products; want at most 4×", name, events, b, a)
			}
			for k := range ga.P {
				checkRel(t, name+": dL/dp["+strconv.Itoa(k)+"] by FiniteDiff", float64(gb.P[k]), float64(ga.P[k]), 1e-6)
			}
		}
	}
}
