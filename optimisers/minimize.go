package optimisers

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ad"
)

// Objective is a loss over the flat parameter vector θ, the form Minimize
// takes. It returns the loss at θ. When grad is non-nil, it also fills grad
// with the gradient; grad has len(θ). Gradient-free methods such as
// NelderMead pass a nil grad, so an objective used with them must allow
// one. FromAD's does, and then skips the backward sweep.
//
// An objective must not keep θ or grad: Minimize reuses both buffers for
// every evaluation. Minimize calls it from one goroutine at a time, though
// not necessarily the caller's. A non-nil error means the evaluation
// failed, and the loss is then ignored: Minimize takes the point as
// infeasible and shrinks its step.
type Objective func(θ, grad []float32) (float64, error)

// Minimize minimises fg over the flat parameter vector θ with a
// gonum/optimize method and writes the best point found into θ. Methods
// include LBFGS, BFGS, CG and NelderMead, LBFGSB for bounds, NewtonCG
// for a Hessian-vector product, and Newton for a full Hessian.
//
// A failed evaluation is an infeasible point, not the end of the run: an
// error of fg, a NaN or +Inf loss, or a non-finite gradient at a finite
// loss. Examples are an ODE solve that blows up when a rate crosses zero,
// or a model undefined past a parameter's boundary. The line search of
// LBFGS, BFGS, CG and GradientDescent then halves its step and searches
// on along the same direction; a feasible point resets the count. When the
// minimum along the line lies past the failed points, the search ends at
// its best feasible point with sufficient decrease. If that step spoils a
// quasi-Newton method's memory so that its next direction does not
// descend, Minimize restarts the method there, up to 20 times; Result's
// counts add up over the restarts. Other
// methods, such as NelderMead, see +Inf at a failed point. The run ends
// with an error in two cases. When fg fails at the starting point, fg is
// not called again and the error wraps its cause. When
// MaxConsecutiveFailures evaluations in a row fail, the error says so and
// wraps the first and the last cause, so errors.Is and errors.As reach
// them. The run stops through gonum's Problem.Status hook, which gonum
// checks after every evaluation. TestMinimizeFailedEvaluationIsInfeasible
// holds fits whose first trial step crosses such a boundary.
//
// method nil means &optimize.LBFGS{}. For the line-search methods above,
// Minimize runs a copy of method whose Linesearcher (gonum's default when
// nil) is wrapped to back off from failed points. A method value and its
// Linesearcher carry their run's state, so do not share one between
// concurrent calls. settings nil means
// the defaults below; Minimize never modifies *settings.
// Settings.Concurrent above 1 is an error, because fg need not be safe for
// concurrent use. A method that needs a Hessian, such as optimize.Newton,
// is an error: pass Newton, which gives gonum's its Hessian.
//
// Precision: gonum works in float64. Minimize rounds each point to float32
// for fg and widens the loss and the gradient back. The conversion buffers
// are allocated once per call, so an evaluation allocates nothing beyond
// gonum's own bookkeeping. gonum asks for the loss and the gradient at a
// point separately; Minimize answers both from one call of fg.
//
// Stopping at float32 precision: gonum's default stopping rules are beyond
// a float32 objective's reach. So when settings has no Converger, Minimize
// uses Float32Converge instead. A gradient method may also end with a failed
// line search, optimize.ErrLinesearcherFailure or ErrNoProgress. Minimize
// then judges the last point x. It evaluates the gradient once more at
// x + δ, with δᵢ = ±2⁻¹¹·max(|xᵢ|, 1), about √ε of float32. If ‖∇f(x)‖∞ is
// no larger than ‖∇f(x+δ) − ∇f(x)‖∞, x is within δ of the minimum. No
// decrease that float32 can represent is left to find, so the run has
// converged: Result.Status is Float32Converged and the error is nil.
// Otherwise x is far from an optimum, say by a wrong gradient or a
// discontinuity. The line-search error then stays, with the gradient sizes
// added. TestMinimizeFloat32ConvergedAtOptimum holds runs that end this way
// at the optimum. To stop earlier, set Settings.GradientThreshold to a
// gradient size that float32 resolves for the objective.
//
// Result: Minimize returns gonum's Result and gonum's error unchanged,
// with two exceptions. A failure of fg that ends the run is the error, as
// above. A line-search error after failed evaluations also names the
// latest failure.
//
// θ after the run: whenever gonum reports a point with a finite loss, θ
// holds Result.X rounded to float32. That is the point of the last major
// iteration, whose loss is never above the start's. For gonum's line-search
// methods it is the last accepted step; for NelderMead, the best vertex.
// This holds whether or not the run converged, and also when an error ended
// it, so a failed run keeps its progress. When the objective failed at the
// start, θ is unchanged. Errors found before the run leave θ unchanged and
// return a nil Result: a nil fg, an empty or non-finite θ, bad settings, or
// an unsuited method.
func Minimize(fg Objective, θ []float32, method optimize.Method, settings *optimize.Settings) (*optimize.Result, error) {
	if fg == nil {
		return nil, errorf("Minimize: the objective fg is nil")
	}
	if len(θ) == 0 {
		return nil, errorf("Minimize: θ is empty, want at least one parameter")
	}
	for i, v := range θ {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, errorf("Minimize: θ[%d] is %v; the start must be finite", i, v)
		}
	}
	if settings != nil && settings.Concurrent > 1 {
		return nil, errorf("Minimize: Settings.Concurrent is %d; want 0 or 1 (fg is called from one goroutine at a time)", settings.Concurrent)
	}
	set := settings
	if set == nil || set.Converger == nil {
		s := optimize.Settings{}
		if set != nil {
			s = *set // the caller's settings stay untouched
		}
		s.Converger = Float32Converge()
		set = &s
	}
	if lb, ok := method.(*LBFGSB); ok {
		return lb.minimize(fg, θ, set) // bounds: a loop of its own, lbfgsb.go
	}
	if nc, ok := method.(*NewtonCG); ok {
		return nc.minimize(fg, θ, set) // trust-region Newton: newton.go
	}
	if method == nil {
		method = &optimize.LBFGS{}
	}
	var hess func(θ []float32, h *mat.SymDense) error
	if nw, ok := method.(*Newton); ok {
		g, h, err := nw.gonum(len(θ))
		if err != nil {
			return nil, err
		}
		method, hess = g, h
	}
	uses, err := method.Uses(optimize.Available{Grad: true, Hess: hess != nil})
	if err != nil {
		return nil, errorf("Minimize: method %T cannot run on a loss and gradient: %w", method, err)
	}

	n := len(θ)
	b := &minimizeBridge{fg: fg, x32: make([]float32, n), x64: make([]float64, n), start: set.InitValues == nil}
	prob := optimize.Problem{Func: b.loss, Status: b.status}
	if uses.Grad {
		b.g32 = make([]float32, n)
		b.g64 = make([]float64, n)
		prob.Grad = b.grad
	}
	if uses.Hess {
		b.hess, b.h32 = hess, make([]float32, n)
		prob.Hess = b.hessian
	}
	x0 := make([]float64, n)
	for i, v := range θ {
		x0[i] = float64(v)
	}

	res, err := b.run(prob, x0, set, method)
	if b.err != nil {
		// The objective's failure is the cause; gonum's error, if any, is a
		// consequence (for example ErrFunc for a NaN at the start).
		err = b.err
	}
	finite := res != nil && len(res.X) == n && minimizeFinite(res.F) && !slices.ContainsFunc(res.X, minimizeNotFinite)
	if finite && b.err == nil && uses.Grad && len(res.Gradient) == n &&
		(errors.Is(err, optimize.ErrLinesearcherFailure) || errors.Is(err, optimize.ErrNoProgress)) {
		g, moved, ok := b.float32Resolution(res.X, res.Gradient)
		switch {
		case b.err != nil:
			err = b.err
		case ok:
			res.Status, err = Float32Converged, nil
		default:
			err = errorf("Minimize: %w far from an optimum: the gradient at the last point is %.3g (max norm), above the %.3g it changes by over a step of 2⁻¹¹ relative, so float32 precision is not the cause", err, g, moved)
		}
		if err != nil && b.fails.total > 0 {
			err = errorf("%w; %d evaluations failed in the run, the latest at %w", err, b.fails.total, b.fails.recent)
		}
	}
	if finite {
		for i, v := range res.X {
			θ[i] = float32(v)
		}
	}
	return res, err
}

// maxRestarts bounds how often Minimize restarts a quasi-Newton method
// whose memory an accepted step near failed points has spoilt.
const maxRestarts = 20

// run runs gonum's Minimize, and restarts it from the point reached when a
// step accepted next to failed points (see infeasibleGuard) left a
// direction that does not descend. The counts of the runs add up.
func (b *minimizeBridge) run(prob optimize.Problem, x0 []float64, set *optimize.Settings, method optimize.Method) (*optimize.Result, error) {
	var bent bool
	res, err := optimize.Minimize(prob, x0, set, guardLinesearch(method, &bent))
	for range maxRestarts {
		if !bent || b.err != nil || !errors.Is(err, optimize.ErrNonDescentDirection) ||
			res == nil || !minimizeFinite(res.F) || slices.ContainsFunc(res.X, minimizeNotFinite) {
			break
		}
		bent = false
		prev := res
		res, err = optimize.Minimize(prob, prev.X, set, guardLinesearch(method, &bent))
		if res == nil {
			return prev, err
		}
		res.Stats.MajorIterations += prev.Stats.MajorIterations
		res.Stats.FuncEvaluations += prev.Stats.FuncEvaluations
		res.Stats.GradEvaluations += prev.Stats.GradEvaluations
		res.Stats.Runtime += prev.Stats.Runtime
	}
	return res, err
}

// Float32Converged is the Status of a gradient-method run whose line search
// failed because float32 rounding left no decrease to find. The last point
// is a minimum at float32 precision; see Minimize.
var Float32Converged = optimize.NewStatus("Float32Converged", false, nil)

// Float32Converge returns the stopping rule Minimize uses when settings
// have no Converger. The run has converged when the loss has not fallen by
// a relative 1e-6 in 20 major iterations, about 8 float32 roundings. The
// absolute 1e-30 serves a loss that goes to zero.
func Float32Converge() *optimize.FunctionConverge {
	return &optimize.FunctionConverge{Relative: 1e-6, Absolute: 1e-30, Iterations: 20}
}

// float32Resolution evaluates the gradient at x + δ, with
// δᵢ = ±2⁻¹¹·max(|xᵢ|, 1) and alternating signs. It reports ‖g‖∞,
// ‖∇f(x+δ) − g‖∞, and whether the first is within the second. If so, x is
// as close to a minimum as a float32 objective can tell.
func (b *minimizeBridge) float32Resolution(x, g []float64) (gNorm, moved float64, ok bool) {
	xd := make([]float64, len(x))
	for i, v := range x {
		d := math.Ldexp(math.Max(math.Abs(v), 1), -11)
		if i%2 == 1 {
			d = -d
		}
		xd[i] = float64(float32(v + d))
	}
	saved := b.fails
	b.fails.streak = 0
	b.loss(xd)
	b.fails = saved // a failure here only voids the judgement
	if b.err != nil || !b.ok || !b.cached {
		return 0, 0, false
	}
	for i, v := range g {
		gNorm = math.Max(gNorm, math.Abs(v))
		moved = math.Max(moved, math.Abs(b.g64[i]-v))
	}
	return gNorm, moved, gNorm <= moved
}

// minimizeBridge turns fg into gonum's Func, Grad and Status. gonum asks for
// the loss and then the gradient at the same point; the gradient computed
// with the loss is cached with its point and handed out on the second call.
//
// A failed evaluation (an error, a non-finite loss, or a non-finite
// gradient) is an infeasible point: the bridge reports +Inf and a NaN
// gradient, and the guarded line search shrinks its step. The run stops,
// through status, when the start fails or MaxConsecutiveFailures
// evaluations in a row fail.
type minimizeBridge struct {
	fg     Objective
	x32    []float32 // the point, as fg sees it
	g32    []float32 // fg's gradient; nil for a gradient-free method
	x64    []float64 // the point of the cached gradient
	g64    []float64 // the cached gradient
	cached bool      // x64, g64 hold the gradient of the last evaluation
	ok     bool      // the last evaluation succeeded
	start  bool      // the next evaluation is at the starting point
	evals  int       // calls of fg
	err    error     // the failure that stops the run

	fails failState

	hess func(θ []float32, h *mat.SymDense) error // Newton's Hessian; nil for other methods
	h32  []float32                                // its point
	hevs int                                      // its calls
}

// failState counts the failed evaluations of a run.
type failState struct {
	streak      int     // failed evaluations in a row
	first, last failure // the first and the last failure of the streak
	total       int     // failed evaluations in the run
	recent      failure // the latest failure of the run
}

// loss evaluates fg at x and returns the loss, or +Inf at a failed point.
// A failure at the start, or the last of a streak too long, sets err,
// which status hands to gonum; gonum checks status after the evaluation and
// stops before a method sees the value.
func (b *minimizeBridge) loss(x []float64) float64 {
	b.evals++
	start := b.start
	b.start = false
	for i, v := range x {
		b.x32[i] = float32(v)
	}
	f, err := b.fg(b.x32, b.g32)
	if b.err != nil {
		return f // already failing; gonum stops at the next status check
	}
	copy(b.x64, x)
	b.cached = b.g32 != nil
	b.ok = false
	if cause := b.check(f, err); cause != nil {
		b.fail(cause, start)
		for i := range b.g64 {
			b.g64[i] = math.NaN()
		}
		return math.Inf(1)
	}
	b.ok = true
	b.fails.streak = 0
	for i, g := range b.g32 {
		b.g64[i] = float64(g)
	}
	return f
}

// check returns why the evaluation that gave f and err failed, or nil.
func (b *minimizeBridge) check(f float64, err error) error {
	switch {
	case err != nil:
		return err
	case math.IsNaN(f) || math.IsInf(f, 1):
		return fmt.Errorf("the loss is %v, want a number", f)
	case math.IsInf(f, -1):
		return nil // gonum stops with FunctionNegativeInfinity
	}
	for i, g := range b.g32 {
		if minimizeNotFinite(float64(g)) {
			return fmt.Errorf("the gradient is %v at index %d (loss %g), want finite values", g, i, f)
		}
	}
	return nil
}

// fail records a failed evaluation and sets err when the run must stop.
func (b *minimizeBridge) fail(cause error, start bool) {
	fl := failure{b.evals, cause}
	if start {
		b.err = errorf("Minimize: the objective failed at the start (evaluation %d): %w", b.evals, cause)
		return
	}
	s := &b.fails
	s.total++
	s.recent = fl
	if s.streak++; s.streak == 1 {
		s.first = fl
	}
	s.last = fl
	if s.streak >= MaxConsecutiveFailures {
		b.err = errorf("Minimize: the objective failed at %d evaluations in a row (%d to %d), the most Minimize tries (MaxConsecutiveFailures) while it shrinks the step; the first failure, %w; the last, %w",
			s.streak, s.first.eval, s.last.eval, s.first, s.last)
	}
}

func (b *minimizeBridge) grad(g, x []float64) {
	if b.err != nil {
		return // the run is stopping; do not call fg again
	}
	if !b.cached || !slices.Equal(x, b.x64) {
		b.loss(x)
	}
	copy(g, b.g64)
}

// hessian evaluates Newton's Hessian at x into h; a failure or a
// non-finite entry sets err, which ends the run.
func (b *minimizeBridge) hessian(h *mat.SymDense, x []float64) {
	if b.err != nil {
		return
	}
	b.hevs++
	for i, v := range x {
		b.h32[i] = float32(v)
	}
	if err := b.hess(b.h32, h); err != nil {
		b.err = errorf("Minimize: Newton: the Hessian failed (Hessian %d): %w", b.hevs, err)
		return
	}
	n := len(x)
	for i := range n {
		for j := i; j < n; j++ {
			if v := h.At(i, j); minimizeNotFinite(v) {
				b.err = errorf("Minimize: Newton: the Hessian has %v at (%d, %d) (Hessian %d), want finite values", v, i, j, b.hevs)
				return
			}
		}
	}
}

func (b *minimizeBridge) status() (optimize.Status, error) {
	if b.err != nil {
		return optimize.Failure, b.err
	}
	return optimize.NotTerminated, nil
}

func minimizeFinite(v float64) bool    { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func minimizeNotFinite(v float64) bool { return !minimizeFinite(v) }

// FromAD adapts f to an Objective. f is a function of the flat parameter
// vector written with ad ops, and returns a single number, for example from
// ad.Sum or ad.Mean.
//
// The objective records f on one tape, made when FromAD is called. Per
// evaluation it does Param, the forward pass and Backward, copies the
// gradient into grad and Resets the tape. A nil grad skips Backward. Once
// the tape's arenas have grown to f's size, an evaluation allocates
// nothing. The objective is not safe for concurrent use.
//
// An evaluation fails with an error and a zero loss in these cases: the
// tape records an error, which is then the cause; f returns a non-scalar,
// the zero Var or a Var of another tape; or len(grad) != len(θ). The tape
// is reset after a failure, so the objective can be called again.
func FromAD(f func(ad.Var) ad.Var) Objective {
	t := ad.NewTape()
	return func(θ, grad []float32) (float64, error) {
		t.Reset() // also recovers the tape if an earlier f panicked
		loss, err := fromADEval(t, f, θ, grad)
		t.Reset()
		return loss, err
	}
}

func fromADEval(t *ad.Tape, f func(ad.Var) ad.Var, θ, grad []float32) (float64, error) {
	if grad != nil && len(grad) != len(θ) {
		return 0, errorf("FromAD: grad has length %d, want %d (len(θ))", len(grad), len(θ))
	}
	p := t.Param(θ)
	y := f(p)
	if err := t.Err(); err != nil {
		return 0, errorf("FromAD: %w", err)
	}
	switch {
	case y.Tape() == nil:
		return 0, errorf("FromAD: f returned the zero Var, want a Var computed from its argument on its tape")
	case y.Tape() != t:
		return 0, errorf("FromAD: f returned a Var of another tape, want a Var computed from its argument on its tape")
	case y.Size() != 1:
		return 0, errorf("FromAD: f returned shape %v; want a single number (use ad.Sum or ad.Mean)", y.Shape())
	}
	loss := float64(y.Item())
	if grad == nil {
		return loss, nil
	}
	if err := t.Backward(y); err != nil {
		return 0, errorf("FromAD: %w", err)
	}
	copy(grad, t.GradWrt(p))
	return loss, nil
}
