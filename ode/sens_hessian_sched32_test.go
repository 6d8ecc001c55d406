package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// pkProblem32 is pkProblem(true) with a float32 state: the PK model
// u' = −k·u with the nonlinear dose u ← u·e^(−c) + D/(1 + u) at 1 and
// 2.5, θ = (k, D, c).
func pkProblem32() ode.Problem[float32] {
	f := func(du, u []float32, p []float32, _ float64) { du[0] = -p[0] * u[0] }
	jvp := func(jv, u, v []float32, p []float32, dp []float32, _ float64) {
		jv[0] = -p[0] * v[0]
		if dp != nil {
			jv[0] -= dp[0] * u[0]
		}
	}
	vjp := func(gu, gp, w, u []float32, p []float32, _ float64) {
		gu[0] -= p[0] * w[0]
		if gp != nil {
			gp[0] -= u[0] * w[0]
		}
	}
	vjpjvp := func(gu, gp, hu, hp, w, wd, u, ud []float32, p []float32, pd []float32, t float64) {
		vjp(gu, gp, w, u, p, t)
		vjp(hu, hp, wd, u, p, t)
		hp[0] -= ud[0] * w[0]
		if pd != nil {
			hu[0] -= pd[0] * w[0]
		}
	}
	dose := ode.Schedule[float32]{Times: pkDoses,
		Effect: func(u []float32, p []float32, _ float64) bool {
			u[0] = u[0]*float32(math.Exp(-float64(p[2]))) + p[1]/(1+u[0])
			return false
		},
		EffectJVP: func(jv, u, v []float32, p []float32, dp []float32, _, _ float64) {
			e, D, x := float32(math.Exp(-float64(p[2]))), p[1], u[0]
			jv[0] = (e - D/((1+x)*(1+x))) * v[0]
			if dp != nil {
				jv[0] += dp[1]/(1+x) - x*e*dp[2]
			}
		},
		EffectVJP: func(du, dp, w, u []float32, p []float32, _ float64) float64 {
			e, D, x := float32(math.Exp(-float64(p[2]))), p[1], u[0]
			du[0] += (e - D/((1+x)*(1+x))) * w[0]
			if dp != nil {
				dp[1] += w[0] / (1 + x)
				dp[2] -= x * e * w[0]
			}
			return 0
		},
	}
	return ode.Problem[float32]{F: f, JVP: jvp, VJP: vjp, VJPJVP: vjpjvp, U0: []float32{1}, T1: 4,
		P: []float32{0.75, 2, 0.25}, Schedules: []ode.Schedule[float32]{dose}}
}

// A float32 state through a nonlinear dose at fixed times: the Hessian
// of the PK loss in (θ, u0) matches differences of the float64 gradient
// to float32's accuracy, with an explicit and a stiff method. The
// effect's curvature is taken by differences in float32 here, so this
// bounds their error too (without it H is 88 % off).
func TestHvScheduleFloat32(t *testing.T) {
	ctx := context.Background()
	// The reference does not go through HvSolver: differences of the
	// float64 gradient.
	H64 := pkDiffHessian(t, pkProblem(true), pkLoss())
	loss := ode.HvLoss[float32]{Loss: ode.Loss[float32]{At: pkAt,
		Point: func(i int, _ float64, u, dl []float32) float64 {
			r := u[0] - float32(pkData[i])
			dl[0] = 2 * r
			return float64(r * r)
		}},
		PointHv: func(_ int, _ float64, _, ud, hv []float32) { hv[0] = 2 * ud[0] },
	}
	scale := 0.0
	for _, v := range H64 {
		scale = max(scale, math.Abs(v))
	}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		H32, err := ode.FullHessian(ctx, pkProblem32(), m, loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-5, 1e-7))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		worst := 0.0
		for i, v := range H32 {
			e := math.Abs(float64(v)-H64[i]) / scale
			worst = max(worst, e)
			if e > 1e-3 {
				t.Errorf("%s: float32 H[%d] = %g, differences of the float64 gradient %g (%.2g of max|H| > 1e-3)", m.Name(), i, v, H64[i], e)
			}
		}
		t.Logf("%s: float32 H within %.2g of max|H| of the differences", m.Name(), worst)
	}
}
