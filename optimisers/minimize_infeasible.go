package optimisers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// MaxConsecutiveFailures is how many evaluations in a row may fail before
// Minimize gives up. A failed evaluation is an infeasible point: the line
// search shrinks its step and tries again. Each retry halves the step, so
// 30 retries shrink it by 2⁻³⁰, below float32's relative resolution of
// 2⁻²⁴: by then the trial point rounds to the last accepted one.
const MaxConsecutiveFailures = 30

// infeasibleShrink is the factor by which the guarded line search shrinks
// its step after a failed evaluation: the factor of gonum's Backtracking.
const infeasibleShrink = 0.5

// guardLinesearch returns method with its line searcher wrapped by
// infeasibleGuard, for the gonum methods that search along a line. The
// caller's method is not modified: a copy runs. Other methods come back
// unchanged and see +Inf at a failed point.
func guardLinesearch(method optimize.Method, bent *bool) optimize.Method {
	switch m := method.(type) {
	case *optimize.LBFGS:
		c := *m
		c.Linesearcher = newInfeasibleGuard(m.Linesearcher, bent, func() optimize.Linesearcher { return &optimize.Bisection{} })
		return &c
	case *optimize.BFGS:
		c := *m
		c.Linesearcher = newInfeasibleGuard(m.Linesearcher, bent, func() optimize.Linesearcher { return &optimize.Bisection{} })
		return &c
	case *optimize.CG:
		c := *m
		c.Linesearcher = newInfeasibleGuard(m.Linesearcher, bent, func() optimize.Linesearcher { return &optimize.MoreThuente{CurvatureFactor: 0.1} })
		return &c
	case *optimize.Newton:
		c := *m
		c.Linesearcher = newInfeasibleGuard(m.Linesearcher, bent, func() optimize.Linesearcher { return &optimize.Bisection{} })
		return &c
	case *optimize.GradientDescent:
		c := *m
		c.Linesearcher = newInfeasibleGuard(m.Linesearcher, bent, func() optimize.Linesearcher { return &optimize.Backtracking{} })
		return &c
	}
	return method
}

// newInfeasibleGuard wraps ls, or the method's default line searcher (gonum's
// choice, made by def) when ls is nil.
func newInfeasibleGuard(ls optimize.Linesearcher, bent *bool, def func() optimize.Linesearcher) *infeasibleGuard {
	if ls == nil {
		ls = def()
	}
	return &infeasibleGuard{inner: ls, bent: bent}
}

// infeasibleGuard is a line searcher that shrinks its step when the loss at
// a trial point is +Inf or NaN, the value Minimize's bridge reports for a
// failed evaluation, and otherwise defers to the wrapped line searcher.
//
// Not every line searcher survives an infinite loss: gonum's MoreThuente
// interpolates a NaN step from one. So the guard never shows a failed
// point to inner. It restarts inner along the same direction from a
// smaller first step: half the smallest step that failed in this search,
// or half the last first step if inner went back past that. The first
// steps thus shrink strictly, and the bridge's MaxConsecutiveFailures ends
// a search that never finds a feasible point.
//
// A Wolfe line search cannot finish when the minimum along the line lies
// past the failures: the slope at the feasible points stays negative.
// When inner gives up, or heads back past a failed step, the guard accepts
// the best feasible trial point if it met the sufficient decrease
// condition. If the slope there did not grow, a quasi-Newton update loses
// its positive curvature: the guard sets *bent, and Minimize restarts the
// method from the new point if its next direction fails to descend.
type infeasibleGuard struct {
	inner  optimize.Linesearcher
	bent   *bool   // set when an accepted step breaks the curvature condition
	f0, g0 float64 // loss and slope at step 0
	step   float64 // the step of the evaluation in flight
	first  float64 // inner's first step in its latest restart
	ceil   float64 // the smallest failed step of this search; +Inf if none

	best      float64 // the best feasible step with a known slope; 0 if none
	bestF     float64 // its loss
	bestG     float64 // its slope
	finishing bool    // the evaluation in flight is at best, to end the search
	gradAsked bool    // the evaluation in flight includes the gradient
}

func (s *infeasibleGuard) Init(f, g, step float64) optimize.Operation {
	s.f0, s.g0 = f, g
	s.ceil = math.Inf(1)
	s.best, s.bestF, s.bestG = 0, f, g
	s.finishing = false
	return s.start(step)
}

// start (re)starts inner at step.
func (s *infeasibleGuard) start(step float64) optimize.Operation {
	s.step, s.first = step, step
	op := s.inner.Init(s.f0, s.g0, step)
	s.gradAsked = op&optimize.GradEvaluation != 0
	return op
}

func (s *infeasibleGuard) Iterate(f, g float64) (optimize.Operation, float64, error) {
	if s.finishing {
		return optimize.MajorIteration, s.step, nil
	}
	if !(f < math.Inf(1)) { // a failed evaluation (+Inf or NaN)
		if s.step < s.ceil {
			s.ceil = s.step
		} else {
			s.ceil = s.first // inner went back past a failure: shrink the restarts
		}
		op := s.start(infeasibleShrink * s.ceil)
		return op, s.step, nil
	}
	if s.gradAsked && f < s.bestF {
		s.best, s.bestF, s.bestG = s.step, f, g
	}
	op, step, err := s.inner.Iterate(f, g)
	switch {
	case err != nil || op == optimize.MajorIteration:
		if err != nil && s.acceptBest() {
			return s.finish()
		}
		return op, step, err
	case step >= s.ceil:
		// inner heads back past a failure, as a Wolfe search does while
		// the slope is negative: end at the best point if it will do, or
		// restart nearer.
		if s.acceptBest() {
			return s.finish()
		}
		s.ceil = s.first
		return s.start(infeasibleShrink * s.ceil), s.step, nil
	}
	s.step = step
	s.gradAsked = op&optimize.GradEvaluation != 0
	return op, step, nil
}

// finish asks for the loss and gradient at the best feasible step, and ends
// the search at the next call of Iterate.
func (s *infeasibleGuard) finish() (optimize.Operation, float64, error) {
	s.finishing = true
	if s.bestG <= s.g0 {
		*s.bent = true
	}
	s.step = s.best
	s.gradAsked = true
	return optimize.FuncEvaluation | optimize.GradEvaluation, s.best, nil
}

// acceptBest reports whether the best feasible trial may end a search that
// met failures: it has the sufficient decrease of gonum's Backtracking
// (Armijo, factor 1e-4).
func (s *infeasibleGuard) acceptBest() bool {
	return !math.IsInf(s.ceil, 1) && s.best > 0 &&
		optimize.ArmijoConditionMet(s.bestF, s.f0, s.g0, s.best, 1e-4)
}

// failure is one failed evaluation of the objective.
type failure struct {
	eval  int
	cause error
}

// Error names the evaluation and the cause; an error of this package shows
// without its prefix, as inside errorf.
func (f failure) Error() string {
	return fmt.Sprintf("evaluation %d: %s", f.eval, pkgerr.Package{Prefix: prefix}.Text(f.cause))
}
func (f failure) Unwrap() error { return f.cause }
