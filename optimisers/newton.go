package optimisers

import (
	"math"
	"time"

	"gonum.org/v1/gonum/optimize"
)

// NewtonCG is a trust-region Newton method that needs only products of the
// Hessian with a vector, not the Hessian itself. Pass it to Minimize:
//
//	res, err := optimisers.Minimize(fg, θ, &optimisers.NewtonCG{Hv: hv}, nil)
//
// Each iteration minimises the quadratic model
// m(p) = f + gᵀp + ½pᵀHp within ‖p‖₂ ≤ Δ by Steihaug–Toint truncated
// conjugate gradients (Nocedal and Wright, Numerical Optimization, 2nd ed.,
// Algorithm 7.2). CG stops at the boundary when it meets negative curvature
// or leaves the region, and otherwise when the residual is below
// min(CGTol, √‖g‖)·‖g‖ (their (7.3), superlinear convergence). The step is
// taken when the ratio ρ of the actual to the predicted decrease exceeds
// Eta; the radius is quartered when ρ < ¼ and doubled, up to MaxRadius,
// when ρ > ¾ and the step reached the boundary (their Algorithm 4.1).
// The CG path does not depend on the radius, so a rejected step is
// shortened along the path already computed, without a product: the run
// keeps the first 20 segments of each path (21·len(θ) float64s) and
// re-runs CG only when the shorter step lies beyond them.
//
// A failed evaluation is an infeasible point: when the objective returns an
// error, a non-finite loss or a non-finite gradient at a trial point, the
// step is rejected and the radius quartered, as for ρ < 0. The run ends
// with an error wrapping the first and last cause after
// MaxConsecutiveFailures failures in a row. A failure at the start ends
// the run at once, with θ unchanged. An error of Hv ends the run, with θ
// at the last accepted point.
//
// Stopping: the run has converged when ‖g‖∞ ≤ Settings.GradientThreshold
// (zero means 1e-5, NaN turns the test off); Result.Status is then
// optimize.GradientThreshold. The Converger (Minimize's default
// Float32Converge) sees every accepted point. When the radius falls below
// the float32 spacing of θ, the run checks as Minimize does after a failed
// line search: a gradient within its change over a step of 2⁻¹¹ relative
// gives Float32Converged, otherwise an error. MajorIterations counts
// accepted steps, FuncEvaluations and GradEvaluations count calls of the
// objective, and HessEvaluations counts calls of Hv. InitValues is an
// error.
//
// NewtonCG is an optimize.Method only so that Minimize can take it; gonum's
// own optimize.Minimize refuses it. A NewtonCG value holds no state of a
// run, so one value may serve concurrent calls of Minimize when its Hv may.
type NewtonCG struct {
	// Hv writes the product of the Hessian of the objective at θ with v
	// into hv. θ, v and hv have len(θ); Hv must not keep them. It is
	// called at accepted points only, after the objective at the same θ.
	// It may be inexact: CG stops at a residual of CGTol relative, so
	// products accurate well within it serve as exact ones do
	// (TestNewtonCGSpiralFit in ode/odead takes them from an ODE solve at
	// a looser tolerance than its gradients').
	Hv func(θ, v, hv []float32) error
	// MaxCG bounds the CG iterations, and so the Hv calls, per step. Zero
	// means len(θ).
	MaxCG int
	// CGTol caps the forcing term: CG stops when its residual is below
	// min(CGTol, √‖g‖)·‖g‖. Zero means ½, Nocedal and Wright's choice; a
	// small value makes each step a near-exact Newton step, fewer
	// iterations for more Hv calls.
	CGTol float64
	// Radius is the first trust-region radius, in the 2-norm of θ. Zero
	// means 1.
	Radius float64
	// MaxRadius bounds the radius. Zero means 1000·Radius.
	MaxRadius float64
	// Eta is the least ratio of actual to predicted decrease for a step
	// to be taken, 0 ≤ Eta < ¼. Zero means 0.15, SciPy's trust-ncg value.
	Eta float64

	ownLoop // the optimize.Method side: Minimize runs it in its own loop
}

// ncgRun is the state of one NewtonCG run.
type ncgRun struct {
	m      *NewtonCG
	fg     Objective
	set    *optimize.Settings
	maxCG  int
	radius float64
	maxRad float64
	eta    float64
	cgTol  float64

	x, g   []float64 // the current point and its gradient
	f      float64
	xt, gt []float64    // the trial point
	p      []float64    // the step
	z, r   []float64    // CG iterate and residual g + Hz
	d, hd  []float64    // CG direction and H·d
	path   [][]float64  // the steps Δⱼ of the CG path's first segments, path[:nseg] in use
	seg    []ncgSegment // and their model and norm coefficients
	nseg   int
	pathOK bool    // the path was computed at the current point
	cut    bool    // the path has more segments than path holds
	pnorm  float64 // ‖p‖
	x32    []float32
	g32    []float32
	v32    []float32
	h32    []float32

	iter, evals, hvs int
	start            time.Time
}

// pathSegments bounds the CG segments a run keeps for rejected steps; a
// variable for the test that turns it off.
var pathSegments = 20

// ncgSegment is one segment of the Steihaug–Toint path, from the point
// P (the sum of the steps before it) to P + Δ. Along it, at P + sΔ, the
// model is m + s·slope + ½s²·curv and ‖P + sΔ‖² is n0 + 2s·n1 + s²·n2.
type ncgSegment struct{ m, slope, curv, n0, n1, n2 float64 }

// minimize runs NewtonCG from θ; set is non-nil (Minimize fills in the
// Converger). See NewtonCG.
func (m *NewtonCG) minimize(fg Objective, θ []float32, set *optimize.Settings) (*optimize.Result, error) {
	switch {
	case m == nil || m.Hv == nil:
		return nil, errorf("Minimize: NewtonCG.Hv is nil, want a Hessian-vector product")
	case m.MaxCG < 0:
		return nil, errorf("Minimize: NewtonCG.MaxCG = %d, want ≥ 0 (0 means len(θ))", m.MaxCG)
	case m.Radius < 0 || math.IsNaN(m.Radius) || math.IsInf(m.Radius, 0):
		return nil, errorf("Minimize: NewtonCG.Radius = %v, want a finite radius ≥ 0 (0 means 1)", m.Radius)
	case m.MaxRadius < 0 || math.IsNaN(m.MaxRadius):
		return nil, errorf("Minimize: NewtonCG.MaxRadius = %v, want ≥ 0 (0 means 1000·Radius)", m.MaxRadius)
	case m.Eta < 0 || m.Eta >= 0.25 || math.IsNaN(m.Eta):
		return nil, errorf("Minimize: NewtonCG.Eta = %v, want 0 ≤ Eta < 0.25 (0 means 0.15)", m.Eta)
	case m.CGTol < 0 || m.CGTol >= 1 || math.IsNaN(m.CGTol):
		return nil, errorf("Minimize: NewtonCG.CGTol = %v, want 0 ≤ CGTol < 1 (0 means 0.5)", m.CGTol)
	case set.InitValues != nil:
		return nil, errorf("Minimize: NewtonCG does not take Settings.InitValues, want nil")
	}
	r := newNCGRun(m, fg, set, len(θ))
	for i, v := range θ {
		r.x[i] = float64(v)
	}
	var err error
	r.f, err = r.eval(r.x, r.g)
	if err != nil {
		return &optimize.Result{Status: optimize.Failure, Stats: r.stats()},
			errorf("Minimize: NewtonCG: the objective failed at the start (evaluation 1): %w", err)
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

// newNCGRun allocates a run of m over n parameters with m's settings
// resolved to their defaults.
func newNCGRun(m *NewtonCG, fg Objective, set *optimize.Settings, n int) *ncgRun {
	r := &ncgRun{m: m, fg: fg, set: set, maxCG: cmp0(m.MaxCG, n), radius: m.Radius, maxRad: m.MaxRadius,
		eta: m.Eta, start: time.Now(),
		x32: make([]float32, n), g32: make([]float32, n), v32: make([]float32, n), h32: make([]float32, n)}
	if r.radius == 0 {
		r.radius = 1
	}
	if r.maxRad == 0 {
		r.maxRad = 1000 * r.radius
	}
	r.radius = math.Min(r.radius, r.maxRad)
	if r.cgTol = m.CGTol; r.cgTol == 0 {
		r.cgTol = 0.5
	}
	if r.eta == 0 {
		r.eta = 0.15
	}
	for _, p := range []*[]float64{&r.x, &r.g, &r.xt, &r.gt, &r.p, &r.z, &r.r, &r.d, &r.hd} {
		*p = make([]float64, n)
	}
	r.path = make([][]float64, min(r.maxCG, pathSegments)+1)
	r.seg = make([]ncgSegment, len(r.path))
	for i := range r.path {
		r.path[i] = make([]float64, n)
	}
	return r
}

func (r *ncgRun) stats() optimize.Stats {
	return optimize.Stats{MajorIterations: r.iter, FuncEvaluations: r.evals, GradEvaluations: r.evals,
		HessEvaluations: r.hvs, Runtime: time.Since(r.start)}
}

// eval calls the objective at x and widens its gradient into g; a
// non-finite loss or gradient is an error.
func (r *ncgRun) eval(x, g []float64) (float64, error) {
	r.evals++
	return evalWidened(r.fg, x, g, r.x32, r.g32, r.evals)
}

// hv sets r.hd to the Hessian at r.x times r.d.
func (r *ncgRun) hv() error {
	r.hvs++
	for i, v := range r.x {
		r.x32[i] = float32(v)
		r.v32[i] = float32(r.d[i])
	}
	if err := r.m.Hv(r.x32, r.v32, r.h32); err != nil {
		return errorf("Minimize: NewtonCG: Hv failed at iteration %d (product %d): %w", r.iter+1, r.hvs, err)
	}
	for i, v := range r.h32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return errorf("Minimize: NewtonCG: Hv returned %v at index %d (iteration %d), want finite values", v, i, r.iter+1)
		}
		r.hd[i] = float64(v)
	}
	return nil
}

// loop iterates from the evaluated start until a stopping rule holds.
func (r *ncgRun) loop() (optimize.Status, error) {
	set := r.set
	gtol := set.GradientThreshold
	if gtol == 0 {
		gtol = 1e-5
	}
	set.Converger.Init(len(r.x))
	if set.Recorder != nil {
		if err := set.Recorder.Init(); err != nil {
			return optimize.Failure, err
		}
	}
	loc := &optimize.Location{}
	op := optimize.InitIteration
	var streak int
	var first, last failure
	newPoint := true
	for {
		if newPoint {
			loc.X, loc.F, loc.Gradient = r.x, r.f, r.g
			if set.Recorder != nil {
				st := r.stats()
				if err := set.Recorder.Record(loc, op, &st); err != nil {
					return optimize.Failure, err
				}
			}
			op = optimize.MajorIteration
			if normInf(r.g) <= gtol {
				return optimize.GradientThreshold, nil
			}
			if st := set.Converger.Converged(loc); st != optimize.NotTerminated {
				return st, nil
			}
			if set.MajorIterations > 0 && r.iter >= set.MajorIterations {
				return optimize.IterationLimit, nil
			}
		}
		if st := r.limit(); st != optimize.NotTerminated {
			return st, nil
		}
		if r.radius < math.Ldexp(math.Max(normInf(r.x), 1), -24) {
			return r.tooSmall()
		}
		var pred float64
		var boundary bool
		var ok bool
		if r.pathOK {
			// A rejected step: the new one lies on the same CG path,
			// which does not depend on the radius, so no product is
			// needed when it lies on the path's recorded part.
			pred, boundary, ok = r.truncate()
		}
		if !ok {
			var err error
			if pred, boundary, err = r.steihaug(); err != nil {
				return optimize.Failure, err
			}
			r.pathOK = true
		}
		for i, v := range r.x {
			r.xt[i] = float64(float32(v + r.p[i]))
		}
		pnorm := r.pnorm
		ft, err := r.eval(r.xt, r.gt)
		if err != nil {
			streak++
			fl := failure{r.evals, err}
			if streak == 1 {
				first = fl
			}
			last = fl
			if streak >= MaxConsecutiveFailures {
				return optimize.Failure, errorf("Minimize: NewtonCG: the objective failed at %d trial points in a row (%d to %d), the most it tries (MaxConsecutiveFailures) while it shrinks the radius; the first failure, %w; the last, %w",
					streak, first.eval, last.eval, first, last)
			}
			r.radius = 0.25 * pnorm
			newPoint = false
			continue
		}
		streak = 0
		rho := (r.f - ft) / pred
		if pred <= 0 {
			rho = math.Inf(-1) // float32 rounding left no predicted decrease
		}
		switch {
		case rho < 0.25:
			r.radius = 0.25 * pnorm
		case rho > 0.75 && boundary:
			r.radius = math.Min(2*r.radius, r.maxRad)
		}
		if rho > r.eta {
			r.x, r.xt = r.xt, r.x
			r.g, r.gt = r.gt, r.g
			r.f = ft
			r.iter++
			r.pathOK = false
			newPoint = true
		} else {
			newPoint = false
		}
	}
}

// steihaug sets r.p to the Steihaug–Toint CG step within r.radius and
// returns the predicted decrease −m(p) and whether p is on the boundary.
// It records the path of CG iterates for truncate.
func (r *ncgRun) steihaug() (pred float64, boundary bool, err error) {
	z, res, d, hd := r.z, r.r, r.d, r.hd
	gnorm := norm2(r.g)
	tol := math.Min(r.cgTol, math.Sqrt(gnorm)) * gnorm
	for i, v := range r.g {
		z[i], res[i], d[i] = 0, v, -v
	}
	r.nseg, r.cut = 0, false
	rr := gnorm * gnorm
	mz := 0.0 // the model at z
	for range r.maxCG {
		if err := r.hv(); err != nil {
			return 0, false, err
		}
		dhd := dot(d, hd)
		zz, zd, dd := dot(z, z), dot(z, d), dot(d, d)
		if dhd <= 0 {
			return r.toBoundary(mz, dhd, zz, zd, dd), true, nil
		}
		α := rr / dhd
		if math.Sqrt(zz+2*α*zd+α*α*dd) >= r.radius {
			return r.toBoundary(mz, dhd, zz, zd, dd), true, nil
		}
		sg := r.segment(α, mz, dhd, zz, zd, dd)
		r.record(α, sg)
		mz += sg.slope + 0.5*sg.curv
		for i := range z {
			z[i] += α * d[i]
			res[i] += α * hd[i]
		}
		rrNew := dot(res, res)
		if math.Sqrt(rrNew) < tol {
			break
		}
		β := rrNew / rr
		rr = rrNew
		for i := range d {
			d[i] = -res[i] + β*d[i]
		}
	}
	copy(r.p, z)
	r.pnorm = norm2(z)
	return -mz, false, nil
}

// segment is the path's segment from z to z + s·d: mz is the model at z,
// dhd = dᵀHd, and zz, zd, dd are the dot products of z and d.
func (r *ncgRun) segment(s, mz, dhd, zz, zd, dd float64) ncgSegment {
	return ncgSegment{m: mz, slope: s * dot(r.r, r.d), curv: s * s * dhd, n0: zz, n1: s * zd, n2: s * s * dd}
}

// record appends the segment sg, from z to z + s·d, to the path, unless
// the path is full.
func (r *ncgRun) record(s float64, sg ncgSegment) {
	if r.nseg == len(r.path) {
		r.cut = true
		return
	}
	Δ := r.path[r.nseg]
	for i, v := range r.d {
		Δ[i] = s * v
	}
	r.seg[r.nseg] = sg
	r.nseg++
}

// toBoundary sets p = z + τd with τ ≥ 0 and ‖p‖ = radius, records the
// segment, and returns the predicted decrease; the arguments are
// segment's.
func (r *ncgRun) toBoundary(mz, dhd, zz, zd, dd float64) float64 {
	z, d := r.z, r.d
	τ := (-2*zd + math.Sqrt(4*zd*zd-4*dd*(zz-r.radius*r.radius))) / (2 * dd)
	sg := r.segment(τ, mz, dhd, zz, zd, dd)
	r.record(τ, sg)
	for i := range z {
		r.p[i] = z[i] + τ*d[i]
	}
	r.pnorm = r.radius
	return -(sg.m + sg.slope + 0.5*sg.curv)
}

// truncate sets r.p to the point of the recorded path at distance
// r.radius from the current point, a radius shorter than the path's
// end, and returns its predicted decrease. The distance grows along a
// Steihaug–Toint path (Nocedal and Wright, Theorem 7.3), so the point is
// the path's first at that distance: the step CG would take again.
func (r *ncgRun) truncate() (pred float64, boundary, ok bool) {
	clear(r.p)
	R2 := r.radius * r.radius
	for j := range r.nseg {
		sg, Δ := r.seg[j], r.path[j]
		if (j < r.nseg-1 || r.cut) && sg.n0+2*sg.n1+sg.n2 < R2 {
			for i, v := range Δ {
				r.p[i] += v
			}
			continue
		}
		// n2·s² + 2·n1·s + n0 − R² = 0 for s in [0, 1].
		s := (-sg.n1 + math.Sqrt(sg.n1*sg.n1-sg.n2*(sg.n0-R2))) / sg.n2
		s = math.Min(math.Max(s, 0), 1)
		for i, v := range Δ {
			r.p[i] += s * v
		}
		r.pnorm = r.radius
		return -(sg.m + s*sg.slope + 0.5*s*s*sg.curv), true, true
	}
	return 0, false, false // beyond the recorded part
}

// tooSmall ends a run whose radius fell below the float32 spacing of θ.
func (r *ncgRun) tooSmall() (optimize.Status, error) {
	g := normInf(r.g)
	for i, v := range r.x {
		δ := math.Ldexp(math.Max(math.Abs(v), 1), -11)
		if i%2 == 1 {
			δ = -δ
		}
		r.xt[i] = float64(float32(v + δ))
	}
	if _, err := r.eval(r.xt, r.gt); err != nil {
		return optimize.Failure, errorf("Minimize: NewtonCG: the radius fell below float32 resolution at iteration %d (gradient %.3g), and the objective failed 2⁻¹¹ away: %w", r.iter+1, g, err)
	}
	moved := 0.0
	for i, v := range r.g {
		moved = math.Max(moved, math.Abs(r.gt[i]-v))
	}
	if g <= moved {
		return Float32Converged, nil
	}
	return optimize.Failure, errorf("Minimize: NewtonCG: the radius fell below float32 resolution far from an optimum: the gradient is %.3g (max norm), above the %.3g it changes by over a step of 2⁻¹¹ relative; is Hv the Hessian of the objective?", g, moved)
}

// limit reports a limit of the settings that the run has reached.
func (r *ncgRun) limit() optimize.Status {
	set := r.set
	switch {
	case set.FuncEvaluations > 0 && r.evals >= set.FuncEvaluations:
		return optimize.FunctionEvaluationLimit
	case set.GradEvaluations > 0 && r.evals >= set.GradEvaluations:
		return optimize.GradientEvaluationLimit
	case set.HessEvaluations > 0 && r.hvs >= set.HessEvaluations:
		return optimize.HessianEvaluationLimit
	case set.Runtime > 0 && time.Since(r.start) >= set.Runtime:
		return optimize.RuntimeLimit
	}
	return optimize.NotTerminated
}

func normInf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func norm2(v []float64) float64 { return math.Sqrt(dot(v, v)) }
