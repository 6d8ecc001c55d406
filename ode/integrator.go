package ode

import (
	"context"
	"fmt"
	"math"
)

// Stats are the counters of one solve.
type Stats struct {
	FEvals   int     // evaluations of F (steps, the initial-step heuristic, interpolation stages)
	JacEvals int     // Jacobian evaluations (stiff methods; 0 for explicit ones)
	LUs      int     // LU factorisations (stiff methods; 0 for explicit ones)
	Accepted int     // accepted steps
	Rejected int     // rejected step attempts (error too large, or a non-finite trial)
	Retcode  Retcode // how the solve ended
}

// Integrator is the allocation-free form of Solve for repeated solves: Init
// allocates every buffer once; Reinit (or ReinitProblem) starts a new solve
// in the same buffers; Run integrates to T1; Step advances one accepted step
// at a time. Once warm (after a solve that saved as many points as the next
// will), Reinit followed by Run allocates nothing.
//
//	it, err := ode.Init(prob, ode.Tsit5(), ode.Tol(1e-6, 1e-8))
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
	denseT, denseH   []float64 // with Dense: start and size of every step
	denseC           []T       // and its polynomial

	// events
	g, gNew []float64 // conditions at the start and the end of the step
	gPend   []bool    // condition ≈ 0 at the start (just fired, or zero at T0)
	evU     []T       // the state at a root-finding point
	evS     []T       // the states at the event sample points

	// onAccept, if set, is called after every accepted step (its output
	// done): the gradient methods record checkpoints and steps with it.
	onAccept func()
}

// Init prepares an integrator for prob with method m; it checks the problem
// and the options and evaluates F at the start (and once more for the
// initial step size). Run or Step then integrate.
func Init[T Float](prob Problem[T], m Method, opts ...Option) (*Integrator[T], error) {
	if m == nil {
		return nil, fmt.Errorf("ode: method is nil")
	}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	o, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.gradOnly != "" {
		return nil, fmt.Errorf("ode: option %s applies to Gradient only, not to a solve", o.gradOnly)
	}
	if o.ensOnly != "" {
		return nil, fmt.Errorf("ode: option %s applies to Ensemble.Gradient only, not to a solve", o.ensOnly)
	}
	return initWith(prob, m, o)
}

func parseOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, op := range opts {
		if op != nil {
			op(&o)
		}
	}
	return o, o.err
}

// initWith is Init with parsed options; prob has been validated.
func initWith[T Float](prob Problem[T], m Method, o options) (*Integrator[T], error) {
	inf := m.info()
	fixed := o.fixed
	if inf.fixedOnly && fixed == 0 {
		if o.dt0 == 0 {
			return nil, fmt.Errorf("ode: %s is a fixed-step method: give FixedStep(dt)", m.Name())
		}
		fixed = o.dt0
	}
	adaptive := inf.adaptive && fixed == 0
	n := len(prob.U0)
	if o.atolv != nil && len(o.atolv) != n {
		return nil, fmt.Errorf("ode: TolPerComponent has %d absolute tolerances, want one per component (%d)", len(o.atolv), n)
	}
	if o.perComponent() { // both vectors, so that the error norms index them directly
		if o.atolv == nil {
			o.atolv = filled(o.atol, n)
		}
		if o.rtolv == nil {
			o.rtolv = filled(o.rtol, n)
		}
	}
	st, err := newStepper[T](m, n, adaptive)
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
	if err := checkState(it.uNew, "Problem.U0From(P)"); err != nil {
		return nil, err
	}
	return it.uNew, nil
}

func (it *Integrator[T]) growEvents(k int) {
	if k > 0 && it.evS == nil {
		it.evS = make([]T, eventSamples*it.n)
	}
	if cap(it.g) < k {
		it.g, it.gNew, it.gPend = make([]float64, k), make([]float64, k), make([]bool, k)
	}
	it.g, it.gNew, it.gPend = it.g[:k], it.gNew[:k], it.gPend[:k]
}

// Reinit starts a new solve from u0 on [t0, t1] with parameters p (which
// replace Problem.P; nil means none), keeping F, Jac, Events, the method, the
// options and every buffer. u0 is copied. Like Init it evaluates F at the
// start; a NaN or Inf there is reported by the next Run or Step.
func (it *Integrator[T]) Reinit(u0 []T, t0, t1 float64, p []float32) error {
	if len(u0) != it.n {
		return fmt.Errorf("ode: Reinit: len(u0) = %d, want %d", len(u0), it.n)
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
// dimension; F, Jac, P, Events and the span may all differ. It is how an
// ensemble runs trajectory after trajectory in one integrator.
func (it *Integrator[T]) ReinitProblem(prob Problem[T]) error {
	if err := prob.validate(); err != nil {
		return err
	}
	if len(prob.U0) != it.n {
		return fmt.Errorf("ode: ReinitProblem: len(U0) = %d, want %d", len(prob.U0), it.n)
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
			return fmt.Errorf("ode: SaveAt time %g is outside the span [%g, %g]", s, t0, t1)
		}
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
	it.denseT, it.denseH, it.denseC = it.denseT[:0], it.denseH[:0], it.denseC[:0]

	if it.saveStartEnd || it.o.everyStep {
		it.save(t0, it.u)
	}
	for it.saveIdx < len(it.o.saveAt) && it.sortedAt(it.o.saveAt, it.saveIdx) == t0 {
		it.save(t0, it.u)
		it.saveIdx++
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
		it.g[k] = it.prob.Events[k].G(it.u, t0)
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
	ts := it.o.tstops
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

// Run integrates to T1 (or to a terminating event). It returns nil on
// success and on termination by an event (Stats().Retcode tells which), and
// an *Error otherwise. ctx is checked every 16 step attempts; nil means
// context.Background(). Run allocates nothing in steady state.
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

// Step advances by one accepted step (cut short at an event, a TStop or T1)
// and handles the outputs and events inside it. It returns ErrDone when
// called after the integrator has finished, the solve's *Error after a
// failure, and nil otherwise; Done reports whether T1 (or a terminating
// event) has been reached.
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
// Step, Run or Reinit. After a finished solve it is the state at T1 (or at
// the terminating event, after its Affect).
func (it *Integrator[T]) U() []T { return it.u }

// Stats returns the counters of the current solve.
func (it *Integrator[T]) Stats() Stats { return it.stats }

// Err returns the error that stopped the solve, or nil.
func (it *Integrator[T]) Err() error { return it.err }

// Saved returns the saved times and states of the current solve: views into
// the integrator's buffers, valid until the next Step, Run or Reinit.
func (it *Integrator[T]) Saved() (ts []float64, us [][]T) {
	k := len(it.outT)
	it.outH = it.outH[:0]
	for i := 0; i < k; i++ {
		it.outH = append(it.outH, it.outU[i*it.n:(i+1)*it.n:(i+1)*it.n])
	}
	return it.outT, it.outH
}

// AtInto interpolates the last accepted step at t (which must lie in it)
// into dst, through the method's dense interpolant.
func (it *Integrator[T]) AtInto(dst []T, t float64) error {
	if len(dst) != it.n {
		return fmt.Errorf("ode: AtInto: len(dst) = %d, want %d", len(dst), it.n)
	}
	if it.h == 0 {
		return fmt.Errorf("ode: AtInto: no step taken yet")
	}
	if it.dir*(t-it.tPrev) < 0 || it.dir*(t-it.t) > 0 {
		return fmt.Errorf("ode: AtInto: t=%g is outside the last step [%g, %g]", t, it.tPrev, it.t)
	}
	it.ensurePoly()
	it.interpInto(dst, (t-it.tPrev)/it.h)
	return nil
}

func (it *Integrator[T]) fail(code Retcode, comp int, cause error) error {
	it.err = &Error{Code: code, T: it.t, Dt: it.lastDt, Component: comp, Err: cause}
	it.finish(code)
	return it.err
}

func (it *Integrator[T]) finish(code Retcode) {
	it.done = true
	it.stats.Retcode = code
	if it.saveStartEnd {
		it.save(it.t, it.u)
	}
}

func (it *Integrator[T]) save(t float64, u []T) {
	it.outT = append(it.outT, t)
	it.outU = append(it.outU, u...)
}

const eps = 0x1p-52

// probeF evaluates F at the current state at t and at t+h and returns the
// first component where it is NaN or ±Inf, or −1: when trial steps fail on
// non-finite values, this tells a right-hand side that is non-finite ahead
// (NonFinite) from a solution that blows up (DtUnderflow).
func (it *Integrator[T]) probeF(h float64) int {
	for _, t := range [2]float64{it.t + h, it.t} {
		it.prob.F(it.scratch, it.u, it.prob.P, t)
		it.stats.FEvals++
		if c := firstNonFinite(it.scratch); c >= 0 {
			return c
		}
	}
	return -1
}

// step takes one accepted step, with as many rejected attempts as needed.
func (it *Integrator[T]) step() error {
	for {
		if it.attempts >= it.o.maxSteps {
			return it.fail(MaxStepsReached, -1, nil)
		}
		if it.ctx != nil && it.attempts&15 == 0 {
			if err := it.ctx.Err(); err != nil {
				return it.fail(Cancelled, -1, err)
			}
		}
		it.attempts++
		target := it.nextStop()
		want := it.dt
		h := want
		rem := target - it.t
		lim := 1.01
		if !it.adaptive {
			lim = 1 + 1e-6
		}
		land := false
		if math.Abs(rem) <= math.Abs(h)*lim {
			h, land = rem, true
		}
		it.lastDt = h
		if h == 0 || math.Abs(h) < 16*eps*math.Abs(it.t) {
			// Steps that keep failing on NaN/Inf ahead of t also end here:
			// if F is non-finite just ahead, that is the diagnosis.
			if it.attempts-it.lastNF <= maxNonFinit {
				if c := it.probeF(it.hNF); c >= 0 {
					return it.fail(NonFinite, c, nil)
				}
			}
			return it.fail(DtUnderflow, -1, nil)
		}
		e := it.st.attempt(it, h)
		if !(e <= math.MaxFloat64) { // NaN or +Inf: a non-finite trial state
			it.stats.Rejected++
			it.nonFinite++
			it.lastNF, it.hNF = it.attempts, h
			if !it.adaptive || it.nonFinite >= maxNonFinit {
				if sf, ok := it.st.(stepFailer); ok {
					if code, comp, cause := sf.failure(); cause != nil {
						return it.fail(code, comp, cause)
					}
				}
				c := it.probeF(h)
				if c < 0 {
					c = firstNonFinite(it.uNew)
				}
				return it.fail(NonFinite, c, nil)
			}
			it.dt = h * ctlQmin
			it.rejectedLast = true
			continue
		}
		it.nonFinite = 0
		if it.adaptive && e > 1 {
			it.stats.Rejected++
			it.dt = it.controlReject(h, e)
			it.rejectedLast = true
			continue
		}
		next := it.controlAccept(h, e)
		if land && it.adaptive && math.Abs(next) >= math.Abs(h) && math.Abs(want) > math.Abs(next) {
			next = want // a step cut short to land on a stop does not shrink the next one
		}
		it.acceptStep(h, land, target, next)
		return nil
	}
}

func (it *Integrator[T]) acceptStep(h float64, land bool, target, next float64) {
	it.st.accept(it, h)
	it.stats.Accepted++
	tNew := it.t + h
	if land {
		tNew = target
	}
	it.uPrev, it.u, it.uNew = it.u, it.uNew, it.uPrev
	it.tPrev, it.t, it.h = it.t, tNew, h
	it.polyOK = false
	it.dt = next
	it.rejectedLast = false

	ev := -1
	if len(it.prob.Events) > 0 {
		ev = it.locateEvents()
	}
	it.output()
	if ev >= 0 && it.fireEvent(ev) {
		it.finish(Terminated)
		return
	}
	if it.t == it.t1 {
		it.finish(Success)
	}
	if it.onAccept != nil {
		it.onAccept()
	}
}

// replay solves again from u0 at t0 to t1 on given steps (start, size,
// end; the end of the last is t1), as a solve took them: each is one
// attempt without error control, accepted and landing exactly on its end.
// The gradient methods re-solve checkpointed segments with it, so that
// they see the forward solve's own steps and dense output.
func (it *Integrator[T]) replay(ctx context.Context, u0 []T, t0, t1 float64, p []float32, steps []float64) error {
	if err := it.Reinit(u0, t0, t1, p); err != nil {
		return err
	}
	for k := 0; k+2 < len(steps) && !it.done; k += 3 {
		if ctx != nil && k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return it.fail(Cancelled, -1, err)
			}
		}
		h, end := steps[k+1], steps[k+2]
		it.t = steps[k] // the same bits as the step's start in the solve
		it.attempts++
		it.lastDt = h
		if e := it.st.attempt(it, h); !(e <= math.MaxFloat64) {
			return it.fail(NonFinite, firstNonFinite(it.uNew), nil)
		}
		it.acceptStep(h, true, end, h)
	}
	if !it.done {
		return it.fail(Unfinished, -1, fmt.Errorf("ode: replay: the steps end at %g, before %g", it.t, t1))
	}
	return it.err
}

// quadratures tells the stepper that F does not read the last nq
// components (the gradient systems' quadratures), so that an explicit
// method need not form their stage inputs; other steppers ignore it.
func (it *Integrator[T]) quadratures(nq int) {
	if e, ok := it.st.(*erk[T]); ok && nq >= 0 && nq < it.n {
		e.quadratures(nq)
	}
}

// ensurePoly computes the dense polynomial of the last accepted step.
func (it *Integrator[T]) ensurePoly() {
	if !it.polyOK {
		it.st.dense(it, it.poly)
		it.polyOK = true
	}
}

// interpInto evaluates the last step's polynomial at θ by Horner's rule.
func (it *Integrator[T]) interpInto(dst []T, θ float64) {
	hornerInto(dst, it.poly, it.deg, it.n, T(θ))
}

func hornerInto[T Float](dst, poly []T, deg, n int, θ T) {
	dst = dst[:n]
	poly = poly[:(deg+1)*n]
	// The usual degrees unrolled (the interpolants of Tsit5, DP5, BS3):
	// the same operations in the same order as the loop below.
	switch deg {
	case 3:
		c0, c1, c2, c3 := poly[:n], poly[n:][:n], poly[2*n:][:n], poly[3*n:][:n]
		for i := range dst {
			dst[i] = ((c3[i]*θ+c2[i])*θ+c1[i])*θ + c0[i]
		}
		return
	case 4:
		if n == 2 { // two states (Lotka-Volterra, the spiral): no slices
			p := poly[:10]
			dst[0] = (((p[8]*θ+p[6])*θ+p[4])*θ+p[2])*θ + p[0]
			dst[1] = (((p[9]*θ+p[7])*θ+p[5])*θ+p[3])*θ + p[1]
			return
		}
		c0, c1, c2, c3, c4 := poly[:n], poly[n:][:n], poly[2*n:][:n], poly[3*n:][:n], poly[4*n:][:n]
		for i := range dst {
			dst[i] = (((c4[i]*θ+c3[i])*θ+c2[i])*θ+c1[i])*θ + c0[i]
		}
		return
	}
	for i := range dst {
		a := poly[deg*n+i]
		for j := deg - 1; j >= 0; j-- {
			a = a*θ + poly[j*n+i]
		}
		dst[i] = a
	}
}

// output saves what the accepted step owes: SaveAt points in (tPrev, t],
// the step end with SaveEveryStep, and its polynomial with Dense.
func (it *Integrator[T]) output() {
	if ts := it.o.saveAt; it.saveIdx < len(ts) {
		for it.saveIdx < len(ts) {
			s := it.sortedAt(ts, it.saveIdx)
			if it.dir*(s-it.t) > 0 {
				break
			}
			if s == it.t {
				it.save(s, it.u)
			} else {
				it.ensurePoly()
				k := len(it.outU)
				it.outU = append(it.outU, it.u...) // grow by n; overwritten below
				it.outT = append(it.outT, s)
				it.interpInto(it.outU[k:], (s-it.tPrev)/it.h)
			}
			it.saveIdx++
		}
	}
	if it.o.everyStep {
		it.save(it.t, it.u)
	}
	if it.o.dense {
		it.ensurePoly()
		it.denseT = append(it.denseT, it.tPrev)
		it.denseH = append(it.denseH, it.h)
		it.denseC = append(it.denseC, it.poly...)
	}
}
