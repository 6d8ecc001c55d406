package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// A right-hand side that jumps at t = 5, with TStops(5): every method lands
// there forwards and backwards and matches the closed form.
func TestGradientThroughATStop(t *testing.T) {
	on := func(t float64) float64 {
		if t < 5 {
			return 1
		}
		return 0
	}
	prob := ode.Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) { du[0] = -u[0] + float64(p[0])*on(t) },
		JVP: func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			jv[0] = -v[0]
			if dp != nil {
				jv[0] += dp[0] * on(t)
			}
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[0] -= w[0]
			if dp != nil {
				dp[0] += w[0] * on(t)
			}
		},
		U0: []float64{2}, T1: 10, P: []float32{0.5},
	}
	loss := ode.Loss[float64]{At: []float64{10}, Saved: func(ts []float64, us, dl [][]float64) float64 {
		dl[0][0] = us[0][0]
		return us[0][0] * us[0][0] / 2
	}}
	e5 := math.Exp(-5)
	u10 := (2*e5 + 0.5*(1-e5)) * e5
	wantP, wantU0 := u10*(1-e5)*e5, u10*e5*e5
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 3}, ode.DiscreteAdjoint{}, ode.BacksolveAdjoint{}} {
		g, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), loss, s, ode.Tol(1e-10, 1e-14), ode.TStops(5))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.P[0]-wantP) > 1e-7*wantP || math.Abs(g.U0[0]-wantU0) > 1e-7*wantU0 {
			t.Errorf("%s: dL/dp = %.12g, dL/du0 = %.12g; want %.12g, %.12g", s.Name(), g.P[0], g.U0[0], wantP, wantU0)
		}
	}
}

// A TStop one ulp before T1 is merged into T1, not landed on (which left a
// 1e-16 step and a DtUnderflow).
func TestTStopNextToT1(t *testing.T) {
	t1 := 0.6718750000000007
	stop := math.Nextafter(t1, 0)
	prob := ode.Problem[float64]{F: func(du, u []float64, p []float32, t float64) { du[0] = -u[0] }, U0: []float64{1}, T1: t1}
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.TStops(stop, math.Nextafter(0, 1)), ode.SaveAt(stop, t1))
	if err != nil {
		t.Fatal(err)
	}
	if len(sol.U) != 2 || math.Abs(sol.U[1][0]-math.Exp(-t1)) > 1e-6 {
		t.Errorf("saved %v at %v", sol.U, sol.T)
	}
}
