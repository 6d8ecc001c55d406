package optimisers

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/optimize"
)

// minDecay is a solve-like objective: the least-squares fit of
// y(t) = a·exp(−k·t) to data made with a = 1, k = 0.1. Like an ODE solve,
// it fails when the rate k is not positive. With fail it returns an error
// there; without, a NaN loss. evals counts calls; failed, the failures.
type minDecay struct {
	ts, ys        []float64
	fail          bool
	evals, failed int
	firstFail     int // the evaluation of the first failure
}

func newMinDecay(fail bool) *minDecay {
	d := &minDecay{fail: fail}
	for i := range 20 {
		t := float64(i)
		d.ts = append(d.ts, t)
		d.ys = append(d.ys, math.Exp(-0.1*t))
	}
	return d
}

var errMinDecayRate = errors.New("the solve blew up")

func (d *minDecay) fg(θ, grad []float32) (float64, error) {
	d.evals++
	a, k := float64(θ[0]), float64(θ[1])
	if k <= 0 {
		if d.failed++; d.failed == 1 {
			d.firstFail = d.evals
		}
		if d.fail {
			return 0, fmt.Errorf("rate k = %.3g: %w", k, errMinDecayRate)
		}
		return math.NaN(), nil
	}
	var f, ga, gk float64
	for i, t := range d.ts {
		e := math.Exp(-k * t)
		r := a*e - d.ys[i]
		f += r * r
		ga += 2 * r * e
		gk += -2 * r * a * t * e
	}
	if grad != nil {
		grad[0], grad[1] = float32(ga), float32(gk)
	}
	return f, nil
}

// A failed evaluation is an infeasible point: from a = 0.5, k = 0.3, the
// gradient points to a larger a and a smaller k, and L-BFGS's first trial
// step (unit length) goes to k < 0, where the objective fails. The line
// search steps back and the fit converges, with an error or with a NaN at
// the failed points, for every line-search method (CG's MoreThuente would
// otherwise interpolate a NaN step from an infinite loss).
func TestMinimizeFailedEvaluationIsInfeasible(t *testing.T) {
	for _, fail := range []bool{true, false} {
		for _, m := range []struct {
			name   string
			method func() optimize.Method
		}{
			{"LBFGS", func() optimize.Method { return nil }},
			{"BFGS", func() optimize.Method { return &optimize.BFGS{} }},
			{"CG", func() optimize.Method { return &optimize.CG{} }},
			{"GradientDescent", func() optimize.Method { return &optimize.GradientDescent{} }},
			{"LBFGS+MoreThuente", func() optimize.Method { return &optimize.LBFGS{Linesearcher: &optimize.MoreThuente{}} }},
		} {
			name := m.name + map[bool]string{true: ", error", false: ", NaN"}[fail]
			t.Run(name, func(t *testing.T) {
				d := newMinDecay(fail)
				θ := []float32{0.5, 0.3}
				method := m.method()
				res, err := Minimize(d.fg, θ, method, nil)
				if err != nil {
					t.Fatalf("error %v after %d evaluations (%d failed); want convergence", err, d.evals, d.failed)
				}
				if d.failed == 0 {
					t.Fatalf("no evaluation failed; the test wants the search to cross k = 0")
				}
				if m.name == "LBFGS" && d.firstFail != 2 {
					t.Errorf("the first failure came at evaluation %d; want the first trial step, evaluation 2", d.firstFail)
				}
				if math.Abs(float64(θ[0])-1) > 1e-3 || math.Abs(float64(θ[1])-0.1) > 1e-3 {
					t.Errorf("θ = %v (status %v); want (1, 0.1)", θ, res.Status)
				}
				t.Logf("%d evaluations, %d failed, status %v", d.evals, d.failed, res.Status)
			})
		}
	}
}

// A fit whose starting point fails ends at once with the cause.
func TestMinimizeFailedStartEndsAtOnce(t *testing.T) {
	d := newMinDecay(true)
	θ := []float32{0.5, -0.1}
	_, err := Minimize(d.fg, θ, nil, nil)
	if !errors.Is(err, errMinDecayRate) {
		t.Fatalf("error %v; want one wrapping %v", err, errMinDecayRate)
	}
	if want := "optimisers: Minimize: the objective failed at the start (evaluation 1): rate k = -0.1: the solve blew up"; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
	if d.evals != 1 {
		t.Errorf("%d evaluations; want 1", d.evals)
	}
	if θ[0] != 0.5 || θ[1] != -0.1 {
		t.Errorf("θ = %v; want unchanged", θ)
	}
}

// An objective that never recovers after its first success ends the run
// after MaxConsecutiveFailures failures, with the count and both causes.
func TestMinimizeNeverRecovering(t *testing.T) {
	for _, method := range []optimize.Method{nil, &optimize.CG{}, &optimize.GradientDescent{}} {
		t.Run(fmt.Sprintf("%T", method), func(t *testing.T) {
			d := newMinDecay(true)
			calls := 0
			fg := func(θ, grad []float32) (float64, error) {
				if calls++; calls > 1 {
					return 0, fmt.Errorf("call %d: %w", calls, errMinDecayRate)
				}
				return d.fg(θ, grad)
			}
			θ := []float32{0.5, 0.3}
			_, err := Minimize(fg, θ, method, nil)
			if !errors.Is(err, errMinDecayRate) {
				t.Fatalf("error %v; want one wrapping %v", err, errMinDecayRate)
			}
			last := 1 + MaxConsecutiveFailures
			want := fmt.Sprintf("optimisers: Minimize: the objective failed at %d evaluations in a row (2 to %d), the most Minimize tries (MaxConsecutiveFailures) while it shrinks the step; the first failure, evaluation 2: call 2: the solve blew up; the last, evaluation %d: call %d: the solve blew up",
				MaxConsecutiveFailures, last, last, last)
			if err.Error() != want {
				t.Errorf("error\n%q; want\n%q", err, want)
			}
			if calls != last {
				t.Errorf("%d calls; want %d", calls, last)
			}
			if θ[0] != 0.5 || θ[1] != 0.3 {
				t.Errorf("θ = %v; want the start, the last accepted point", θ)
			}
		})
	}
}

// When the minimum along a search line lies past the failures, a Wolfe
// line search cannot finish; the guard accepts the best feasible point,
// and Minimize restarts a quasi-Newton method whose memory that spoilt.
// Here the loss is a quadratic with its minimum at (3, 0.05), near the
// boundary x₁ = 0 past which it fails.
func TestMinimizeInfeasibleBoundaryNearOptimum(t *testing.T) {
	fg := func(θ, grad []float32) (float64, error) {
		x0, x1 := float64(θ[0]), float64(θ[1])
		if x1 < 0 {
			return 0, errMinDecayRate
		}
		if grad != nil {
			grad[0], grad[1] = float32(2*(x0-3)), float32(20*(x1-0.05))
		}
		return (x0-3)*(x0-3) + 10*(x1-0.05)*(x1-0.05), nil
	}
	for _, method := range []optimize.Method{nil, &optimize.BFGS{}, &optimize.CG{}, &optimize.LBFGS{Linesearcher: &optimize.MoreThuente{}}} {
		t.Run(fmt.Sprintf("%T", method), func(t *testing.T) {
			θ := []float32{0, 1}
			res, err := Minimize(fg, θ, method, &optimize.Settings{FuncEvaluations: 2000})
			if err != nil || math.Abs(float64(θ[0])-3) > 1e-3 || math.Abs(float64(θ[1])-0.05) > 1e-3 {
				t.Errorf("θ = %v, status %v, error %v; want (3, 0.05)", θ, res.Status, err)
			}
		})
	}
}
