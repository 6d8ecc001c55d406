package optimisers

import (
	"math"
	"time"

	"gonum.org/v1/gonum/optimize"
)

// LBFGSB minimises within bounds: lower ≤ θ ≤ upper, element by element.
// It is the limited-memory quasi-Newton method of Byrd, Lu, Nocedal and
// Zhu (1995), the algorithm of SciPy's minimize(method="L-BFGS-B"). Pass it
// to Minimize:
//
//	b, err := optimisers.BoundsByPath(lay, map[string]optimisers.Interval{"gamma": {0, 1}})
//	res, err := optimisers.Minimize(fg, θ, &optimisers.LBFGSB{Bounds: b}, nil)
//
// Each iteration finds the generalized Cauchy point, the first minimum of
// the quadratic model along the gradient path bent at the bounds; then it
// minimises the model over the variables still free there, and searches
// along the line to that point for a step that satisfies the strong Wolfe
// conditions, by Moré and Thuente's search with L-BFGS-B's constants.
// Every trial point is inside the bounds. With the same start, the
// iterates follow SciPy's to float32 rounding (TestLBFGSBMatchesSciPy).
// An iteration costs O(n·m²) beyond the evaluation, m the Memory, against
// O(n·m) for LBFGS.
//
// Convergence is judged on the projected gradient, SciPy's gtol: the run
// has converged when max |P(θ − g) − θ| ≤ Settings.GradientThreshold,
// where P clips to the bounds. At a bound the gradient pushes against it
// counts zero. Result.Status is then optimize.GradientThreshold, and
// Result.Gradient is the full gradient at Result.X, which need not be
// small. A zero GradientThreshold means SciPy's 1e-5; NaN turns the test
// off. The Converger (Minimize's default Float32Converge), MajorIterations,
// FuncEvaluations, GradEvaluations, Runtime and Recorder work as in gonum;
// an evaluation counts as one of each. InitValues is an error.
//
// The start is projected onto the bounds, as SciPy does. The bounds are
// rounded inward to float32 values, so every θ the objective sees is
// within them; an interval that holds no float32 value is an error. The
// iterates are float32 values held in float64, so the step between two of
// them, which the quasi-Newton update uses, is the step between the points
// the objective saw.
//
// A failed evaluation is an infeasible point, not the end. When the
// objective returns an error, a non-finite loss or a non-finite gradient
// inside a line search, the search starts again from the iterate with half
// the failed step as its largest, and goes on. The failure counts as one
// of the search's MaxLineSearch evaluations, so a search halves a failing
// step at most 20 times by default. A search that finds no acceptable
// point drops the memory, if it holds any, and searches again along the
// projected gradient. If a search fails with an empty memory, the run ends; when
// evaluations failed in that search, the error wraps the last failure's
// cause, reachable by errors.Is and errors.As, and θ holds the last
// iterate. A failure at the start ends the run at once, with θ unchanged.
//
// When a search fails with no failed evaluation, float32 rounding may have
// left no decrease to find. The run then checks as Minimize does: if the
// projected gradient is within the change of the gradient over a step of
// 2⁻¹¹ relative, the status is Float32Converged and the error nil.
//
// LBFGSB is an optimize.Method only so that Minimize can take it: Minimize
// runs it in a loop of its own, because gonum tests convergence on the full
// gradient, which is not zero where a bound is active. gonum's own
// optimize.Minimize refuses it: Uses returns an error, on which gonum
// panics.
//
// An LBFGSB value holds no state of a run, so one value may serve
// concurrent calls of Minimize.
type LBFGSB struct {
	// Bounds on θ; the zero Bounds is unbounded, and the run is then
	// L-BFGS.
	Bounds Bounds
	// Memory is the number of correction pairs kept, SciPy's maxcor. Zero
	// means 10.
	Memory int
	// MaxLineSearch is the most evaluations one line search makes, SciPy's
	// maxls. Zero means 20.
	MaxLineSearch int

	ownLoop // the optimize.Method side: Minimize runs it in its own loop
}

// Line-search constants of L-BFGS-B (the Fortran code's dcsrch call): the
// sufficient decrease and curvature parameters of the strong Wolfe
// conditions, and the relative width of the interval at which the search
// ends.
const (
	lbFtol = 1e-3
	lbGtol = 0.9
	lbXtol = 0.1
	lbBig  = 1e10 // the largest step along an unbounded direction
)

// lbRun is the state of one LBFGSB run.
type lbRun struct {
	fg     Objective
	set    *optimize.Settings
	maxLS  int
	lo, hi []float64
	mem    *lbMemory
	md     *lbModel

	x, g    []float64 // the current iterate and its gradient
	f       float64
	xt, gt  []float64 // the trial point
	xl, gl  []float64 // the best acceptable point of the search so far
	mt      optimize.MoreThuente
	d, xbar []float64
	s, y    []float64
	x32     []float32
	g32     []float32

	iter, evals int
	start       time.Time
	fails       int   // failed evaluations in the current search
	lastFail    error // the last failed evaluation's cause
}

// minimize runs LBFGSB from θ; set is non-nil (Minimize fills in the
// Converger). See LBFGSB.
func (m *LBFGSB) minimize(fg Objective, θ []float32, set *optimize.Settings) (*optimize.Result, error) {
	if m == nil {
		m = &LBFGSB{} // a nil *LBFGSB is the zero one: unbounded
	}
	n := len(θ)
	switch {
	case m.Memory < 0:
		return nil, errorf("Minimize: LBFGSB.Memory = %d, want ≥ 0 (0 means 10)", m.Memory)
	case m.MaxLineSearch < 0:
		return nil, errorf("Minimize: LBFGSB.MaxLineSearch = %d, want ≥ 0 (0 means 20)", m.MaxLineSearch)
	case set.InitValues != nil:
		return nil, errorf("Minimize: LBFGSB does not take Settings.InitValues, want nil (it evaluates the projected start itself)")
	}
	lo, hi, err := m.Bounds.float32Box(n)
	if err != nil {
		return nil, errorf("Minimize: LBFGSB: %w", err)
	}
	mem := cmp0(m.Memory, 10)
	r := &lbRun{fg: fg, set: set, maxLS: cmp0(m.MaxLineSearch, 20), lo: lo, hi: hi,
		mem: newLBMemory(n, mem), md: newLBModel(n, mem), start: time.Now(),
		x32: make([]float32, n), g32: make([]float32, n)}
	for _, p := range []*[]float64{&r.x, &r.g, &r.xt, &r.gt, &r.xl, &r.gl, &r.d, &r.xbar, &r.s, &r.y} {
		*p = make([]float64, n)
	}
	for i, v := range θ {
		r.x[i] = math.Min(math.Max(float64(v), lo[i]), hi[i])
	}
	r.f, err = r.eval(r.x, r.g)
	if err != nil {
		return &optimize.Result{Status: optimize.Failure, Stats: r.stats()},
			errorf("Minimize: LBFGSB: the objective failed at the start (evaluation 1): %w", err)
	}
	status, err := r.loop()
	for i, v := range r.x {
		θ[i] = float32(v)
	}
	res := &optimize.Result{Location: optimize.Location{X: r.x, F: r.f, Gradient: r.g}, Stats: r.stats(), Status: status}
	if rec := set.Recorder; rec != nil {
		if rerr := rec.Record(&res.Location, optimize.PostIteration, &res.Stats); rerr != nil && err == nil {
			res.Status, err = optimize.Failure, rerr
		}
	}
	return res, err
}

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (r *lbRun) stats() optimize.Stats {
	return optimize.Stats{MajorIterations: r.iter, FuncEvaluations: r.evals, GradEvaluations: r.evals, Runtime: time.Since(r.start)}
}

// loop iterates from the evaluated start until a stopping rule holds.
func (r *lbRun) loop() (optimize.Status, error) {
	set := r.set
	pgtol := set.GradientThreshold
	if pgtol == 0 {
		pgtol = 1e-5 // SciPy's gtol
	}
	set.Converger.Init(len(r.x))
	if set.Recorder != nil {
		if err := set.Recorder.Init(); err != nil {
			return optimize.Failure, err
		}
	}
	loc := &optimize.Location{X: r.x, F: r.f, Gradient: r.g}
	op := optimize.InitIteration
	retry := false // the memory was just dropped: the point is not new
	for {
		if !retry {
			if st, err := r.major(loc, op, pgtol); st != optimize.NotTerminated {
				return st, err
			}
			op = optimize.MajorIteration
		}
		retry = false
		r.md.cauchy(r.mem, r.x, r.g, r.lo, r.hi)
		r.md.subspace(r.mem, r.x, r.g, r.lo, r.hi, r.xbar)
		for i, v := range r.xbar {
			r.d[i] = v - r.x[i]
		}
		ok := false
		r.fails, r.lastFail = 0, nil
		if dot(r.d, r.g) < 0 {
			var st optimize.Status
			ok, st = r.search()
			if st != optimize.NotTerminated {
				return st, nil
			}
		}
		if !ok {
			if r.mem.k > 0 {
				r.mem.reset() // L-BFGS-B's refresh: try again along the projected gradient
				retry = true
				continue
			}
			return r.searchFailed()
		}
		for i := range r.x {
			r.s[i] = r.xt[i] - r.x[i]
			r.y[i] = r.gt[i] - r.g[i]
		}
		r.mem.push(r.s, r.y)
		r.x, r.xt = r.xt, r.x
		r.g, r.gt = r.gt, r.g
		r.iter++
	}
}

// major records the current point as a major iteration (or the initial
// one) and checks the stopping rules there.
func (r *lbRun) major(loc *optimize.Location, op optimize.Operation, pgtol float64) (optimize.Status, error) {
	set := r.set
	loc.X, loc.F, loc.Gradient = r.x, r.f, r.g
	if set.Recorder != nil {
		st := r.stats()
		if err := set.Recorder.Record(loc, op, &st); err != nil {
			return optimize.Failure, err
		}
	}
	if r.projGradNorm() <= pgtol {
		return optimize.GradientThreshold, nil
	}
	if st := set.Converger.Converged(loc); st != optimize.NotTerminated {
		return st, nil
	}
	if set.MajorIterations > 0 && r.iter >= set.MajorIterations {
		return optimize.IterationLimit, nil
	}
	return optimize.NotTerminated, nil
}

// projGradNorm returns max |P(x − g) − x|, the projected gradient's size.
func (r *lbRun) projGradNorm() float64 {
	pg := 0.0
	for i, gi := range r.g {
		v := math.Min(math.Max(r.x[i]-gi, r.lo[i]), r.hi[i]) - r.x[i]
		pg = math.Max(pg, math.Abs(v))
	}
	return pg
}

// searchFailed ends a run whose line search failed with an empty memory.
// See LBFGSB for the float32 check.
func (r *lbRun) searchFailed() (optimize.Status, error) {
	pg := r.projGradNorm()
	if r.fails > 0 {
		return optimize.Failure, errorf("Minimize: LBFGSB: the line search of iteration %d found no acceptable point along the projected gradient (max norm %.3g); %d of its evaluations failed, the last with: %w",
			r.iter+1, pg, r.fails, r.lastFail)
	}
	for i, v := range r.x {
		δ := math.Ldexp(math.Max(math.Abs(v), 1), -11)
		if i%2 == 1 {
			δ = -δ
		}
		r.xt[i] = float64(float32(math.Min(math.Max(v+δ, r.lo[i]), r.hi[i])))
	}
	if _, err := r.eval(r.xt, r.gt); err != nil {
		return optimize.Failure, errorf("Minimize: LBFGSB: %w at iteration %d (projected gradient %.3g), and the objective failed 2⁻¹¹ away: %w",
			optimize.ErrLinesearcherFailure, r.iter+1, pg, err)
	}
	moved := 0.0
	for i, v := range r.g {
		moved = math.Max(moved, math.Abs(r.gt[i]-v))
	}
	if pg <= moved {
		return Float32Converged, nil
	}
	return optimize.Failure, errorf("Minimize: LBFGSB: %w far from an optimum: the projected gradient at the last point is %.3g (max norm), above the %.3g the gradient changes by over a step of 2⁻¹¹ relative, so float32 precision is not the cause",
		optimize.ErrLinesearcherFailure, pg, moved)
}

// eval calls the objective at x (float32 values) and widens its gradient
// into g. A non-finite loss or gradient is an error.
func (r *lbRun) eval(x, g []float64) (float64, error) {
	r.evals++
	return evalWidened(r.fg, x, g, r.x32, r.g32, r.evals)
}

// limit reports a limit of the settings that the run has reached.
func (r *lbRun) limit() optimize.Status {
	set := r.set
	switch {
	case set.FuncEvaluations > 0 && r.evals >= set.FuncEvaluations:
		return optimize.FunctionEvaluationLimit
	case set.GradEvaluations > 0 && r.evals >= set.GradEvaluations:
		return optimize.GradientEvaluationLimit
	case set.Runtime > 0 && time.Since(r.start) >= set.Runtime:
		return optimize.RuntimeLimit
	}
	return optimize.NotTerminated
}
