package ode_test

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// TestBDFTightTolerances: the bouncing ball of the events H·v tests
// (evBallProblem: h' = v, v' = −g) at rtol 1e-11 and 1e-12, atol rtol/100.
// A restart where a component is 0 and moving (the height right after an
// impact; the adjoint at T1, where the loss's save time makes it jump)
// chose, as CVODE's cvHin does, an initial step below the integrator's
// smallest, and the solve ended in DtUnderflow at that restart. The
// forward solve with the events must end at the closed-form state, the
// gradients without events must match the closed form, and the gradient
// through the events must match Vern7's, all within 1e-6 relative.
func TestBDFTightTolerances(t *testing.T) {
	c := evCases()[3]
	ball := c.prob
	e, g := float64(ball.P[0]), float64(ball.P[1])
	free := ball
	free.Events = nil

	// Without events: h(t) = 10 − g·t²/2, and L = Σ r_i², r_i = h(t_i) − d_i.
	at, data := []float64{1, 2, 3, 4, 5}, []float64{5, 5, 6, 3, 3}
	var dg, dh0, dv0 float64
	for i, ti := range at {
		r := 10 - g*ti*ti/2 - data[i]
		dg -= r * ti * ti
		dh0 += 2 * r
		dv0 += 2 * r * ti
	}
	wantFree := []float64{0, dg, dh0, dv0} // dL/dp, dL/du0

	// With events: impacts at t₁ = √(20/g) and t₂ = t₁(1 + 2e), then a
	// rise at e²·g·t₁ for s = T1 − t₂.
	t1 := math.Sqrt(20 / g)
	s := ball.T1 - t1*(1+2*e)
	v2 := e * e * g * t1
	wantEnd := []float64{v2*s - g*s*s/2, v2 - g*s}

	cases := []struct {
		name string
		prob ode.Problem[float64]
		tol  float64
		sens ode.Sensitivity // nil: the forward solve alone
	}{
		{"events/solve", ball, 1e-12, nil},
		{"events/InterpolatingAdjoint", ball, 1e-12, ode.InterpolatingAdjoint{}},
		{"free/InterpolatingAdjoint", free, 1e-11, ode.InterpolatingAdjoint{}},
		{"free/InterpolatingAdjoint", free, 1e-12, ode.InterpolatingAdjoint{}},
		{"free/ForwardSensitivity", free, 1e-11, ode.ForwardSensitivity{}},
		{"free/ForwardSensitivity", free, 1e-12, ode.ForwardSensitivity{}},
	}
	for _, tc := range cases {
		tol := ode.Tol(tc.tol, tc.tol/100)
		if tc.sens == nil {
			sol, err := ode.Solve(bg, tc.prob, ode.BDF(), tol)
			if err != nil {
				t.Errorf("%s rtol %g: %v", tc.name, tc.tol, err)
				continue
			}
			got := sol.U[len(sol.U)-1]
			if d := bdfRelDiff(got, wantEnd); d > 1e-6 {
				t.Errorf("%s rtol %g: u(T1) = %v, want %v (relative error %.2g)", tc.name, tc.tol, got, wantEnd, d)
			}
			continue
		}
		res, err := ode.Gradient(bg, tc.prob, ode.BDF(), c.loss.Loss, tc.sens, tol)
		if err != nil {
			t.Errorf("%s rtol %g: %v", tc.name, tc.tol, err)
			continue
		}
		want := wantFree
		if len(tc.prob.Events) > 0 {
			ref, err := ode.Gradient(bg, tc.prob, ode.Vern7(), c.loss.Loss, tc.sens, tol)
			if err != nil {
				t.Fatalf("%s rtol %g, Vern7: %v", tc.name, tc.tol, err)
			}
			want = append(append([]float64{}, ref.P...), ref.U0...)
		}
		got := append(append([]float64{}, res.P...), res.U0...)
		if d := bdfRelDiff(got, want); d > 1e-6 {
			t.Errorf("%s rtol %g: dL/d(p, u0) = %v, want %v (relative error %.2g)", tc.name, tc.tol, got, want, d)
		}
	}
}

// bdfRelDiff is ‖a − b‖∞/‖b‖∞.
func bdfRelDiff(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d = max(d, math.Abs(a[i]-b[i]))
		m = max(m, math.Abs(b[i]))
	}
	return d / m
}
