package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The bound on the global error of a solve at rtol/atol, measured in the
// solver's own weighted norm RMS((u − ref)/(atol + rtol·|ref|)). Tolerances
// bound the local error per step, so the global error is O(1)–O(100) in this
// norm; the largest observed on these problems is about 9 (BS3 and Tsit5 on
// the rigid body to t = 20 at 1e-6).
const accuracyBound = 30

var adaptiveMethods = []ode.Method{ode.Tsit5(), ode.DP5(), ode.BS3(), ode.Vern7()}

func TestAccuracyReferenceProblems(t *testing.T) {
	for _, m := range adaptiveMethods {
		for _, p := range refProblems {
			for _, tol := range [][2]float64{{1e-6, 1e-8}, {1e-10, 1e-12}} {
				if m.Name() == "BS3" && tol[0] < 1e-8 {
					continue // a third-order method at 1e-10: 60 000 steps, and no news
				}
				prob := ode.Problem[float64]{F: p.f, U0: p.u0, T1: p.t1}
				sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(tol[0], tol[1]))
				if err != nil {
					t.Fatalf("%s %s: %v", m.Name(), p.name, err)
				}
				if len(sol.T) != 2 || sol.T[0] != 0 || sol.T[1] != p.t1 {
					t.Fatalf("%s %s: saved times %v, want [0 %g]", m.Name(), p.name, sol.T, p.t1)
				}
				w := weightedErr(sol.U[1], p.ref, tol[0], tol[1])
				t.Logf("%-6s %-15s rtol %g: weighted error %.3g, %d steps (%d rejected), %d f evals",
					m.Name(), p.name, tol[0], w, sol.Stats.Accepted, sol.Stats.Rejected, sol.Stats.FEvals)
				if w > accuracyBound {
					t.Errorf("%s %s rtol %g: weighted error %.3g > %d", m.Name(), p.name, tol[0], w, accuracyBound)
				}
				if sol.Stats.Retcode != ode.Success || sol.Stats.JacEvals != 0 || sol.Stats.LUs != 0 {
					t.Errorf("%s %s: stats %+v", m.Name(), p.name, sol.Stats)
				}
			}
		}
	}
}

// Tighter tolerance, smaller error: the solvers are tolerance-proportional.
func TestToleranceProportionality(t *testing.T) {
	p := refProblems[0]
	for _, m := range adaptiveMethods {
		prev := 1.0
		for _, rtol := range []float64{1e-4, 1e-6, 1e-8} {
			sol, err := ode.Solve(context.Background(), ode.Problem[float64]{F: p.f, U0: p.u0, T1: p.t1}, m, ode.Tol(rtol, rtol*1e-2))
			if err != nil {
				t.Fatal(err)
			}
			e := maxAbsDiff(sol.U[1], p.ref)
			if e >= prev/5 {
				t.Errorf("%s: rtol %g gives error %.3g, not much below %.3g at 100× looser", m.Name(), rtol, e, prev)
			}
			prev = e
		}
	}
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		m = max(m, d)
	}
	return m
}
