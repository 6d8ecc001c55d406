package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The hybrid problems of issue 29's "Done means", with exact derivatives of
// their right-hand sides, conditions and effects, for the tests of the
// gradients through events and schedules. Each comes with its reference
// values.

// hybridCase is a hybrid problem, the loss of its state at T1 (a weighted
// sum of components) and the reference gradient of that loss.
type hybridCase struct {
	name    string
	prob    ode.Problem[float64]
	weights []float64 // the loss is Σ weights[i]·u_i(T1)
	value   float64   // the reference loss
	dp      []float64 // the reference dL/dp (nil: not known in closed form)
	du0     []float64 // the reference dL/du0 (nil: not known)
	tol     float64   // relative tolerance of the comparison
}

// endLoss is the loss Σ w_i·u_i(T1) of a hybrid case.
func endLoss(c hybridCase) ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{c.prob.T1}, Point: func(i int, t float64, u, dLdu []float64) float64 {
		s := 0.0
		for k, w := range c.weights {
			s += w * u[k]
			dLdu[k] = w
		}
		return s
	}}
}

// dosingCase is SciMLSensitivity's continuous-callback test: N' = p₁ − N,
// N(0) = 0; when N rises through 3p₁/4, N += p₂. At p = (100, 50):
// N(10) = 100.00453999297625, ∂N(10)/∂p = (0.99995460007023751,
// 1.8159971904993942e-4).
func dosingCase() hybridCase {
	prob := ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0] = float64(p[0]) - u[0] },
		U0: []float64{0}, T1: 10, P: []float32{100, 50},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0] = -v[0]
			if dp != nil {
				jv[0] += dp[0]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[0] -= w[0]
			if dp != nil {
				dp[0] += w[0]
			}
		},
		Jac: func(J []float64, u []float64, p []float32, t float64) { J[0] = -1 },
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, p []float32, t float64) float64 { return u[0] - 0.75*float64(p[0]) },
			Direction: 1,
			Effect:    func(u []float64, p []float32, t float64) bool { u[0] += float64(p[1]); return false },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 {
				du[0]++
				if dp != nil {
					dp[0] -= 0.75
				}
				return 0
			},
			EffectJVP: doseP1JVP,
			EffectVJP: doseP1VJP,
		}},
	}
	return hybridCase{name: "dosing", prob: prob, weights: []float64{1},
		value: 100.00453999297625, dp: []float64{0.99995460007023751, 1.8159971904993942e-4}, tol: 1e-8}
}

// switchCase is the parameter switch: x' = −a, y' = b·s, s' = 0 with
// (x, y, s)(0) = (1, 0, 1); when x falls through 0, s ← 0 (the switch kept
// in the state). y(1) = b/a, ∂y(1)/∂(a, b) = (−b/a², 1/a) at (a, b) = (2, 1).
func switchCase() hybridCase {
	prob := ode.Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) {
			du[0], du[1], du[2] = -float64(p[0]), float64(p[1])*u[2], 0
		},
		U0: []float64{1, 0, 1}, T1: 1, P: []float32{2, 1},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0], jv[1], jv[2] = 0, float64(p[1])*v[2], 0
			if dp != nil {
				jv[0] -= dp[0]
				jv[1] += dp[1] * u[2]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[2] += float64(p[1]) * w[1]
			if dp != nil {
				dp[0] -= w[0]
				dp[1] += u[2] * w[1]
			}
		},
		Jac: func(J []float64, u []float64, p []float32, t float64) {
			clear(J)
			J[1*3+2] = float64(p[1])
		},
		Events: []ode.Event[float64]{{
			G:         func(u []float64, t float64) float64 { return u[0] },
			Direction: -1,
			Affect:    func(u []float64, t float64) bool { u[2] = 0; return false },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 {
				du[0]++
				return 0
			},
			EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
				jv[0], jv[1], jv[2] = v[0], v[1], 0
			},
			EffectVJP: func(du, dp, w, u []float64, p []float32, t float64) float64 {
				du[0] += w[0]
				du[1] += w[1]
				return 0
			},
		}},
	}
	a, b := 2.0, 1.0
	return hybridCase{name: "switch", prob: prob, weights: []float64{0, 1, 0},
		value: b / a, dp: []float64{-b / (a * a), 1 / a}, tol: 1e-8}
}

// ballCase is the bouncing ball with restitution: h' = v, v' = −g with
// (h, v)(0) = (50, 0), g = 9.8, and v ← −e·v at each impact, on [0, 15].
// At e = 0.8: h(15) = 8.494217007606046, ∂h(15)/∂e = 314.56884 and
// ∂h(15)/∂h(0) = 1.5961822 (issue 29). The parameter is float32(0.8), 1.2e-8
// above 0.8: the reference value is corrected to first order by ∂h/∂e.
func ballCase() hybridCase {
	const g = 9.8
	prob := ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0], du[1] = u[1], -g },
		U0: []float64{50, 0}, T1: 15, P: []float32{0.8},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0], jv[1] = v[1], 0
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) { du[1] += w[0] },
		Jac: func(J []float64, u []float64, p []float32, t float64) { J[0], J[1], J[2], J[3] = 0, 1, 0, 0 },
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, p []float32, t float64) float64 { return u[0] },
			Direction: -1,
			Effect:    func(u []float64, p []float32, t float64) bool { u[1] *= -float64(p[0]); return false },
			CondGrad: func(du, dp []float64, u []float64, p []float32, t float64) float64 {
				du[0]++
				return 0
			},
			EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
				e := float64(p[0])
				jv[0], jv[1] = v[0], -e*v[1]
				if dp != nil {
					jv[1] -= u[1] * dp[0]
				}
			},
			EffectVJP: func(du, dp, w, u []float64, p []float32, t float64) float64 {
				e := float64(p[0])
				du[0] += w[0]
				du[1] -= e * w[1]
				if dp != nil {
					dp[0] -= u[1] * w[1]
				}
				return 0
			},
		}},
	}
	const dhde = 314.56884
	shift := float64(float32(0.8)) - 0.8
	return hybridCase{name: "ball", prob: prob, weights: []float64{1, 0},
		value: 8.494217007606046 + dhde*shift, dp: []float64{dhde}, du0: []float64{1.5961822, math.NaN()}, tol: 1e-6}
}

// doseTimesCase is decay with two doses whose times are parameters:
// u' = −k·u, u(0) = 1, and u += d at t₁ = τ and t₂ = 2τ, with p = (k, d, τ)
// = (0.5, 2, 1.5), on [0, 5]. In closed form
// u(5) = e^{−5k} + d·e^{−k(5−τ)} + d·e^{−k(5−2τ)}.
func doseTimesCase() hybridCase {
	k, d, tau := 0.5, 2.0, 1.5
	e0, e1, e2 := math.Exp(-5*k), math.Exp(-k*(5-tau)), math.Exp(-k*(5-2*tau))
	prob := ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0] = -float64(p[0]) * u[0] },
		U0: []float64{1}, T1: 5, P: []float32{float32(k), float32(d), float32(tau)},
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0] = -float64(p[0]) * v[0]
			if dp != nil {
				jv[0] -= dp[0] * u[0]
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[0] -= float64(p[0]) * w[0]
			if dp != nil {
				dp[0] -= u[0] * w[0]
			}
		},
		Jac: func(J []float64, u []float64, p []float32, t float64) { J[0] = -float64(p[0]) },
		Schedules: []ode.Schedule[float64]{{
			Times:     []float64{0, 0},
			TimesFrom: func(ts []float64, p []float32) { ts[0], ts[1] = float64(p[2]), 2*float64(p[2]) },
			TimesFromJac: func(J []float64, p []float32) {
				clear(J)
				J[0*3+2], J[1*3+2] = 1, 2
			},
			Effect:    func(u []float64, p []float32, t float64) bool { u[0] += float64(p[1]); return false },
			EffectJVP: doseP1JVP,
			EffectVJP: doseP1VJP,
		}},
	}
	return hybridCase{name: "dose times", prob: prob, weights: []float64{1},
		value: e0 + d*e1 + d*e2,
		dp: []float64{
			-5*e0 - d*(5-tau)*e1 - d*(5-2*tau)*e2,
			e1 + e2,
			d*k*e1 + 2*d*k*e2,
		},
		du0: []float64{e0}, tol: 1e-8}
}

// hybridCases are the cases above.
func hybridCases() []hybridCase {
	return []hybridCase{dosingCase(), switchCase(), ballCase(), doseTimesCase()}
}

// The hybrid cases' forward solves reach their reference values, so that a
// gradient test's failure is the gradient's.
func TestHybridCasesValues(t *testing.T) {
	for _, c := range hybridCases() {
		for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
			sol, err := ode.Solve(context.Background(), c.prob, m, ode.Tol(1e-10, 1e-12), ode.SaveAt(c.prob.T1))
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, m.Name(), err)
			}
			u := sol.U[len(sol.U)-1]
			got := 0.0
			for k, w := range c.weights {
				got += w * float64(u[k])
			}
			if e := math.Abs(got-c.value) / math.Abs(c.value); e > c.tol {
				t.Errorf("%s, %s: loss %.15g, want %.15g (relative error %.2g > %g)", c.name, m.Name(), got, c.value, e, c.tol)
			}
		}
	}
}

// doseP1JVP and doseP1VJP are the derivatives of the dose u[0] += p[1]
// of the dosing and dose-times cases.
func doseP1JVP(jv, _, v []float64, _ []float32, dp []float64, _, _ float64) {
	jv[0] = v[0]
	if dp != nil {
		jv[0] += dp[1]
	}
}

func doseP1VJP(du, dp, w, _ []float64, _ []float32, _ float64) float64 {
	du[0] += w[0]
	if dp != nil {
		dp[1] += w[0]
	}
	return 0
}
