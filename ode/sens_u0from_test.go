package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// An initial state computed from θ (U0From): its gradient flows into
// dL/dθ, for every method.
func TestU0FromGradientFlowsIntoTheta(t *testing.T) {
	θ := []float32{1.5, 1, 3, 1, 1, 1} // rates, then the initial state
	prob := lvProblem()
	prob.P = θ
	prob.U0 = []float64{0, 0} // the dimension only
	prob.U0From = func(u0 []float64, p []float32) { u0[0], u0[1] = float64(p[4]), float64(p[5]) }
	prob.U0FromVJP = func(dp, w []float64, p []float32) { dp[4] += w[0]; dp[5] += w[1] }
	// lvF, lvJVP and lvVJP read (and write) only p[0:4].
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}} {
		t.Run(s.Name(), func(t *testing.T) {
			g, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), lvLoss(), s, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]float64(nil), lvRefP...), lvRefU0...)
			for k, w := range want {
				if math.Abs(g.P[k]-w) > 1e-7*math.Abs(w) {
					t.Errorf("dL/dθ[%d] = %.12g, want %.12g", k, g.P[k], w)
				}
			}
			if math.Abs(g.U0[0]-lvRefU0[0]) > 1e-7 {
				t.Errorf("dL/du0 = %v, want %v", g.U0, lvRefU0)
			}
		})
	}
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(sol.U[1][0] - lvRefUEnd[0]); d > 1e-8 || sol.U[0][0] != 1 {
		t.Errorf("Solve with U0From: u(0) = %v, u(10) = %v, want (1, 1) and %v", sol.U[0], sol.U[1], lvRefUEnd)
	}
}
