package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// u' = −2t·u², u(0) = 1 has u(t) = 1/(1+t²).
func decay(du, u []float64, _ []float32, t float64) { du[0] = -2 * t * u[0] * u[0] }
func decayExact(t float64) float64                  { return 1 / (1 + t*t) }

// A manufactured coupled nonlinear problem with the exact solution
// y(t) = (2 + sin t, cos(t)·e^{−t/2}): F(u, t) = y'(t) + N(u, t) − N(y(t), t)
// with a nonlinear, contracting N, so every elementary differential of the
// method matters (a scalar or linear problem can hide order defects).
func manufExact(t float64) (float64, float64) { return 2 + math.Sin(t), math.Cos(t) * math.Exp(-t/2) }

func manuf(du, u []float64, _ []float32, t float64) {
	y1, y2 := manufExact(t)
	d1, d2 := math.Cos(t), (-math.Sin(t)-math.Cos(t)/2)*math.Exp(-t/2)
	du[0] = d1 + 0.25*(-(u[0]*u[0]-y1*y1)+(u[0]*u[1]-y1*y2))
	du[1] = d2 + 0.25*(-(u[1]*u[1]*u[1]-y2*y2*y2)-u[1]*(u[0]-y1))
}

// slope fits log(err) = a + slope·log(h) by least squares.
func slope(hs, errs []float64) float64 {
	var sx, sy, sxx, sxy float64
	n := float64(len(hs))
	for i := range hs {
		x, y := math.Log(hs[i]), math.Log(errs[i])
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// TestConvergenceOrder runs every method with fixed steps over a range of
// step sizes on a problem with an exact solution and checks that the error
// (the largest over the step ends) and the error of the dense output at step midpoints fall with the
// method's order (within ±0.3), and that the dense output falls at least as
// fast as min(p, q+1) for an interpolant of order q.
func TestConvergenceOrder(t *testing.T) {
	// The step ranges sit where the error is asymptotic (the pre-asymptotic
	// slope of this problem is below 5 for DP5 and Tsit5 at large steps) and
	// above roundoff (Vern7 reaches 1e-13 at 40 steps).
	checkConvergence(t, []convergenceCase{
		{ode.BS3(), 3, 3, []int{20, 28, 40, 57, 80}},
		{ode.RK4(), 4, 4, []int{20, 28, 40, 57, 80}},
		{ode.DP5(), 5, 5, []int{80, 113, 160, 226, 320}},
		{ode.Tsit5(), 5, 5, []int{40, 57, 80, 113, 160}},
		{ode.Vern7(), 7, 7, []int{14, 17, 20, 28, 40}},
	}, nil)
}

// convergenceCase is a method, its order and its interpolant's, and the
// fixed step counts over which the error slope is fitted.
type convergenceCase struct {
	m          ode.Method
	order      int
	denseOrder int
	steps      []int
}

// checkConvergence solves the manufactured problem with fixed steps for
// every case and checks the fitted slopes of the error at the step ends and
// of the dense output between them; extra, if not nil, checks each solution.
func checkConvergence(t *testing.T, cases []convergenceCase, extra func(t *testing.T, n int, sol *ode.Solution[float64])) {
	t.Helper()
	const T1 = 3.0
	for _, c := range cases {
		t.Run(c.m.Name(), func(t *testing.T) {
			var hs, errs, derrs []float64
			for _, n := range c.steps {
				h := T1 / float64(n)
				y1, y2 := manufExact(0)
				prob := ode.Problem[float64]{F: manuf, U0: []float64{y1, y2}, T1: T1}
				sol, err := ode.Solve(context.Background(), prob, c.m, ode.FixedStep(h), ode.Dense(), ode.SaveEveryStep())
				if err != nil {
					t.Fatal(err)
				}
				if sol.Stats.Accepted != n || len(sol.T) != n+1 || sol.T[n] != T1 {
					t.Fatalf("N=%d: %d steps accepted, %d points saved ending at %g", n, sol.Stats.Accepted, len(sol.T), sol.T[len(sol.T)-1])
				}
				if extra != nil {
					extra(t, n, sol)
				}
				e := 0.0 // the largest error over the step ends
				for i, ti := range sol.T {
					y1, y2 := manufExact(ti)
					e = max(e, math.Hypot(sol.U[i][0]-y1, sol.U[i][1]-y2))
				}
				de := 0.0
				for k := 0; k < n; k++ {
					tm := (float64(k) + 0.5) * h
					u, err := sol.At(tm)
					if err != nil {
						t.Fatal(err)
					}
					y1, y2 := manufExact(tm)
					de = max(de, math.Hypot(u[0]-y1, u[1]-y2))
				}
				hs, errs, derrs = append(hs, h), append(errs, e), append(derrs, de)
			}
			p, dp := slope(hs, errs), slope(hs, derrs)
			t.Logf("errors %.3g, slope %.2f; dense errors %.3g, slope %.2f", errs, p, derrs, dp)
			if math.Abs(p-float64(c.order)) > 0.3 {
				t.Errorf("observed order %.2f, want %d ± 0.3", p, c.order)
			}
			if dp < float64(c.denseOrder)-0.3 {
				t.Errorf("observed dense order %.2f, want ≥ %d − 0.3", dp, c.denseOrder)
			}
		})
	}
}
