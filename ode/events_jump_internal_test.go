package ode

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// jumpProblem is a small problem with one event and one schedule whose
// condition and effects are nonlinear in u, p and t, with exact
// derivatives.
func jumpProblem() Problem[float64] {
	f := func(du, u []float64, p []float32, t float64) {
		du[0] = u[1]
		du[1] = -float64(p[0])*u[0] + t
	}
	cond := func(u []float64, p []float32, t float64) float64 {
		return u[0]*u[0] - float64(p[1])*u[1] + 0.1*t*t
	}
	condGrad := func(du, dp []float64, u []float64, p []float32, t float64) float64 {
		du[0] += 2 * u[0]
		du[1] -= float64(p[1])
		if dp != nil {
			dp[1] -= u[1]
		}
		return 0.2 * t
	}
	effect := func(u []float64, p []float32, t float64) bool {
		u0, u1 := u[0], u[1]
		u[0] = u0 + float64(p[0])*u1*u1
		u[1] = -float64(p[1])*u1 + math.Sin(t)*u0
		return false
	}
	jvp := func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
		p0, p1 := float64(p[0]), float64(p[1])
		jv[0] = v[0] + 2*p0*u[1]*v[1]
		jv[1] = -p1*v[1] + math.Sin(t)*v[0] + math.Cos(t)*u[0]*dt
		if dp != nil {
			jv[0] += u[1] * u[1] * dp[0]
			jv[1] -= u[1] * dp[1]
		}
	}
	vjp := func(du, dp, w, u []float64, p []float32, t float64) float64 {
		p0, p1 := float64(p[0]), float64(p[1])
		du[0] += w[0] + math.Sin(t)*w[1]
		du[1] += 2*p0*u[1]*w[0] - p1*w[1]
		if dp != nil {
			dp[0] += u[1] * u[1] * w[0]
			dp[1] -= u[1] * w[1]
		}
		return math.Cos(t) * u[0] * w[1]
	}
	return Problem[float64]{F: f, U0: []float64{1, 0}, T1: 1, P: []float32{1.5, 0.7},
		Events: []Event[float64]{{Cond: cond, CondGrad: condGrad,
			Effect: effect, EffectJVP: jvp, EffectVJP: vjp}},
		Schedules: []Schedule[float64]{{Times: []float64{0.5}, Effect: effect, EffectJVP: jvp, EffectVJP: vjp}}}
}

// newFiring fills a firing of effect e at u⁻ = before.
func newFiring(t *testing.T, h *hybridDerivs[float64], e int, before []float64, p []float32, tau float64, terminal bool, dtdp []float64) *firing[float64] {
	t.Helper()
	x := &firing[float64]{e: e, i: -1, t: tau, terminal: terminal, dtdp: dtdp,
		before: append([]float64(nil), before...), after: append([]float64(nil), before...)}
	h.prob.Events[0].Effect(x.after, p, tau)
	if err := h.prepare(x, p); err != nil {
		t.Fatal(err)
	}
	return x
}

// cotangent is the transpose of tangent: ⟨λ⁺, T(v, dp)⟩ = ⟨Tᵀλ⁺, (v, dp)⟩
// for events, schedules with fixed and parameter times, terminal or not,
// with the exact derivatives and with finite differences.
func TestJumpTranspose(t *testing.T) {
	prob := jumpProblem()
	r := rand.New(rand.NewPCG(1, 2))
	p := prob.P
	for _, fd := range []bool{false, true} {
		pr := prob
		if fd {
			pr.Events = []Event[float64]{{Cond: prob.Events[0].Cond, Effect: prob.Events[0].Effect}}
			pr.Schedules = []Schedule[float64]{{Times: []float64{0.5}, Effect: prob.Schedules[0].Effect}}
		}
		h, err := newHybridDerivs(&pr, fd, "ForwardSensitivity")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			e        int
			terminal bool
			dtdp     []float64
		}{{0, false, nil}, {0, true, nil}, {^0, false, nil}, {^0, false, []float64{0.3, -1.2}}, {^0, true, []float64{0.3, -1.2}}} {
			for range 5 {
				before := []float64{r.NormFloat64(), r.NormFloat64()}
				x := newFiring(t, h, c.e, before, p, 0.3+r.Float64(), c.terminal, c.dtdp)
				v := []float64{r.NormFloat64(), r.NormFloat64()}
				dp := []float64{r.NormFloat64(), r.NormFloat64()}
				lam := []float64{r.NormFloat64(), r.NormFloat64()}
				out := make([]float64, 2)
				h.tangent(x, out, v, p, dp)
				lhs := dotT(lam, out)
				lb, mu := make([]float64, 2), make([]float64, 2)
				h.cotangent(x, lb, mu, lam, p, 0)
				rhs := dotT(lb, v) + dotT(mu, dp)
				// Differences are exact only to their truncation error, and
				// the JVP's and the VJP's differ.
				tol := 1e-12
				if fd {
					tol = 1e-8
				}
				if math.Abs(lhs-rhs) > tol*(1+math.Abs(lhs)) {
					t.Errorf("fd=%v e=%d terminal=%v: ⟨λ, T(v,dp)⟩ = %.15g, ⟨Tᵀλ, (v,dp)⟩ = %.15g", fd, c.e, c.terminal, lhs, rhs)
				}
			}
		}
	}
}

// The tangent across an event is the derivative of the state after the
// firing, at a fixed time just after it: checked against central
// differences of an exact two-phase solution. u' = (u1, 0): u0 moves
// linearly, so the event time has a closed form.
func TestJumpTangentClosedForm(t *testing.T) {
	// u0(t) = a + b t, u1 = b; event when u0 = p0 (rising): τ = (p0 − a)/b.
	// Effect: u1 ← −p1·u1·u0; after, at T: u0(T) = p0 + u1⁺ (T − τ).
	final := func(a, b, p0, p1, T float64) []float64 {
		tau := (p0 - a) / b
		u1 := -p1 * b * p0
		return []float64{p0 + u1*(T-tau), u1}
	}
	prob := Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) { du[0], du[1] = u[1], 0 },
		Events: []Event[float64]{{
			Cond:   func(u []float64, p []float32, t float64) float64 { return u[0] - float64(p[0]) },
			Effect: func(u []float64, p []float32, t float64) bool { u[1] = -float64(p[1]) * u[1] * u[0]; return false },
		}},
		U0: []float64{0, 1}, T1: 2, P: []float32{0.75, 0.5},
	}
	h, err := newHybridDerivs(&prob, true, "ForwardSensitivity")
	if err != nil {
		t.Fatal(err)
	}
	a, b, p0, p1, T := 0.1, 1.3, 0.75, 0.5, 2.0
	tau := (p0 - a) / b
	before := []float64{p0, b}
	x := &firing[float64]{e: 0, i: -1, t: tau, before: before, after: []float64{p0, -p1 * b * p0}}
	if err := h.prepare(x, prob.P); err != nil {
		t.Fatal(err)
	}
	// After τ the flow is u0 += u1·(T−τ): its tangent map at fixed T is
	// [1 T−τ; 0 1] applied to the tangent at τ⁺ (the jump's output).
	for k, dir := range [][4]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}} {
		// tangent of the state at τ⁻ along a, b: u0(τ⁻) = a + bτ, u1 = b, at fixed τ.
		v := []float64{dir[0] + dir[1]*tau, dir[1]}
		dp := []float64{dir[2], dir[3]}
		out := make([]float64, 2)
		h.tangent(x, out, v, prob.P, dp)
		got := []float64{out[0] + out[1]*(T-tau), out[1]}
		const d = 1e-6
		hi := final(a+d*dir[0], b+d*dir[1], p0+d*dir[2], p1+d*dir[3], T)
		lo := final(a-d*dir[0], b-d*dir[1], p0-d*dir[2], p1-d*dir[3], T)
		for i := range got {
			want := (hi[i] - lo[i]) / (2 * d)
			if math.Abs(got[i]-want) > 1e-6*(1+math.Abs(want)) {
				t.Errorf("direction %d, component %d: tangent %.10g, differences %.10g", k, i, got[i], want)
			}
		}
	}
}

// A gradient method without a derivative it needs names it and the fix.
func TestHybridDerivsMissing(t *testing.T) {
	prob := jumpProblem()
	prob.Events[0].CondGrad = nil
	_, err := newHybridDerivs(&prob, false, "InterpolatingAdjoint")
	if err == nil || !strings.Contains(err.Error(), "Problem.Events[0].CondGrad is nil") || !strings.Contains(err.Error(), "FiniteDiff") {
		t.Fatalf("err = %v, want one naming Problem.Events[0].CondGrad and FiniteDiff", err)
	}
	prob = jumpProblem()
	prob.Schedules[0].EffectVJP = nil
	_, err = newHybridDerivs(&prob, false, "InterpolatingAdjoint")
	if err == nil || !strings.Contains(err.Error(), "Problem.Schedules[0].EffectVJP is nil") {
		t.Fatalf("err = %v, want one naming Problem.Schedules[0].EffectVJP", err)
	}
}
