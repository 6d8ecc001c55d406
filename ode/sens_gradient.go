package ode

import (
	"context"
	"errors"
	"math"
	"slices"
)

// Loss is a loss of the solution,
//
//	L = Saved(u(t_i)) + ∫_{T0}^{T1} Running(u, p, t) dt + End(t_end, u_end),
//
// where a sum of Point over the save times may stand for Saved. Any of the
// four parts may be absent; Saved and Point exclude each other.
type Loss[T Float] struct {
	// At are the save times the loss sees, in the span. Gradient sorts
	// them in the order of integration. Repeated times are allowed.
	At []float64
	// Saved returns the loss of the states us[i] = u(ts[i]) and writes
	// dL/dus[i] into dLdus[i], zeroed before the call. It sees every
	// saved state at once, so the loss need not be a sum over points.
	Saved func(ts []float64, us, dLdus [][]T) float64
	// Point is the per-point form: the loss is the sum over i of
	// Point(i, ts[i], us[i], dLdus[i]). Each call writes its own dL/du,
	// zeroed before the call.
	Point func(i int, t float64, u, dLdu []T) float64
	// Running, if set, adds the running cost ∫ g(u, p, t) dt over the
	// span. RunningGradient must then add ∂g/∂u into du and ∂g/∂p into
	// dp, which has the length of p.
	Running         func(u []T, p []float32, t float64) float64
	RunningGradient func(du, dp, u []T, p []float32, t float64)
	// End, if set, adds a loss of the solve's last point: the time t and
	// the state u where it ended, that is a terminating event's time and
	// its state after the effect, or T1 and u(T1). It returns that loss,
	// writes dL/du into dLdu (zeroed before the call) and returns dL/dt.
	// A first-passage time is an End that returns t. At T1, End is a save
	// at T1 (it sees the state before a firing there) whose dL/dt adds to
	// dL/dT1. At a terminating firing the gradient takes the event time's
	// derivative from the implicit function theorem (Event's doc).
	End func(t float64, u, dLdu []T) (l, dLdt float64)

	// Err reports a failure that the loss's callbacks could not return;
	// it is nil when they cannot fail. Like Problem.Err it returns nil
	// until a callback fails, and that failure's error from then on.
	// Gradient calls it after evaluating the loss, after every step of
	// its solves and once more at the end. An error there ends the
	// gradient with the error as its cause.
	Err func() error
}

// GradientResult is the result of a gradient: the loss and its derivatives
// with respect to the parameters, the initial state and the ends of the
// span. A save time equal to T1 moves with T1; one equal to T0 is u0
// itself. The slices are owned by the GradientSolver and overwritten by
// its next call.
type GradientResult[T Float] struct {
	Value float64
	P     []T // dL/dθ in θ's layout, through U0FromVJP too
	U0    []T // dL/du0, of length n
	T0    float64
	T1    float64
	// Sens is the sensitivity matrix at each save time, column by column,
	// as CVODES's CVodeGetSens gives it. Only ForwardSensitivity fills it:
	// Sens[i][k*n+j] = ∂u_j(At[i])/∂θ_k, with θ the parameters and then
	// u0. With U0From, the p columns hold the sensitivities at fixed u0.
	Sens [][]T
	// Forward and Backward are the counters of the solves. Backward sums
	// the backward segments and, with checkpoints, the forward re-solves.
	Forward, Backward Stats
}

// GradientSolver is the reusable form of Gradient: it keeps its
// integrators and buffers, so that once warm a gradient allocates nothing.
//
//	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
//	for … {
//		g, err := gs.Gradient(ctx, θ, loss)   // g.Value, g.P, …
//	}
//
// A GradientSolver is not safe for concurrent use.
type GradientSolver[T Float] struct {
	prob   Problem[T]
	method Method
	sens   Sensitivity
	o      options
	impl   gradMethod[T]
	res    GradientResult[T]

	// the loss being differentiated and its buffers
	loss   *Loss[T]
	lossv  Loss[T]
	atIn   []float64 // the At the sorted copy was made from, then T1 with End
	atDir  bool      // the direction (T1 > T0) the sorted copy was made for
	at     []float64 // sorted ascending
	order  []int     // at[k] = atIn[order[k]]: for dLdus in At's order
	nAt    int       // len(loss.At): atIn[nAt], if any, is End's save at T1
	endK   int       // End's save at T1 in at, the last in the order of integration; −1 without End
	endDu  []T       // End's dL/du
	endDt  float64   // End's dL/dt
	endT   bool      // the solve ended at a terminating firing: End's dL/du and dL/dt go there
	endAt  float64   // where the solve ended
	us     [][]T     // views of the saved states (len n)
	dl     [][]T     // dL/dus[i], in at's order
	dlFlat []T
	usIn   [][]T // us and dl in the order of loss.At, for the callback
	dlIn   [][]T
	ys     [][]T            // the saved states of the forward solve, whole, in at's order
	fbuf   []T              // F at an end of the span
	u0buf  []T              // U0From(P)
	errFn  func() error     // callbackErr, made once when needed (a method value allocates)
	jac    denseJac[T]      // Problem.Jac read as a dense n×n matrix
	hyb    *hybridDerivs[T] // the derivatives of the events and schedules, if any
	// fdProducts: JVP or VJP are central differences (FiniteDiff), so a
	// difference of them needs a larger step than √ε
	fdProducts bool
}

// gradMethod is one sensitivity method's implementation.
type gradMethod[T Float] interface {
	// run computes gs.res for gs.prob and gs.loss.
	run(ctx context.Context, gs *GradientSolver[T]) error
}

// Gradient differentiates the loss of a solve of prob with method m by the
// sensitivity method s. A nil s means ForwardSensitivity below
// ForwardSensitivityLimit parameters plus states, else
// InterpolatingAdjoint. opts are the forward solve's options; the save
// times come from loss.At. The gradient's own settings are fields of s.
//
// It returns the loss and dL/dθ, dL/du0, dL/dT0 and dL/dT1. A failing
// forward or backward solve returns its *Error, wrapped with which solve
// failed. A callback that failed through Problem.Err or Loss.Err is the
// cause of the error returned. The error names the pass that found it. Where a solve or the
// discrete adjoint's reverse pass stopped on it, that is an *Error with
// Retcode Failed.
//
// Through events and schedules (hybrid models), ForwardSensitivity,
// InterpolatingAdjoint, GaussAdjoint and DiscreteAdjoint jump the
// sensitivities or the adjoint at every firing, with the event time's
// derivative from the implicit function theorem (Event's doc), for
// explicit and stiff methods. BacksolveAdjoint refuses them. A save time
// equal to a firing time sees the state before it. A terminating event
// ends the span: a save time after it is an error, and dL/dT1 is 0.
// Loss.End sees the terminating event's time and the state after its
// effect: a loss of the event time itself, such as a first-passage time
// (TestFirstPassage). Effects that fire together are refused.
//
// With a stiff method, ForwardSensitivity and InterpolatingAdjoint keep
// Problem.JacStructure (each method's doc says how;
// TestBrusselatorGradientStructures). BacksolveAdjoint and a dense
// ForwardSensitivity read a band or sparse Problem.Jac in its storage and
// expand it into the n×n matrix their dense systems need; a matrix-free
// structure's Jac is not read.
func Gradient[T Float](ctx context.Context, prob Problem[T], m Method, loss Loss[T], s Sensitivity, opts ...GradientOption) (*GradientResult[T], error) {
	gs, err := NewGradientSolver(prob, m, s, opts...)
	if err != nil {
		return nil, err
	}
	return gs.GradientFor(ctx, prob, loss)
}

// NewGradientSolver prepares gradients of solves of prob; Gradient
// describes the arguments. It checks that the method and the sensitivity
// fit, and that prob has the derivative products they need.
func NewGradientSolver[T Float](prob Problem[T], m Method, s Sensitivity, opts ...GradientOption) (*GradientSolver[T], error) {
	if m == nil {
		return nil, errorf("Gradient: method is nil")
	}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	o, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	return newGradientSolver(prob, m, s, o)
}

// newGradientSolver is NewGradientSolver with parsed options; prob has been
// validated.
func newGradientSolver[T Float](prob Problem[T], m Method, s Sensitivity, o options) (*GradientSolver[T], error) {
	var err error
	if o.atolv != nil && len(o.atolv) != len(prob.U0) {
		return nil, errorf("TolPerComponent has %d absolute tolerances, want one per component (%d)", len(o.atolv), len(prob.U0))
	}
	if s == nil {
		if len(prob.P)+len(prob.U0) < ForwardSensitivityLimit {
			s = ForwardSensitivity{}
		} else {
			s = InterpolatingAdjoint{}
		}
	}
	if err := o.setSensitivity(s); err != nil {
		return nil, err
	}
	gs := &GradientSolver[T]{prob: prob, method: m, sens: s, o: o}
	if err := gs.jac.set(&gs.prob); err != nil {
		return nil, err
	}
	if err := gs.fillDerivatives(); err != nil {
		return nil, err
	}
	if err := hybridSupported(&gs.prob, m, s); err != nil {
		return nil, err
	}
	if len(prob.Events)+len(prob.Schedules) > 0 {
		if gs.hyb, err = newHybridDerivs(&gs.prob, s.settings().finiteDiff, s.Name()); err != nil {
			return nil, err
		}
	}
	switch s := s.(type) {
	case ForwardSensitivity:
		gs.impl, err = newForwardSens(gs, s)
	case InterpolatingAdjoint:
		gs.impl, err = newInterpAdjoint(gs, s)
	case GaussAdjoint:
		gs.impl, err = newGaussAdjoint(gs, s)
	case BacksolveAdjoint:
		gs.impl, err = newBacksolve(gs, s)
	case DiscreteAdjoint:
		gs.impl, err = newDiscreteAdjoint(gs, s)
	default:
		err = errorf("Gradient: unknown sensitivity method %s", s.Name())
	}
	if err != nil {
		return nil, err
	}
	n := len(prob.U0)
	gs.res.U0 = make([]T, n)
	gs.fbuf = make([]T, n)
	return gs, nil
}

// fillDerivatives checks that the problem has the products the method
// needs, filling them by finite differences where allowed.
func (gs *GradientSolver[T]) fillDerivatives() error {
	_, forward := gs.sens.(ForwardSensitivity)
	// Jac and ParamJac make the whole sensitivity right-hand side.
	needJVP := forward && (!usesJac(&gs.prob) || gs.prob.ParamJac == nil)
	if needJVP && gs.prob.JVP == nil {
		if !gs.o.finiteDiff {
			return errorf("Gradient: %s needs Problem.JVP (∂F/∂u·v + ∂F/∂p·dp): give it, build the problem with odead.Derivs or odead.Problem, or set %[1]s.FiniteDiff", gs.sens.Name())
		}
		gs.prob.JVP = finiteDiffJVP(gs.currentF, &gs.o)
		gs.fdProducts = true
	}
	if !forward && gs.prob.VJP == nil {
		if !gs.o.finiteDiff {
			return errorf("Gradient: %s needs Problem.VJP (wᵀ∂F/∂u, wᵀ∂F/∂p): give it, build the problem with odead.Derivs or odead.Problem, or set %[1]s.FiniteDiff", gs.sens.Name())
		}
		gs.prob.VJP = finiteDiffVJP(gs.currentF, &gs.o)
		gs.fdProducts = true
	}
	if gs.prob.U0From != nil && gs.prob.U0FromVJP == nil {
		return errorf("Gradient: Problem.U0From is set but U0FromVJP is nil: dL/du0 cannot flow into dL/dθ")
	}
	return nil
}

// currentF is the F of the problem being differentiated: the finite
// differences call it, so that GradientFor with another F differentiates
// that one.
func (gs *GradientSolver[T]) currentF(du, u []T, p []float32, t float64) {
	gs.prob.F(du, u, p, t)
}

// Gradient differentiates the loss of a solve of the solver's problem with
// parameters θ, which replace Problem.P. len(θ) must stay the same. The
// result is owned by the solver until its next call.
func (gs *GradientSolver[T]) Gradient(ctx context.Context, θ []float32, loss Loss[T]) (*GradientResult[T], error) {
	prob := gs.prob
	prob.P = θ
	return gs.GradientFor(ctx, prob, loss)
}

// GradientFor differentiates the loss of a solve of prob, which must have
// the solver's dimension and number of parameters. F, the derivative
// products, U0, P and the span may differ, as between an ensemble's
// trajectories.
func (gs *GradientSolver[T]) GradientFor(ctx context.Context, prob Problem[T], loss Loss[T]) (*GradientResult[T], error) {
	// The counters first: a call that fails on its input has done no work,
	// and Ensemble.Gradient adds a failed call's counters to its Stats.
	gs.res.Forward, gs.res.Backward = Stats{}, Stats{}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	if len(prob.U0) != len(gs.prob.U0) {
		return nil, errorf("Gradient: len(U0) = %d, want %d", len(prob.U0), len(gs.prob.U0))
	}
	if len(prob.P) != len(gs.prob.P) {
		return nil, errorf("Gradient: len(P) = %d, want %d as when the solver was made", len(prob.P), len(gs.prob.P))
	}
	if err := hybridSupported(&prob, gs.method, gs.sens); err != nil {
		return nil, err
	}
	jvp, vjp := gs.prob.JVP, gs.prob.VJP
	gs.prob = prob
	if prob.JVP == nil {
		gs.prob.JVP = jvp
	}
	if prob.VJP == nil {
		gs.prob.VJP = vjp
	}
	if err := gs.jac.set(&gs.prob); err != nil {
		return nil, err
	}
	switch {
	case gs.hyb != nil:
		if err := gs.hyb.refresh(); err != nil {
			return nil, err
		}
	case len(prob.Events)+len(prob.Schedules) > 0:
		return nil, errorf("Gradient: the problem has %d Events and %d Schedules, want none as when the solver was made", len(prob.Events), len(prob.Schedules))
	}
	gs.lossv = loss // a copy in the solver: &loss would escape and allocate
	if err := gs.setLoss(&gs.lossv); err != nil {
		return nil, err
	}
	gs.res.Value, gs.res.T0, gs.res.T1 = 0, 0, 0
	err := gs.impl.run(ctx, gs)
	if err == nil && gs.prob.U0From != nil {
		gs.prob.U0FromVJP(gs.res.P, gs.res.U0, gs.prob.P)
	}
	// A failed callback is the cause of whatever else went wrong.
	if cerr := gs.callbackErr(); cerr != nil && !errors.Is(err, cerr) {
		err = errorf("Gradient: %w", cerr)
	}
	gs.loss, gs.lossv = nil, Loss[T]{}
	if err != nil {
		return nil, err
	}
	return &gs.res, nil
}

// callbackErr is the error Problem.Err or Loss.Err reports, or nil.
func (gs *GradientSolver[T]) callbackErr() error {
	if f := gs.prob.Err; f != nil {
		if err := f(); err != nil {
			return err
		}
	}
	if gs.loss != nil && gs.loss.Err != nil {
		return gs.loss.Err()
	}
	return nil
}

// hook is the Problem.Err of the gradient's own solves. It is the
// problem's or the loss's hook when only one has one, nil when neither
// has, else callbackErr, which consults both.
func (gs *GradientSolver[T]) hook() func() error {
	var lossErr func() error
	if gs.loss != nil {
		lossErr = gs.loss.Err
	}
	switch {
	case lossErr == nil:
		return gs.prob.Err
	case gs.prob.Err == nil:
		return lossErr
	}
	if gs.errFn == nil {
		gs.errFn = gs.callbackErr
	}
	return gs.errFn
}

// failedAt is the error that stops a gradient's pass which, outside a
// solve, at t when a callback has failed.
func (gs *GradientSolver[T]) failedAt(which string, t float64) error {
	return wrapSolveErr(which, &Error{Code: Failed, T: t, Component: -1, Err: gs.callbackErr()})
}

// setLoss checks loss and sorts its save times into the solver's buffers,
// reused while At keeps its length.
func (gs *GradientSolver[T]) setLoss(loss *Loss[T]) error {
	if loss.Saved != nil && loss.Point != nil {
		return errorf("Loss: Saved and Point are both set, want at most one")
	}
	if (loss.Saved != nil || loss.Point != nil) && len(loss.At) == 0 {
		return errorf("Loss: Saved or Point is set but At is empty, want at least one save time")
	}
	if loss.Running != nil && loss.RunningGradient == nil {
		return errorf("Loss: Running is set but RunningGradient is nil")
	}
	t0, t1 := gs.prob.T0, gs.prob.T1
	lo, hi := min(t0, t1), max(t0, t1)
	for _, t := range loss.At {
		if !(t >= lo && t <= hi) {
			return errorf("Loss.At time %g is outside the span [%g, %g]", t, t0, t1)
		}
	}
	gs.loss = loss
	n, k := len(gs.prob.U0), len(loss.At)
	end := loss.End != nil
	if end {
		// End is a save at T1 unless a terminating firing comes first.
		k++
	}
	up := t1 > t0
	if len(gs.atIn) != k || !slices.Equal(gs.atIn[:gs.nAt], loss.At) || gs.nAt != len(loss.At) ||
		(end && gs.atIn[k-1] != t1) || gs.atDir != up {
		gs.nAt, gs.atDir = len(loss.At), up
		gs.atIn = append(gs.atIn[:0], loss.At...)
		if end {
			gs.atIn = append(gs.atIn, t1)
		}
		gs.sortAt(end, up)
	}
	gs.endK = -1
	if end {
		gs.endK = len(gs.at) - 1
		if !up {
			gs.endK = 0
		}
		if len(gs.endDu) != n {
			gs.endDu = make([]T, n)
		}
	}
	if len(gs.dl) != k {
		gs.dlFlat = make([]T, k*n)
		gs.dl = make([][]T, k)
		gs.us = make([][]T, k)
		gs.usIn = make([][]T, k)
		gs.dlIn = make([][]T, k)
		for i := range gs.dl {
			gs.dl[i] = gs.dlFlat[i*n : (i+1)*n : (i+1)*n]
		}
	}
	return nil
}

// sortAt sorts gs.atIn into gs.at and gs.order. With end, its last time
// is End's save at T1: it goes last in the order of integration, after
// any other save time at T1 (first in gs.at when up is false).
func (gs *GradientSolver[T]) sortAt(end, up bool) {
	in := gs.atIn
	gs.order = gs.order[:0]
	for i := range in {
		gs.order = append(gs.order, i)
	}
	slices.SortStableFunc(gs.order, func(a, b int) int {
		switch {
		case in[a] < in[b]:
			return -1
		case in[a] > in[b]:
			return 1
		}
		return 0
	})
	if end && !up {
		// T1 is the least time: move End's entry from after the other
		// T1 entries to the front.
		k := slices.Index(gs.order, len(in)-1)
		copy(gs.order[1:k+1], gs.order[:k])
		gs.order[0] = len(in) - 1
	}
	gs.at = gs.at[:0]
	for _, i := range gs.order {
		gs.at = append(gs.at, in[i])
	}
}

// isEnd reports whether k, an index into gs.at, is End's save at T1.
func (gs *GradientSolver[T]) isEnd(k int) bool { return k == gs.endK }

// takeSaved reads the forward solve's saved states into gs.ys, whole, and
// into gs.us, their first n components, and returns gs.ys. The solve holds
// them in the order of integration; gs.ys takes the ascending order of
// gs.at.
func (gs *GradientSolver[T]) takeSaved(it *Integrator[T], n int) [][]T {
	_, ys := it.Saved()
	ys = ys[:min(len(ys), len(gs.us))] // a terminating firing's state comes last, past the At times
	gs.ys = gs.ys[:0]
	for k := range ys {
		y := ys[k]
		if it.dir < 0 {
			y = ys[len(ys)-1-k]
		}
		gs.ys = append(gs.ys, y)
		gs.us[k] = y[:n]
	}
	// A terminating firing ended the solve: End sees its time and the
	// state after its effect, not a save at T1.
	gs.endT, gs.endAt = it.stats.Retcode == Terminated, it.t
	if gs.endK >= 0 && gs.endT {
		gs.us[gs.endK] = it.u[:n]
	}
	return gs.ys
}

// evalLoss evaluates the saved part of the loss at the states gs.us,
// filling gs.dl, and checks the result.
func (gs *GradientSolver[T]) evalLoss() (float64, error) {
	l := gs.loss
	clear(gs.dlFlat)
	gs.endDt = 0
	var v float64
	nAt := gs.nAt
	switch {
	case l.Saved != nil:
		for k, i := range gs.order {
			if i < nAt {
				gs.usIn[i], gs.dlIn[i] = gs.us[k], gs.dl[k]
			}
		}
		v = l.Saved(gs.atIn[:nAt], gs.usIn[:nAt], gs.dlIn[:nAt])
	case l.Point != nil:
		for k, i := range gs.order {
			if i < nAt {
				v += l.Point(i, gs.at[k], gs.us[k], gs.dl[k])
			}
		}
	}
	if l.End != nil {
		v += gs.evalEnd()
	}
	if l.Err != nil {
		if err := l.Err(); err != nil {
			return v, errorf("Gradient: the loss: %w", err)
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v, errorf("Gradient: the loss returned %g, want a finite value", v)
	}
	if l.End != nil {
		t := gs.prob.T1
		if gs.endT {
			t = gs.endAt
		}
		if c := firstNonFinite(gs.endDu); c >= 0 {
			return v, errorf("Gradient: Loss.End's dL/du at t=%g has %g in component %d, want finite values", t, gs.endDu[c], c)
		}
		if math.IsNaN(gs.endDt) || math.IsInf(gs.endDt, 0) {
			return v, errorf("Gradient: Loss.End's dL/dt at t=%g is %g, want a finite value", t, gs.endDt)
		}
	}
	if c := firstNonFinite(gs.dlFlat); c >= 0 {
		n := len(gs.prob.U0)
		k := c / n
		return v, errorf("Gradient: the loss's dL/du at t=%g (At[%d]) has %g in component %d, want finite values", gs.at[k], gs.order[k], gs.dlFlat[c], c%n)
	}
	return v, nil
}

// evalEnd evaluates Loss.End where the solve ended, at the state takeSaved
// left in gs.us[gs.endK], into gs.endDu and gs.endDt, and returns its loss.
// At T1 its dL/du is that of a save at T1.
func (gs *GradientSolver[T]) evalEnd() float64 {
	t := gs.prob.T1
	if gs.endT {
		t = gs.endAt
	}
	clear(gs.endDu)
	l, dt := gs.loss.End(t, gs.us[gs.endK], gs.endDu)
	gs.endDt = dt
	if !gs.endT {
		copy(gs.dl[gs.endK], gs.endDu)
	}
	return l
}

// endDerivatives sets res.T0 and res.T1 from the adjoint at the two ends.
// lam0 is dL/du0, including any save time at T0, whose term is taken out
// here. u1 is the state at T1.
func (gs *GradientSolver[T]) endDerivatives(lam0, u1 []T) {
	prob := &gs.prob
	n := len(prob.U0)
	var d0, d1 float64
	f := gs.fbuf
	u0 := gs.initialState()
	prob.F(f, u0, prob.P, prob.T0)
	for j := 0; j < n; j++ {
		l := float64(lam0[j])
		for k, t := range gs.at {
			if t == prob.T0 {
				l -= float64(gs.dl[k][j])
			}
		}
		d0 -= l * float64(f[j])
	}
	if gs.loss.Running != nil {
		d0 -= gs.loss.Running(u0, prob.P, prob.T0)
		d1 += gs.loss.Running(u1, prob.P, prob.T1)
	}
	if prob.T1 != prob.T0 {
		prob.F(f, u1, prob.P, prob.T1)
		for k, t := range gs.at {
			if t == prob.T1 {
				for j := 0; j < n; j++ {
					d1 += float64(gs.dl[k][j]) * float64(f[j])
				}
			}
		}
	}
	if !gs.endT {
		d1 += gs.endDt // End at T1 reads T1 itself
	}
	gs.res.T0, gs.res.T1 = d0, d1
}

// initialState returns the problem's initial state: U0, or U0From(P)
// computed into a buffer of the solver.
func (gs *GradientSolver[T]) initialState() []T {
	if gs.prob.U0From == nil {
		return gs.prob.U0
	}
	if gs.u0buf == nil {
		gs.u0buf = make([]T, len(gs.prob.U0))
	}
	gs.prob.U0From(gs.u0buf, gs.prob.P)
	return gs.u0buf
}

// wrapSolveErr names which solve of a gradient failed.
func wrapSolveErr(which string, err error) error {
	if err == nil {
		return nil
	}
	return &solveError{which: which, err: err}
}

// solveError is a failed solve inside a gradient; errors.As finds the
// solve's *Error through it.
type solveError struct {
	which string
	err   error
	hint  string // what to try instead, after the solve's own text; may be empty
}

func (e *solveError) Error() string { return prefix + e.Unprefixed() }

func (e *solveError) Unprefixed() string {
	s := "Gradient: the " + e.which + ": " + bareText(e.err)
	if e.hint != "" {
		s += "; " + e.hint
	}
	return s
}

func (e *solveError) Unwrap() error { return e.err }

// hybridSupported refuses a problem with events or schedules when
// sensitivity method s does not differentiate through them with method m.
func hybridSupported[T Float](prob *Problem[T], m Method, s Sensitivity) error {
	if len(prob.Events) == 0 && len(prob.Schedules) == 0 {
		return nil
	}
	switch s.(type) {
	case ForwardSensitivity:
		return nil // every method and structure (sens_forward_hybrid.go)
	case DiscreteAdjoint:
		return nil // explicit and Rosenbrock methods; newDiscreteAdjoint refuses the others
	case InterpolatingAdjoint, GaussAdjoint:
		return nil // every method (sens_adjoint_hybrid.go)
	}
	return errorf("Gradient: %s does not differentiate through events and schedules yet with %s (Problem has %d Events and %d Schedules)", s.Name(), m.Name(), len(prob.Events), len(prob.Schedules))
}
