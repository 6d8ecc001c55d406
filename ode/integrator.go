package ode

import (
	"context"
	"math"
)

// Stats are the counters of one solve.
type Stats struct {
	FEvals   int // evaluations of F (steps, the initial-step heuristic, interpolation stages)
	JacEvals int // Jacobian evaluations (stiff methods; 0 for explicit ones)
	LUs      int // LU factorisations (stiff methods; 0 for explicit ones)
	Accepted int // accepted steps
	Rejected int // rejected step attempts (error too large, or a non-finite trial)

	NewtonIters  int     // Newton iterations of the implicit methods (BDF)
	NewtonFails  int     // steps retried because Newton's iteration did not converge
	LinearIters  int     // iterations of an iterative linear solver (GMRES)
	LinearFails  int     // linear solves that did not converge
	ErrTestFails int     // steps rejected by the local error test
	Retcode      Retcode // how the solve ended
}

// Add adds the counters of o into s, as for the segments of a solve
// restarted by hand. It leaves s.Retcode as it is.
func (s *Stats) Add(o Stats) {
	s.FEvals += o.FEvals
	s.JacEvals += o.JacEvals
	s.LUs += o.LUs
	s.Accepted += o.Accepted
	s.Rejected += o.Rejected
	s.NewtonIters += o.NewtonIters
	s.NewtonFails += o.NewtonFails
	s.LinearIters += o.LinearIters
	s.LinearFails += o.LinearFails
	s.ErrTestFails += o.ErrTestFails
}

// addStats adds the counters of o into s. Its Retcode becomes the last
// one that is not Success.
func addStats(s *Stats, o Stats) {
	rc := s.Retcode
	s.Add(o)
	if o.Retcode != Success || rc == Unfinished {
		s.Retcode = o.Retcode
	} else {
		s.Retcode = rc
	}
}

// Integrator is the allocation-free form of Solve for repeated solves.
// NewIntegrator allocates every buffer once. Reinit or ReinitProblem
// starts a new solve in the same buffers. Run integrates to T1; Step
// advances one accepted step at a time. Once warm, Reinit followed by Run
// allocates nothing: warm means after a solve that saved as many points as
// the next will.
//
//	it, err := ode.NewIntegrator(prob, ode.Tsit5(), ode.Tol(1e-6, 1e-8))
//	for _, u0 := range starts {
//		if err := it.Reinit(u0, 0, 10, θ); err != nil { … }
//		if err := it.Run(ctx); err != nil { … }
//		use(it.U())                  // the final state, a view into the integrator
//	}
//
// Stepping by hand:
//
//	for !it.Done() {
//		if err := it.Step(); err != nil { … }   // an *Error, never ErrDone here
//		fmt.Println(it.T(), it.U())
//	}
//
// An Integrator is not safe for concurrent use; use one per goroutine.
type Integrator[T Float] struct {
	// configuration
	prob     Problem[T]
	method   Method
	st       stepper[T]
	o        options
	order    int     // the method's order p, for the controller
	adaptive bool    // error-controlled steps (false: fixed steps)
	fixed    float64 // fixed step size, 0 when adaptive
	beta1    float64 // PI controller exponents 0.7/p, 0.4/p
	beta2    float64
	n        int

	// the solve
	t0, t1, dir    float64
	t, tPrev, h    float64 // current time; start and size of the last accepted step
	dt             float64 // next step size to try (signed)
	u, uPrev, uNew []T     // current state, start of the last step, trial state
	scratch        []T     // the integrator's own temporary (initial step, probes)
	logErrOld      float64 // log2 of the previous accepted error norm
	rejectedLast   bool
	nonFinite      int     // consecutive non-finite attempts
	lastNF         int     // attempt number of the last non-finite attempt
	hNF            float64 // and its step size
	attempts       int
	lastDt         float64 // the last step size tried, for errors
	stats          Stats
	done           bool
	err            error
	ctx            context.Context // during Run, if cancellable

	// output
	stopIdx, saveIdx int // next TStop and SaveAt time, in the order of integration
	saveStartEnd     bool
	outT             []float64
	outU             []T   // saved states, flat
	outH             [][]T // views of outU handed out by Saved
	poly             []T   // dense polynomial of the last step, (deg+1)·n
	polyOK           bool
	deg              int
	denseT, denseH   []float64  // with Dense: start and size of every step
	denseC           []T        // and its polynomial
	denseN           []nordStep // with a nordDenser: where each step's coefficients are
	nord             nordDenser[T]

	// events
	g, gNew []float64 // conditions at the start and the end of the step
	gPend   []bool    // condition ≈ 0 at the start (just fired, or zero at T0)
	evU     []T       // the state at a root-finding point
	evS     []T       // the states at the event sample points
	root    []float64 // each event's root in the step, as a fraction of it; 2 if none
	fire    []int     // the effects due now: event j, or ^k for schedule entry it.sched[k]
	evA     []T       // the state after the effects in order, when several fire
	evB     []T       // and in reverse order
	pSnap   []float32 // P before the effects, to check that none writes it

	// schedules
	sched    []schedEntry // every schedule time, ascending
	schedIdx int          // the next entry, in the order of integration
	stops    []float64    // the TStops and the schedule times, ascending
	stopsBuf []float64
	schedTs  []float64 // the times TimesFrom computes

	// onAccept, if set, is called after every accepted step (its output
	// done): the gradient methods record checkpoints and steps with it.
	onAccept func()
	// onFire, if set, is called after effects have fired and been
	// checked, before the state after them is saved: the gradient methods
	// record the firings with it (see firingOf). before is the state just
	// before the effects, after the state they left. A non-nil error fails
	// the solve.
	onFire func(fire []int, t float64, before, after []T, terminate bool) error
	fireU  []T // the state before the effects, when onFire is set
}

// NewIntegrator prepares an integrator for prob with method m; Run or Step
// then integrate. It checks the problem and the options, and evaluates F
// at the start and once more for the initial step size.
func NewIntegrator[T Float](prob Problem[T], m Method, opts ...SolveOption) (*Integrator[T], error) {
	if m == nil {
		return nil, errorf("method is nil")
	}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	o, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	return initWith(prob, m, o)
}

// initWith is NewIntegrator with parsed options; prob has been validated.
func initWith[T Float](prob Problem[T], m Method, o options) (*Integrator[T], error) {
	inf := m.info()
	fixed := o.fixed
	if inf.fixedOnly && fixed == 0 {
		if o.dt0 == 0 {
			return nil, errorf("%s is a fixed-step method: give FixedStep(dt)", m.Name())
		}
		fixed = o.dt0
	}
	adaptive := inf.adaptive && fixed == 0
	n := len(prob.U0)
	if o.atolv != nil && len(o.atolv) != n {
		return nil, errorf("TolPerComponent has %d absolute tolerances, want one per component (%d)", len(o.atolv), n)
	}
	if o.perComponent() { // both vectors, so that the error norms index them directly
		if o.atolv == nil {
			o.atolv = filled(o.atol, n)
		}
		if o.rtolv == nil {
			o.rtolv = filled(o.rtol, n)
		}
	}
	st, err := newStepper(m, &prob, adaptive)
	if err != nil {
		return nil, err
	}
	it := &Integrator[T]{
		prob: prob, method: m, st: st, o: o, order: inf.order, adaptive: adaptive, fixed: fixed,
		beta1: ctlBeta1 / float64(inf.order), beta2: ctlBeta2 / float64(inf.order),
		n: n, deg: st.degree(),
	}
	it.saveStartEnd = !o.saveAtSet && !o.everyStep
	buf := padded[T](5 * n) // see padded: integrators on several goroutines
	it.u, it.uPrev, it.uNew, it.scratch, it.evU = buf[0:n:n], buf[n:2*n:2*n], buf[2*n:3*n:3*n], buf[3*n:4*n:4*n], buf[4*n:]
	it.poly = padded[T]((it.deg + 1) * n)
	it.nord, _ = st.(nordDenser[T])
	nsave := len(o.saveAt)
	if it.saveStartEnd {
		nsave = 2
	}
	it.outT = make([]float64, 0, nsave)
	it.outU = make([]T, 0, nsave*n)
	it.growEvents(len(prob.Events))
	u0, err := it.initialState()
	if err != nil {
		return nil, err
	}
	if err := it.restart(u0, prob.T0, prob.T1); err != nil {
		return nil, err
	}
	return it, nil
}

func filled(v float64, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// initialState is it.prob.U0, or U0From(P) computed into it.uNew.
func (it *Integrator[T]) initialState() ([]T, error) {
	if it.prob.U0From == nil {
		return it.prob.U0, nil
	}
	it.prob.U0From(it.uNew, it.prob.P)
	if err := it.callbackErr(); err != nil {
		return nil, errorf("Problem.U0From: %w", err)
	}
	if err := checkState(it.uNew, "Problem.U0From(P)"); err != nil {
		return nil, err
	}
	return it.uNew, nil
}

func (it *Integrator[T]) growEvents(k int) {
	if k > 0 && it.evS == nil {
		it.evS = make([]T, eventSamples*it.n)
	}
	if (k > 0 || len(it.prob.Schedules) > 0) && it.evA == nil {
		it.evA, it.evB = make([]T, it.n), make([]T, it.n)
	}
	if cap(it.g) < k {
		it.g, it.gNew, it.gPend, it.root = make([]float64, k), make([]float64, k), make([]bool, k), make([]float64, k)
	}
	it.g, it.gNew, it.gPend, it.root = it.g[:k], it.gNew[:k], it.gPend[:k], it.root[:k]
}

// Reinit starts a new solve from u0 on [t0, t1] with parameters p, which
// replace Problem.P; nil means none. It keeps F, Jac, Events, the method,
// the options and every buffer. u0 is copied. Like NewIntegrator it
// evaluates F at the start; a NaN or Inf there is reported by the next Run
// or Step.
func (it *Integrator[T]) Reinit(u0 []T, t0, t1 float64, p []float32) error {
	if len(u0) != it.n {
		return errorf("Reinit: len(u0) = %d, want %d", len(u0), it.n)
	}
	if err := checkSpan(t0, t1); err != nil {
		return err
	}
	if err := checkState(u0, "Reinit u0"); err != nil {
		return err
	}
	it.prob.P = p
	return it.restart(u0, t0, t1)
}

// ReinitProblem starts a new solve of prob, which must have the same
// dimension and JacStructure; F, Jac, P, Events and the span may all
// differ. It is how an ensemble runs trajectory after trajectory in one
// integrator.
func (it *Integrator[T]) ReinitProblem(prob Problem[T]) error {
	if err := prob.validate(); err != nil {
		return err
	}
	if len(prob.U0) != it.n {
		return errorf("ReinitProblem: len(U0) = %d, want %d", len(prob.U0), it.n)
	}
	if !sameStructure(prob.JacStructure, it.prob.JacStructure) {
		return errorf("ReinitProblem: JacStructure %v, want the integrator's %v", prob.JacStructure, it.prob.JacStructure)
	}
	it.prob = prob
	it.growEvents(len(prob.Events))
	u0, err := it.initialState()
	if err != nil {
		return err
	}
	return it.restart(u0, prob.T0, prob.T1)
}

// restart resets the solve state to (t0, u0) and takes the first F
// evaluations. u0 has been checked.
func (it *Integrator[T]) restart(u0 []T, t0, t1 float64) error {
	lo, hi := min(t0, t1), max(t0, t1)
	for _, s := range it.o.saveAt {
		if s < lo || s > hi {
			return errorf("SaveAt time %g is outside the span [%g, %g]", s, t0, t1)
		}
	}
	if err := it.buildSchedule(); err != nil {
		return err
	}
	it.t0, it.t1 = t0, t1
	it.dir = 1
	if t1 < t0 {
		it.dir = -1
	}
	copy(it.u, u0)
	it.t, it.tPrev, it.h = t0, t0, 0
	it.stats = Stats{}
	it.attempts, it.nonFinite, it.lastNF, it.hNF = 0, 0, math.MinInt/2, 0
	it.done, it.err, it.rejectedLast, it.polyOK = false, nil, false, false
	it.logErrOld = log2ErrOld0
	it.lastDt = 0
	it.stopIdx, it.saveIdx = 0, 0
	it.outT, it.outU = it.outT[:0], it.outU[:0]
	it.denseT, it.denseH, it.denseC, it.denseN = it.denseT[:0], it.denseH[:0], it.denseC[:0], it.denseN[:0]

	if it.saveStartEnd || it.o.everyStep {
		it.save(t0, it.u)
	}
	for it.saveIdx < len(it.o.saveAt) && it.sortedAt(it.o.saveAt, it.saveIdx) == t0 {
		it.save(t0, it.u)
		it.saveIdx++
	}
	if it.startSchedule() {
		return nil
	}
	if t0 == t1 {
		it.finish(Success)
		return nil
	}
	f0 := it.st.start(it)
	if c := firstNonFinite(f0); c >= 0 {
		it.fail(NonFinite, c, nil)
		return nil
	}
	for k := range it.prob.Events {
		it.g[k] = it.prob.Events[k].cond(it.u, it.prob.P, t0)
		it.gPend[k] = it.g[k] == 0
	}
	switch {
	case it.fixed > 0:
		it.dt = it.dir * it.fixed
	case it.o.dt0 > 0:
		it.dt = it.dir * min(it.o.dt0, hi-lo)
	default:
		it.dt = it.initialStep(f0)
	}
	return nil
}

// sortedAt returns the k-th element of an ascending list in the order of
// integration.
func (it *Integrator[T]) sortedAt(list []float64, k int) float64 {
	if it.dir > 0 {
		return list[k]
	}
	return list[len(list)-1-k]
}

// nextStop is the next TStop strictly ahead of t and before T1, or T1. A
// stop closer to t or to T1 than the smallest step the integrator takes
// (16ε relative) is dropped: landing on it would leave a sliver of a step
// that ends the solve with DtUnderflow.
func (it *Integrator[T]) nextStop() float64 {
	ts := it.stops
	for it.stopIdx < len(ts) {
		s := it.sortedAt(ts, it.stopIdx)
		if it.dir*(s-it.t) > 16*eps*math.Abs(it.t) {
			if it.dir*(it.t1-s) > 16*eps*math.Abs(it.t1) {
				return s
			}
			break
		}
		it.stopIdx++
	}
	return it.t1
}

// Run integrates to T1 or to a terminating event. It returns nil on
// success and on termination by an event, and an *Error otherwise;
// Stats().Retcode tells which. ctx is checked every 16 step attempts; nil
// means context.Background(). Run allocates nothing in steady state.
func (it *Integrator[T]) Run(ctx context.Context) error {
	if it.err != nil {
		return it.err
	}
	if it.done {
		return nil
	}
	if ctx != nil && ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return it.fail(Cancelled, -1, err)
		}
		it.ctx = ctx
		defer func() { it.ctx = nil }()
	}
	for !it.done {
		if err := it.step(); err != nil {
			return err
		}
	}
	return nil
}

// Step advances by one accepted step and handles the outputs and events
// inside it. An event, a TStop or T1 cuts the step short. It returns
// ErrDone when called after the integrator has finished, the solve's
// *Error after a failure, and nil otherwise. Done reports whether T1 or a
// terminating event has been reached.
func (it *Integrator[T]) Step() error {
	if it.err != nil {
		return it.err
	}
	if it.done {
		return ErrDone
	}
	return it.step()
}

// Method returns the integrator's method.
func (it *Integrator[T]) Method() Method { return it.method }

// Done reports whether the solve has finished: T1 reached, terminated by an
// event, or failed.
func (it *Integrator[T]) Done() bool { return it.done }

// T is the current time.
func (it *Integrator[T]) T() float64 { return it.t }

// U is the current state: a view into the integrator, valid until the next
// Step, Run or Reinit. After a finished solve it is the state at T1, or at
// the terminating event after its Affect.
func (it *Integrator[T]) U() []T { return it.u }

// Stats returns the counters of the current solve.
func (it *Integrator[T]) Stats() Stats { return it.stats }

// Err returns the error that stopped the solve, or nil.
func (it *Integrator[T]) Err() error { return it.err }

// Saved returns the saved times and states of the current solve: views into
// the integrator's buffers, valid until the next Step, Run or Reinit. A
// solve that a terminating event ended saves the event's time and state
// last, whatever SaveAt asks; see Solution.
func (it *Integrator[T]) Saved() (ts []float64, us [][]T) {
	k := len(it.outT)
	it.outH = it.outH[:0]
	for i := 0; i < k; i++ {
		it.outH = append(it.outH, it.outU[i*it.n:(i+1)*it.n:(i+1)*it.n])
	}
	return it.outT, it.outH
}

// AtInto interpolates the last accepted step at t into dst, through the
// method's dense interpolant. t must lie in that step.
func (it *Integrator[T]) AtInto(dst []T, t float64) error {
	if len(dst) != it.n {
		return errorf("AtInto: len(dst) = %d, want %d", len(dst), it.n)
	}
	if it.h == 0 {
		return errorf("AtInto: no step taken yet")
	}
	if it.dir*(t-it.tPrev) < 0 || it.dir*(t-it.t) > 0 {
		return errorf("AtInto: t=%g is outside the last step [%g, %g]", t, it.tPrev, it.t)
	}
	it.ensurePoly()
	it.interpInto(dst, (t-it.tPrev)/it.h)
	return nil
}

// fail ends the solve with an *Error. A failed callback (Problem.Err) is
// the cause of whatever else went wrong, so it replaces code and cause.
func (it *Integrator[T]) fail(code Retcode, comp int, cause error) error {
	if err := it.callbackErr(); err != nil {
		code, comp, cause = Failed, -1, err
	}
	it.err = &Error{Code: code, T: it.t, Dt: it.lastDt, Component: comp, Err: cause, P: rangeOf(it.prob.P)}
	it.finish(code)
	return it.err
}

// finish ends the solve with code; a solve that reached its end or an
// event ends with Failed instead if a callback has failed.
func (it *Integrator[T]) finish(code Retcode) {
	it.done = true
	if code == Success || code == Terminated {
		if err := it.callbackErr(); err != nil {
			it.err = &Error{Code: Failed, T: it.t, Dt: it.lastDt, Component: -1, Err: err}
			code = Failed
		}
	}
	it.stats.Retcode = code
	if it.saveStartEnd || code == Terminated && !it.savedNow() {
		it.save(it.t, it.u)
	}
}

// savedNow reports whether the last saved point is the current time and
// state.
func (it *Integrator[T]) savedNow() bool {
	k := len(it.outT)
	if k == 0 || it.outT[k-1] != it.t {
		return false
	}
	for i, v := range it.outU[(k-1)*it.n:] {
		if v != it.u[i] {
			return false
		}
	}
	return true
}

// callbackErr is the error Problem.Err reports, or nil.
func (it *Integrator[T]) callbackErr() error {
	if it.prob.Err == nil {
		return nil
	}
	return it.prob.Err()
}

func (it *Integrator[T]) save(t float64, u []T) {
	it.outT = append(it.outT, t)
	it.outU = append(it.outU, u...)
}
