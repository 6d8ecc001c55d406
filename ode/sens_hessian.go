package ode

import (
	"context"
	"errors"
	"math"
)

// Hessian-vector products of a loss through a solve, by forward over
// adjoint (CVODES's second-order adjoint; SciMLSensitivity's
// second_order_sensitivity_product). For the direction v = (v_θ, v_u0)
// the forward solve carries the state's tangent
//
//	ṡ' = ∂F/∂u·ṡ + ∂F/∂θ·v_θ,   ṡ(T0) = v_u0,
//
// beside u, and the backward solve carries the adjoint of InterpolatingAdjoint
// and its tangent along v,
//
//	λ' = −Fᵤᵀλ − gᵤ,           μ' = −Fₚᵀλ − gₚ,
//	λ̇' = −Fᵤᵀλ̇ − (Fᵤᵀλ)˙ − ġᵤ,  μ̇' = −Fₚᵀλ̇ − (Fₚᵀλ)˙ − ġₚ,
//
// where (·)˙ is the derivative along (ṡ, v_θ), reading u and ṡ from the
// forward solve's dense output. λ jumps by dL/du(t_i) and λ̇ by
// ∂²L/∂u²(t_i)·ṡ(t_i) at the save times. Then the gradient is (μ, λ)(T0)
// and H·v is (μ̇, λ̇)(T0). One Problem.VJPJVP gives the whole backward
// right-hand side.

// HvLoss is a Loss with its second derivatives, for HvSolver. Each is
// optional: a missing one is taken by central differences of the Loss's
// own gradient along the direction, with HvSolver's steps (see
// HessianVector), whatever the sensitivity's FiniteDiff says.
type HvLoss[T Float] struct {
	Loss[T]
	// PointHv writes ∂²Point_i/∂u²·ud at u into hv, zeroed before the
	// call.
	PointHv func(i int, t float64, u, ud, hv []T)
	// SavedHv writes Σ_j ∂²L/∂us[i]∂us[j]·uds[j] into hvs[i], zeroed
	// before the call; ts and us are as Saved's.
	SavedHv func(ts []float64, us, uds, hvs [][]T)
	// EndHv writes ∂²End/∂u²·ud at (T1, u) into hv, zeroed before the
	// call: End's second derivative along the tangent at T1, where End is
	// a save (Loss.End). End's dL/dt moves only dL/dT1 and is not
	// differentiated. Where a terminating firing ended the solve EndHv
	// is not called: End's derivatives there are differences of End
	// (see HessianVector).
	EndHv func(t float64, u, ud, hv []T)
	// RunningHv adds into hu and hp the derivative of RunningGradient's
	// ∂g/∂u and ∂g/∂p along (ud, pd) in (u, p). pd is nil when the
	// parameter direction is zero.
	RunningHv func(hu, hp, u, ud []T, p []float32, pd []T, t float64)

	// GaussNewton makes the product the Gauss–Newton one: the Hessian of
	// the loss as a function of the solution, Jᵀ·∇²L·J with J = ∂(the
	// solution)/∂(θ, u0), leaving out the second derivatives of F, of
	// the schedules' and events' effects and conditions, of TimesFrom and
	// of U0From; where a terminating firing ends the solve, its time is
	// part of the solution that Loss.End reads. It is positive
	// semi-definite when the loss is convex in the solution, as least
	// squares are, where it is the Fisher information's form; it equals
	// H·v when F is linear in u and θ together
	// (TestHessianVectorGaussNewton). It costs what H·v does.
	GaussNewton bool
}

// HvResult is the result of a Hessian-vector product: the loss, its
// gradient and the product H·v, each split into the parameters' part and
// the initial state's. The slices are owned by the HvSolver and
// overwritten by its next call.
type HvResult[T Float] struct {
	Value float64
	P     []T // dL/dθ
	U0    []T // dL/du0
	HvP   []T // the θ rows of H·v
	HvU0  []T // the u0 rows of H·v
	// Forward and Backward are the counters of the two solves; with
	// checkpoints Backward counts the segments' re-solves too.
	Forward, Backward Stats
}

// HvSolver is the reusable form of HessianVector: it keeps its integrators
// and buffers, so that once warm a product allocates nothing.
//
// A HvSolver is not safe for concurrent use.
type HvSolver[T Float] struct {
	forwardReader[T] // the forward dense output, or the segments solved again

	gs        *GradientSolver[T] // the loss's bookkeeping and the adjoint pass's parent
	n, np     int
	stiff     bool
	fdJVP     bool // Problem.JVP is central differences (FiniteDiff)
	quad      bool
	built     bool
	fwd       *Integrator[T]
	ckpt      int         // InterpolatingAdjoint.Checkpoints; 0: none
	tr        fwdTrace[T] // the forward solve's checkpoints and steps
	y0        []T
	pass      adjointPass[T]
	vθ        []T // the parameter direction; nil when it is zero
	vθbuf     []T
	lossv     HvLoss[T]
	res       HvResult[T]
	hdl       [][]T // ∂²L/∂u²·ṡ at the save times, in gs.at's order
	hdlFlat   []T
	udsIn     [][]T // ṡ and hdl in the order of loss.At, for SavedHv
	hdlIn     [][]T
	wn, wdn   []T            // −λ, −λ̇
	gu, gp    []T            // the running cost's gradient
	hu, hp    []T            // and its derivative
	rows      hvRows[T]      // the dense structure's augmented Jacobians
	aj        *adjointJac[T] // −Jᵀ from Problem.Jac in a band or sparse structure
	fd        hvDiff[T]
	fdVJPJVP  func(gu, gp, hu, hp, w, wd, u, ud []T, p []float32, pd []T, t float64)
	fdRunning func(hu, hp, u, ud []T, p []float32, pd []T, t float64)
	fdPoint   func(i int, t float64, u, ud, hv []T)
	fdEnd     func(t float64, u, ud, hv []T)
	fdSaved   func(ts []float64, us, uds, hvs [][]T)
	fwdF      func(dy, y []T, p []float32, t float64)
	onSave    func(k int)
	sch       *hvSched[T] // the schedules' firings; nil without schedules
}

// HessianVector returns H·v, the product of the Hessian of the loss of a
// solve of prob by method m with the direction v, and the loss's gradient.
// v has the parameters' length plus the state's: v_θ then v_u0, as
// GradientResult.Sens orders its columns. The adjoint's settings come from
// s. opts are the forward solve's options.
//
// It solves the state and its tangent along v forwards, with the tangent
// in the error control, and the adjoint and its tangent backwards, each
// evaluation one VJPJVP: a small multiple of a gradient's work (bench
// hvp-ode measures the ratio). It needs Problem.JVP for the tangent and
// Problem.VJPJVP for the backward solve. With s.FiniteDiff a missing JVP,
// VJP or VJPJVP is taken by central differences: VJPJVP's derivative along
// (ud, pd) by two VJPs at u ± δ·ud/‖ud‖∞, with the step δ that
// Sensitivity describes for ∂F/∂u·v, plus two per non-zero pd_k at
// p_k ± δ_k in float32; its error is that of the difference, about
// ε^(2/3) of T relative plus the truncation
// (TestHessianVectorFiniteDiffProducts). A missing HvLoss second
// derivative is taken the same way from the Loss's gradient, two
// evaluations per product.
//
// The backward solve keeps λ and λ̇ in its error control with
// s.AdjointTol, and μ with s.QuadTol, as InterpolatingAdjoint does. μ̇,
// the product's parameter rows, is left out of it, as CVODES leaves its
// backward quadratures out by default, unless s.QuadTol is set: then it
// takes QuadTol too. Its accuracy then follows the steps that λ, λ̇ and μ
// choose, as GaussAdjoint's μ does; with many parameters it saves most of
// the steps the tangents would add (bench hvp-ode).
//
// With s.Checkpoints > 0 the forward solve keeps no dense output: it
// keeps at most Checkpoints states of u and its tangent (and the running
// cost's integral) and the times and sizes of its steps, as
// InterpolatingAdjoint does for a gradient. The backward solve solves
// each segment between two checkpoints again, on the forward solve's own
// steps, when it first reads a time in it, holding two at a time. It
// reads the same dense output as without checkpoints, so the product is
// the same (TestHvCheckpointsLotkaVolterra, TestHvCheckpointsCVODES,
// TestHvCheckpointsBrusselator), for one more forward pass's steps,
// counted in HvResult.Backward. BDF solves each segment again with error
// control instead: its product then differs by about the tolerance.
//
// Stiff methods (Rodas5P, BDF) take any Problem.JacStructure and linear
// solver that they take for a solve. With a dense structure and a direct
// solver the Jacobians of the two augmented systems are formed from n
// VJPJVP products with unit vectors. Otherwise they are not formed: each
// solve factors I − c·J in J's structure (−Jᵀ in the transposed one
// backwards), or runs GMRES on products with J (Problem.JVP) or −Jᵀ (one
// VJP) with the method's preconditioner (a band preconditioner's
// bandwidths swapped backwards), and takes the blocks that couple the
// tangent to the state from one difference of the forward right-hand
// side or one VJPJVP backwards, as ForwardSensitivity and
// InterpolatingAdjoint do. GMRES weighs each block's residual by that
// block's own tolerances (TestHvBrusselatorStructures,
// TestHvBrusselatorKrylov; BenchmarkHvBrusselator compares the costs).
//
// Schedules at fixed times (Times without TimesFrom), such as the doses
// of a dosing schedule, are differentiated through: at a firing the
// tangent jumps by Schedule.EffectJVP, and the adjoint and its tangent by
// EffectVJP and its derivative along the tangent, which is taken by
// central differences of EffectVJP in u and, Richardson-extrapolated, in
// float32 parameter steps: exact to rounding for an effect affine in u
// and θ, as a dose u += D is (TestHvScheduleLinearPK,
// TestHvScheduleNonlinearDose). A save time equal to a firing time sees
// the state before it, as in Gradient. Checkpoints work with them: a
// firing ends a segment. With s.FiniteDiff missing effect products are
// taken by differences too.
//
// Schedules whose times come from θ (TimesFrom) are differentiated
// through as events whose time's tangent is TimesFromJac·v_θ
// (sens_hessian_timesfrom.go derives it); the times' second derivatives
// are central differences of TimesFromJac in θ, exact to rounding when
// the times are affine in θ (TestHvTimesFromMatchDifferences). With
// s.FiniteDiff a missing TimesFromJac is a difference of TimesFrom.
//
// Events at state-dependent times are differentiated through too, with
// the moving time's terms: the tangent jumps as in Gradient's forward
// sensitivities, and the adjoint and its tangent by the first-order jump
// and its derivative along the tangent, which moves the event time
// (sens_hessian_events.go derives it; TestHvEventsMatchDifferences). Its
// second derivatives of the condition and the effect are central
// differences of the first-order jump, as for schedules. Checkpoints
// and ensembles work with them as with schedules
// (TestHvEventsCheckpoints, TestHvEventsEnsemble). Effects that fire
// together are an error.
//
// Loss.End, where the solve ends at T1, is a save at T1: λ̇ jumps there
// by HvLoss.EndHv along ṡ(T1) (TestHvLossEnd; after events,
// TestHvEventsLossEnd).
//
// A terminating firing, of an event or a schedule, ends the solve at its
// time τ, which moves with θ for an event or a TimesFrom schedule; the
// loss then reads the saves up to τ (a later one is an error), the
// running cost's integral to τ and End at τ and the state after the
// effect, a first-passage time loss. The jumps there are the terminal
// ones, whose λ⁺ and dL/dτ are End's gradient at the moving end: their
// derivative along the end's tangent is taken by central differences of
// Loss.End, in u and t, not by EndHv (sens_hessian_term.go derives it;
// TestHvTerminatingMatchDifferences).
//
// With Problem.U0From, u0 is a function of θ: the tangent starts from
// ∂u0/∂θ·v_θ + v_u0, and θ's rows take U0FromVJP of λ and λ̇ and U0From's
// own second derivative along v_θ. Those derivatives of U0From are taken
// by central differences in float32 parameter steps, two calls per
// non-zero v_θ,k, exact to rounding when U0From is linear in θ, as when
// it reads the initial state from θ (TestHessianVectorU0From).
func HessianVector[T Float](ctx context.Context, prob Problem[T], m Method, loss HvLoss[T], v []T, s InterpolatingAdjoint, opts ...GradientOption) (*HvResult[T], error) {
	hs, err := NewHvSolver(prob, m, s, opts...)
	if err != nil {
		return nil, err
	}
	return hs.HvFor(ctx, prob, loss, v)
}

// FullHessian returns the Hessian of the loss with respect to θ and u0,
// row-major of side len(prob.P) + len(prob.U0), from one HessianVector
// product per unit vector. It is for few parameters. The rows are the
// products as computed, not symmetrised: their asymmetry measures the
// error.
func FullHessian[T Float](ctx context.Context, prob Problem[T], m Method, loss HvLoss[T], s InterpolatingAdjoint, opts ...GradientOption) ([]T, error) {
	hs, err := NewHvSolver(prob, m, s, opts...)
	if err != nil {
		return nil, err
	}
	N := len(prob.P) + len(prob.U0)
	H := make([]T, N*N)
	if err := hs.Hessian(ctx, prob, loss, H); err != nil {
		return nil, err
	}
	return H, nil
}

// NewHvSolver prepares Hessian-vector products of losses of solves of
// prob; HessianVector describes the arguments.
func NewHvSolver[T Float](prob Problem[T], m Method, s InterpolatingAdjoint, opts ...GradientOption) (*HvSolver[T], error) {
	if m == nil {
		return nil, errorf("HessianVector: method is nil")
	}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	o, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	return newHvSolver(prob, m, s, o)
}

// newHvSolver is NewHvSolver with parsed options; prob has been
// validated and has no events.
func newHvSolver[T Float](prob Problem[T], m Method, s InterpolatingAdjoint, o options) (*HvSolver[T], error) {
	stiff := m.info().stiff
	gs, err := newGradientSolver(prob, m, s, o)
	if err != nil {
		return nil, err
	}
	n, np := len(prob.U0), len(prob.P)
	hs := &HvSolver[T]{gs: gs, n: n, np: np, stiff: stiff, ckpt: max(s.Checkpoints, 0)}
	if gs.prob.JVP == nil {
		if !gs.o.finiteDiff {
			return nil, errorf("HessianVector: the state's tangent needs Problem.JVP (∂F/∂u·v + ∂F/∂p·dp): give it, build the problem with odead.Derivs, or set InterpolatingAdjoint.FiniteDiff")
		}
		gs.prob.JVP = finiteDiffJVP(gs.currentF, &gs.o)
		hs.fdJVP = true
	}
	hs.fd.init(n, np)
	hs.fdVJPJVP = hs.diffVJPJVP
	hs.fdRunning = hs.diffRunningHv
	hs.fdPoint = hs.diffPointHv
	hs.fdEnd = hs.diffEndHv
	hs.fdSaved = hs.diffSavedHv
	if gs.prob.VJPJVP == nil {
		if !gs.o.finiteDiff {
			return nil, errorf("HessianVector: the backward solve needs Problem.VJPJVP (the derivative of wᵀ∂F/∂(u,p) along a direction): give it, build the problem with odead.Derivs, or set InterpolatingAdjoint.FiniteDiff")
		}
		gs.prob.VJPJVP = hs.fdVJPJVP
	}
	hs.fwdF = hs.forwardF
	hs.onSave = hs.jumpHv
	hs.vθbuf = make([]T, np)
	hs.wn, hs.wdn = make([]T, n), make([]T, n)
	hs.gu, hs.gp, hs.hu, hs.hp = make([]T, n), make([]T, np), make([]T, n), make([]T, np)
	hs.res.P, hs.res.HvP = make([]T, np), make([]T, np)
	hs.res.U0, hs.res.HvU0 = make([]T, n), make([]T, n)
	if stiff && !hs.augmented() {
		hs.rows.init(n, np)
	}
	return hs, nil
}

// Hv returns H·v for the solver's problem with parameters θ, which
// replace Problem.P. The result is owned by the solver until its next
// call.
func (hs *HvSolver[T]) Hv(ctx context.Context, θ []float32, loss HvLoss[T], v []T) (*HvResult[T], error) {
	prob := hs.gs.prob
	prob.P = θ
	return hs.HvFor(ctx, prob, loss, v)
}

// Hessian writes the Hessian with respect to θ and u0 into H, row-major
// of side len(P) + len(U0), by one product per unit vector; FullHessian
// describes it.
func (hs *HvSolver[T]) Hessian(ctx context.Context, prob Problem[T], loss HvLoss[T], H []T) error {
	N := hs.np + hs.n
	if len(H) != N*N {
		return errorf("Hessian: len(H) = %d, want %d (the side %d squared)", len(H), N*N, N)
	}
	e := make([]T, N)
	for k := range N {
		e[k] = 1
		r, err := hs.HvFor(ctx, prob, loss, e)
		if err != nil {
			return err
		}
		e[k] = 0
		copy(H[k*N:], r.HvP)
		copy(H[k*N+hs.np:], r.HvU0)
	}
	return nil
}

// HvFor returns H·v for a solve of prob, which must have the solver's
// dimension and number of parameters; F, the products, U0, P and the span
// may differ.
func (hs *HvSolver[T]) HvFor(ctx context.Context, prob Problem[T], loss HvLoss[T], v []T) (*HvResult[T], error) {
	gs := hs.gs
	hs.res.Forward, hs.res.Backward = Stats{}, Stats{}
	gs.res.Forward, gs.res.Backward = Stats{}, Stats{}
	if err := prob.validate(); err != nil {
		return nil, err
	}
	if len(prob.U0) != hs.n || len(prob.P) != hs.np {
		return nil, errorf("HessianVector: len(U0) = %d and len(P) = %d, want %d and %d as when the solver was made", len(prob.U0), len(prob.P), hs.n, hs.np)
	}
	if len(v) != hs.np+hs.n {
		return nil, errorf("HessianVector: len(v) = %d, want %d (the parameters, then the state)", len(v), hs.np+hs.n)
	}
	if c := firstNonFinite(v); c >= 0 {
		return nil, errorf("HessianVector: v[%d] = %g, want a finite direction", c, float64(v[c]))
	}
	jvp, vjp, vjpjvp := gs.prob.JVP, gs.prob.VJP, gs.prob.VJPJVP
	gs.prob = prob
	if prob.JVP == nil {
		gs.prob.JVP = jvp
	}
	if prob.VJP == nil {
		gs.prob.VJP = vjp
	}
	if prob.VJPJVP == nil {
		gs.prob.VJPJVP = vjpjvp
	}
	if err := hs.schedRefresh(&prob); err != nil {
		return nil, err
	}
	hs.lossv = loss
	gs.lossv = loss.Loss
	err := gs.setLoss(&gs.lossv)
	if err == nil {
		err = hs.run(ctx, v)
	}
	if cerr := gs.callbackErr(); cerr != nil && !errors.Is(err, cerr) {
		err = errorf("HessianVector: %w", cerr)
	}
	hs.res.Forward, hs.res.Backward = gs.res.Forward, gs.res.Backward
	gs.loss, gs.lossv, hs.lossv = nil, Loss[T]{}, HvLoss[T]{}
	if err != nil {
		return nil, err
	}
	return &hs.res, nil
}

// build makes the integrators: forward [u, ṡ] (and the running cost's
// integral q), backward [λ, λ̇, μ, μ̇].
func (hs *HvSolver[T]) build(quad bool) error {
	gs := hs.gs
	n, np := hs.n, hs.np
	nf := 2 * n
	if quad {
		nf++
	}
	hs.quad = quad
	hs.y0, hs.ub = make([]T, nf), make([]T, nf)
	fp := Problem[T]{F: hs.fwdF, U0: hs.y0, T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P}
	bp := Problem[T]{F: hs.backwardF, U0: make([]T, 2*n+2*np), P: gs.prob.P}
	bm := gs.method
	switch {
	case hs.augmented():
		bm = hs.inStructure(&fp, &bp, quad)

	case hs.stiff:
		fp.Jac, bp.Jac = hs.forwardJac, hs.backwardJac
	}
	fo := gs.o
	fo.saveAt, fo.saveAtSet, fo.dense = nil, true, hs.ckpt == 0
	fo.atolv, fo.rtolv = make([]float64, nf), make([]float64, nf)
	for i := range 2 * n {
		fo.atolv[i], fo.rtolv[i] = gs.o.tolAt(i % n)
	}
	if quad {
		fo.rtolv[2*n], fo.atolv[2*n] = gs.o.quadTols()
	}
	for _, a := range fo.atolv {
		fo.atol = min(fo.atol, a)
	}
	var err error
	if hs.fwd, err = initWith(hs.schedAug(fp), gs.method, fo); err != nil {
		return err
	}
	hs.cache = nil
	if hs.ckpt > 0 {
		if err := hs.buildCheckpoints(fp, fo); err != nil {
			return err
		}
	}
	bo := backwardOptions(&gs.o, 2*n+2*np, 0, 2*n)
	if gs.o.quadTol == (Tolerance{}) {
		// μ̇ outside the error control unless QuadTol is set (see
		// HessianVector).
		for i := 2*n + np; i < len(bo.atolv); i++ {
			bo.atolv[i] = math.Inf(1)
		}
	}
	bwd, err := initWith(bp, bm, bo)
	if err != nil {
		return err
	}
	bwd.quadratures(2 * np) // backwardF reads λ and λ̇ only
	hs.pass = adjointPass[T]{gs: gs, bwd: bwd, a: make([]T, 2*n+2*np), onSave: hs.onSave}
	hs.schedHooks()
	hs.built = true
	return nil
}

func (hs *HvSolver[T]) run(ctx context.Context, v []T) error {
	gs := hs.gs
	quad := gs.loss.Running != nil
	if !hs.built || quad != hs.quad {
		if err := hs.build(quad); err != nil {
			return err
		}
	}
	n, np := hs.n, hs.np
	copy(hs.vθbuf, v[:np])
	hs.vθ = nil
	for _, x := range hs.vθbuf {
		if x != 0 {
			hs.vθ = hs.vθbuf
			break
		}
	}

	// The forward solve of [u, ṡ, q].
	it := hs.fwd
	it.o.saveAt = gs.at
	it.prob.Err = gs.hook()
	it.quadratures(len(hs.y0) - 2*n)
	clear(hs.y0)
	copy(hs.y0, gs.initialState())
	copy(hs.y0[n:], v[np:])
	if gs.prob.U0From != nil && hs.vθ != nil {
		hs.u0Tangent(hs.y0[n : 2*n])
	}
	hs.schedStart()
	if err := it.Reinit(hs.y0, gs.prob.T0, gs.prob.T1, gs.prob.P); err != nil {
		return wrapSolveErr("forward solve", err)
	}
	if hs.cache != nil {
		hs.startCheckpoints(it)
	}
	err := it.Run(ctx)
	gs.res.Forward = it.Stats()
	if err != nil {
		return wrapSolveErr("forward solve", err)
	}
	if err := gs.checkReached(it); err != nil {
		return err
	}
	gs.takeSaved(it, n)
	val, err := gs.evalLoss()
	if err != nil {
		return err
	}
	if quad {
		val += float64(it.u[2*n])
	}
	hs.res.Value = val
	if err := hs.lossHv(); err != nil {
		return err
	}

	// The backward solve of [λ, λ̇, μ, μ̇].
	ap := &hs.pass
	ap.startAt(it.dir, it.t) // T1, or where a terminating firing ended the solve
	hs.ubT = math.NaN()
	if hs.cache != nil {
		err = hs.backwardCheckpointed(ctx)
	} else {
		hs.rd = denseReader[T]{it: it}
		err = ap.to(ctx, gs.prob.T0)
	}
	if err != nil {
		return err
	}
	a := ap.a
	copy(hs.res.U0, a[:n])
	copy(hs.res.HvU0, a[n:2*n])
	copy(hs.res.P, a[2*n:2*n+np])
	copy(hs.res.HvP, a[2*n+np:])
	if gs.prob.U0From != nil {
		// u0 = U0From(θ): dL/du0 and its tangent flow into θ's rows, and
		// so does U0From's own curvature along v_θ.
		gs.prob.U0FromVJP(hs.res.P, hs.res.U0, gs.prob.P)
		gs.prob.U0FromVJP(hs.res.HvP, hs.res.HvU0, gs.prob.P)
		if hs.vθ != nil && !hs.lossv.GaussNewton {
			hs.u0Curvature(hs.res.HvP, hs.res.U0)
		}
	}
	return nil
}

// forwardF is the right-hand side of [u, ṡ, q]: F, the tangent's
// ∂F/∂u·ṡ + ∂F/∂θ·v_θ, and the running cost.
func (hs *HvSolver[T]) forwardF(dy, y []T, p []float32, t float64) {
	n := hs.n
	prob := &hs.gs.prob
	u := y[:n]
	prob.F(dy[:n], u, p, t)
	prob.JVP(dy[n:2*n], u, y[n:2*n], p, hs.vθ, t)
	if hs.quad {
		dy[2*n] = T(hs.gs.loss.Running(u, p, t))
	}
}

// backwardF is the right-hand side of [λ, λ̇, μ, μ̇]: one VJPJVP at
// (−λ, −λ̇), and the running cost's terms.
func (hs *HvSolver[T]) backwardF(da, a []T, p []float32, t float64) {
	n, np := hs.n, hs.np
	hs.forwardAt(t)
	u, ud := hs.ub[:n], hs.ub[n:2*n]
	for i := 0; i < n; i++ {
		hs.wn[i], hs.wdn[i] = -a[i], -a[n+i]
	}
	clear(da)
	dl, dld, dm, dmd := da[:n], da[n:2*n], da[2*n:2*n+np], da[2*n+np:]
	hs.backVJPJVP(dl, dm, dld, dmd, hs.wn, hs.wdn, u, ud, p, t)
	if !hs.quad {
		return
	}
	l := hs.gs.loss
	clear(hs.gu)
	clear(hs.gp)
	l.RunningGradient(hs.gu, hs.gp, u, p, t)
	clear(hs.hu)
	clear(hs.hp)
	rh := hs.lossv.RunningHv
	if rh == nil {
		rh = hs.fdRunning
	}
	rh(hs.hu, hs.hp, u, ud, p, hs.vθ, t)
	for i := range dl {
		dl[i] -= hs.gu[i]
		dld[i] -= hs.hu[i]
	}
	for k := range dm {
		dm[k] -= hs.gp[k]
		dmd[k] -= hs.hp[k]
	}
}

// backVJPJVP is the backward system's product: Problem.VJPJVP at
// (w, wd) along (ud, v_θ), or for a Gauss–Newton product the VJPs at w
// and at wd alone, which leave out wᵀ·F's second derivatives.
func (hs *HvSolver[T]) backVJPJVP(gu, gp, hu, hp, w, wd, u, ud []T, p []float32, t float64) {
	prob := &hs.gs.prob
	if hs.lossv.GaussNewton {
		prob.VJP(gu, gp, w, u, p, t)
		prob.VJP(hu, hp, wd, u, p, t)
		return
	}
	prob.VJPJVP(gu, gp, hu, hp, w, wd, u, ud, p, hs.vθ, t)
}
