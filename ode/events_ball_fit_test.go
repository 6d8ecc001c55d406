package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// L-BFGS on (h(15) − 20)² for the bouncing ball from e = 0.8 (issue 29):
// where h(15) never reaches 20 the fit ends at its maximum, where
// ∂h(15)/∂e = 0: e = 0.8665541, located to 1e-6 with gradients through
// the moving impact times from each sensitivity method.
//
// h(15) oscillates in e as the last bounce's phase moves: 8.5 at 0.8, 19.34
// at 0.87, 0.8 at 0.95, 20 again near 0.988, 25.8 at 1. The issue's
// premise holds on [0.8, 0.94], so e is bounded there (LBFGSB). Unbounded,
// L-BFGS's first step, of length 1 along dL/de ≈ −7200, lands in another
// basin and the run ends at e ≈ 1.90, where a ball that gains energy does
// reach 20; on [0, 1] it ends at e ≈ 0.988, where h(15) = 20. Both are
// right answers to the least-squares problem, not the stationary point
// this test locates.
func TestBallRestitutionFit(t *testing.T) {
	c := ballCase()
	const target, want = 20.0, 0.8665541
	loss := ode.Loss[float64]{At: []float64{c.prob.T1}, Point: func(_ int, _ float64, u, dLdu []float64) float64 {
		r := u[0] - target
		dLdu[0] = 2 * r
		return r * r
	}}
	for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.DiscreteAdjoint{}} {
		t.Run(s.Name(), func(t *testing.T) {
			gs, err := ode.NewGradientSolver(c.prob, ode.Vern7(), s, ode.Tol(1e-10, 1e-12), ode.TStops(c.prob.T1))
			if err != nil {
				t.Fatal(err)
			}
			θ := []float32{0.8}
			method := &optimisers.LBFGSB{Bounds: optimisers.Bounds{Lower: []float64{0.8}, Upper: []float64{0.94}}}
			res, err := optimisers.Minimize(gs.Objective(context.Background(), loss), θ, method, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("e = %.8f after %d evaluations (%v)", θ[0], res.FuncEvaluations, res.Status)
			if d := math.Abs(float64(θ[0]) - want); d > 1e-6 {
				t.Errorf("e = %.8f, want %.7f ± 1e-6 (off by %.2g)", θ[0], want, d)
			}
		})
	}
}
