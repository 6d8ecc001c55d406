package ode

import "math"

// HvSolver through events at state-dependent times. An event fires at τ
// where g(u(τ⁻), p, τ) = 0 and the state jumps, u⁺ = a(u⁻, p, τ); τ moves
// with θ. Write x = (u⁻, p, τ), f± = F(u±, p, τ), ġ = g_u·f⁻ + g_t.
//
// Forward. The tangent at a fixed time just after τ is the first-order
// one that Gradient uses (hybridDerivs.tangent), applied to ṡ⁻ along v_θ:
//
//	τ̇ = −(g_u·ṡ⁻ + g_p·v_θ)/ġ,
//	ṡ⁺ = a_u·(ṡ⁻ + f⁻τ̇) + a_p·v_θ + a_t·τ̇ − f⁺τ̇.
//
// The integrator finds the event on [u, ṡ, q] by its condition on u alone
// (the root function reads Y[:n]); the effect acts on u, and the onFire
// hook jumps ṡ and records the whole state before the firing.
//
// Backward. The first-order adjoint jump at the event (the one Gradient
// applies, hybridDerivs.cotangent) is a map
//
//	λ⁻ = J(λ⁺; x),   μ⁻ = μ⁺ + M(λ⁺; x),
//
// affine in λ⁺ (linear but for the running cost's jump r(u⁻) − r(u⁺),
// which enters through dL/dτ). It holds for every θ + εv, at the moving
// τ(ε): with λ(t; ε) the adjoint at a fixed time t,
//
//	λ(τ(ε)⁻; ε) = J(λ(τ(ε)⁺; ε); x(ε)),
//	x(ε) = (u(τ(ε)⁻; ε), θ + εv_θ, τ(ε)).
//
// Differentiating at ε = 0, d/dε of λ(τ(ε)±; ε) is λ̇± + λ'±τ̇, where λ̇
// is the tangent at a fixed time that the backward solve carries and
// λ'± = −F_u(u±)ᵀλ± − r_u(u±) the adjoint's rate on either side; and
// ẋ = (ṡ⁻ + f⁻τ̇, v_θ, τ̇). So
//
//	λ̇⁻ = J₁(λ̇⁺ + λ'⁺τ̇; x) + ∂ₓJ(λ⁺; x)·ẋ − λ'⁻τ̇,
//	μ̇⁻ = μ̇⁺ + M₁(λ̇⁺ + λ'⁺τ̇; x) + ∂ₓM(λ⁺; x)·ẋ + (μ'⁺ − μ'⁻)τ̇,
//
// with J₁, M₁ the linear parts (the running cost's jump left out) and
// μ'± = −F_p(u±)ᵀλ± − r_p(u±). The rates are one VJP each; J₁ and M₁ are
// one cotangent. The derivative ∂ₓ(J, M)·ẋ, which holds the second
// derivatives of the condition and the effect and the first of F, is
// taken by central differences of the whole jump map (F, CondGrad,
// the effect and EffectVJP evaluated again at the perturbed point): one
// pair along (ṡ⁻ + f⁻τ̇, τ̇) in (u⁻, τ) together with the step of
// hvDiff.dir, and Richardson-extrapolated float32 pairs per non-zero
// v_θ,k (paramDiff). The jump map is evaluated away from g = 0 there; it
// is an algebraic function of x, so that does not matter.
//
// A Gauss–Newton product applies J₁ and M₁ to λ̇⁺ alone: the transpose of
// the forward tangent's jump, without the second derivatives.
//
// Schedules whose times are parameters (TimesFrom) go through the same
// code with τ̇ from TimesFromJac (sens_hessian_timesfrom.go), and so do
// terminating firings, with the terminal jump (sens_hessian_term.go).
// Simultaneous firings are refused by fireForward, as for schedules.

// hvEvents is HvSolver's scratch for events.
type hvEvents[T Float] struct {
	y      firing[T] // the jump's data at a perturbed point
	e, i   int       // the effect being differenced and a schedule's time index
	term   bool      // whether it ended the solve
	w      []T       // λ⁺ of the jump being differenced
	lam    []T       // the jump's λ⁻ at a perturbed point
	dir    []T       // ṡ⁻ + f⁻τ̇
	neg    []T       // −λ, for the rates
	wl     []T       // λ̇⁺ + λ'⁺τ̇
	lp, lm []T       // λ'⁺, λ'⁻
	mp, mm []T       // μ'⁺, μ'⁻
	tj     []float64 // a TimesFromJac at a perturbed θ
	eu     []T       // End's state in terminalDir's differences
	edl    []T       // and its gradient there
	jumpAt func(gu, gp, u []T, p []float32, t float64)
}

// eventAug adds the problem's events to the forward system fp of
// [u, ṡ, q]: their conditions and effects read u alone. They read
// hs.gs.prob when called, so HvFor's problem is the one fired;
// schedStart sets their directions. It makes the events' scratch, which
// schedules whose times are parameters use too.
func (hs *HvSolver[T]) eventAug(fp *Problem[T]) {
	gs := hs.gs
	n, np := hs.n, hs.np
	fp.Events = nil
	if len(gs.prob.Events) > 0 {
		fp.Events = stateEvents(gs, n)
	}
	ev := &hvEvents[T]{lam: make([]T, n), dir: make([]T, n), neg: make([]T, n), wl: make([]T, n),
		lp: make([]T, n), lm: make([]T, n), mp: make([]T, np), mm: make([]T, np)}
	ev.jumpAt = hs.eventJumpAt
	hs.sch.ev = ev
}

// stateEvents returns gs.prob's events for an augmented system whose
// first n components are the state: their conditions and effects read
// and change Y[:n] alone, and read gs.prob when called. The directions
// are the caller's to set.
func stateEvents[T Float](gs *GradientSolver[T], n int) []Event[T] {
	evs := make([]Event[T], len(gs.prob.Events))
	for j := range evs {
		evs[j] = Event[T]{
			Cond: func(Y []T, p []float32, t float64) float64 {
				return gs.prob.Events[j].cond(Y[:n:n], p, t)
			},
			Effect: func(Y []T, p []float32, t float64) bool {
				return gs.prob.Events[j].apply(Y[:n:n], p, t)
			},
		}
	}
	return evs
}

// eventView is firing x with its state before cut to u⁻: HvSolver's
// records hold the whole [u, ṡ, q] there, for adjointPass.edge.
func (hs *HvSolver[T]) eventView(x *firing[T]) firing[T] {
	v := *x
	v.before = x.before[:hs.n:hs.n]
	return v
}

// fireEventForward records the firing of event e at t, or of schedule ^e's
// time i when TimesFrom makes it a parameter, and jumps the tangent in
// after by the first-order map (hybridDerivs.tangent).
func (hs *HvSolver[T]) fireEventForward(e, i int, t float64, before, after []T, terminate bool) error {
	fl := hs.sch.fl
	n := hs.n
	if fl.m == len(fl.recs) {
		fl.recs = append(fl.recs, firing[T]{})
		fl.tauBar = append(fl.tauBar, 0)
	}
	x := &fl.recs[fl.m]
	x.e, x.i, x.t, x.terminal, x.dtdp = e, i, t, terminate, hs.timesRow(e, i)
	x.before = append(x.before[:0], before...)
	x.after = append(x.after[:0], after[:n]...)
	p := hs.gs.prob.P
	v := hs.eventView(x)
	err := hs.gs.hyb.prepare(&v, p)
	v.before = x.before
	*x = v
	if err != nil {
		return errorf("HessianVector: %w", err)
	}
	v = hs.eventView(x)
	hs.gs.hyb.tangent(&v, after[n:2*n], before[n:2*n], p, hs.vθ)
	if c := firstNonFinite(after[n : 2*n]); c >= 0 {
		return errorf("HessianVector: the tangent after %s at t=%g has %g in component %d; want finite values", fl.it.fireNames(), t, float64(after[n+c]), c)
	}
	fl.m++
	if terminate {
		hs.terminalStep()
	}
	return nil
}

// fireEventBackward applies event firing x's jump to [λ, λ̇, μ, μ̇]; the
// header comment derives it.
func (hs *HvSolver[T]) fireEventBackward(x *firing[T]) {
	sc, h, ev := hs.sch, hs.gs.hyb, hs.sch.ev
	lam, lamd, mu, mud := hs.fireState()
	p := hs.gs.prob.P
	v := hs.eventView(x)
	u, ud := x.before[:hs.n], x.before[hs.n:2*hs.n]
	tb := hs.jumpTauBar(x.terminal, u, x.after, p, x.t)
	if hs.lossv.GaussNewton {
		h.cotangent(&v, lam, mu, sc.lamAfter, p, tb)
		w, tbd := sc.lamdAfter, 0.0
		if x.terminal {
			w, tbd = ev.wl, hs.terminalDir(ev.wl, sc.lamdAfter, x, hs.tauDot(x, ud))
		}
		h.cotangent(&v, lamd, mud, w, p, tbd)
		return
	}
	τd := hs.tauDot(x, ud)
	hs.adjointRate(ev.lp, ev.mp, sc.lamAfter, x.after, p, x.t)
	h.cotangent(&v, lam, mu, sc.lamAfter, p, tb)
	hs.adjointRate(ev.lm, ev.mm, lam, u, p, x.t)
	tbd := 0.0
	if x.terminal {
		// λ⁺ and μ⁺ are the solve's end values, not a trajectory's.
		tbd = hs.terminalDir(ev.wl, sc.lamdAfter, x, τd)
		clear(ev.mp)
	} else {
		for i, l := range sc.lamdAfter {
			ev.wl[i] = l + ev.lp[i]*T(τd)
		}
	}
	h.cotangent(&v, lamd, mud, ev.wl, p, tbd)
	hs.jumpDir(lamd, mud, x, τd)
	for i := range lamd {
		lamd[i] -= ev.lm[i] * T(τd)
	}
	for k := range mud {
		mud[k] += (ev.mp[k] - ev.mm[k]) * T(τd)
	}
}

// jumpDir adds into hu and hp the derivative of the jump map (J, M) at
// λ⁺ = hs.sch.lamAfter along ẋ = (ṡ⁻ + f⁻τ̇, v_θ, τ̇), by central
// differences.
func (hs *HvSolver[T]) jumpDir(hu, hp []T, x *firing[T], τd float64) {
	ev := hs.sch.ev
	n := hs.n
	u, ud := x.before[:n], x.before[n:2*n]
	for i := range ev.dir {
		ev.dir[i] = ud[i] + x.fBefore[i]*T(τd)
	}
	ev.e, ev.i, ev.term, ev.w = x.e, x.i, x.terminal, hs.sch.lamAfter
	p, t := hs.gs.prob.P, x.t
	if vn := max(normInf(ev.dir), math.Abs(τd)); vn > 0 {
		// Central differences with steps s and s/2, extrapolated:
		// D = (4·D(s/2) − D(s))/3 leaves an error of order s⁴.
		s := jumpStep * max(1, normInf(u), math.Abs(t)) / vn
		hs.jumpPair(hu, hp, u, p, t, s, τd, T(-1/(6*s)))
		hs.jumpPair(hu, hp, u, p, t, s/2, τd, T(4/(3*s)))
	}
	hs.paramDiff(hu, hp, ev.jumpAt, u, p, t)
	ev.w = nil
}

// jumpStep is the relative step of jumpDir's differences in (u⁻, τ): about
// ε^(1/5), which balances the rounding, of order ε/step, against the
// extrapolated truncation, of order step⁴.
const jumpStep = 0x1p-10

// jumpPair adds c·(g(u + s·dir, t + s·τ̇) − g(u − s·dir, t − s·τ̇)) into
// hu and hp, for g the jump map at λ⁺ = ev.w and dir = ev.dir.
func (hs *HvSolver[T]) jumpPair(hu, hp, u []T, p []float32, t, s, τd float64, c T) {
	d, ev := &hs.fd, hs.sch.ev
	for i, xi := range u {
		d.up[i], d.um[i] = xi+T(s)*ev.dir[i], xi-T(s)*ev.dir[i]
	}
	clear(d.ga)
	clear(d.pa)
	ev.jumpAt(d.ga, d.pa, d.up, p, t+s*τd)
	clear(d.gb)
	clear(d.pb)
	ev.jumpAt(d.gb, d.pb, d.um, p, t-s*τd)
	d.accumulate(hu, hp, c)
}

// eventJumpAt adds the first-order jump of effect ev.e at λ⁺ = ev.w, at
// the state before u, p and time t, into gu (λ⁻) and gp (M): the
// effect's state after, f±, the condition's gradient or the row of
// TimesFromJac, and the running cost's jump are taken at that point.
func (hs *HvSolver[T]) eventJumpAt(gu, gp, u []T, p []float32, t float64) {
	ev, h := hs.sch.ev, hs.gs.hyb
	y := &ev.y
	y.e, y.i, y.t, y.terminal, y.dtdp = ev.e, ev.i, t, ev.term, hs.timesRowAt(ev.e, ev.i, p)
	y.before = append(y.before[:0], u...)
	y.after = append(y.after[:0], u...)
	hs.applyAt(ev.e, y.after, p, t)
	_ = h.prepare(y, p) // ġ = 0 only at a tangential crossing, refused forwards
	tb := hs.jumpTauBar(ev.term, u, y.after, p, t)
	h.cotangent(y, ev.lam, gp, ev.w, p, tb)
	for i, v := range ev.lam {
		gu[i] += v
	}
}

// runningJump is the running cost's jump at a firing, r(u⁻) − r(u⁺), its
// contribution to dL/dτ; 0 without a running cost.
func (hs *HvSolver[T]) runningJump(before, after []T, p []float32, t float64) float64 {
	if !hs.quad {
		return 0
	}
	r := hs.gs.loss.Running
	return r(before, p, t) - r(after, p, t)
}

// adjointRate writes the adjoint's rates at (λ, u): dl = −F_uᵀλ − r_u and
// dm = −F_pᵀλ − r_p.
func (hs *HvSolver[T]) adjointRate(dl, dm, lam, u []T, p []float32, t float64) {
	ev := hs.sch.ev
	for i, l := range lam {
		ev.neg[i] = -l
	}
	clear(dl)
	clear(dm)
	hs.gs.prob.VJP(dl, dm, ev.neg, u, p, t)
	if !hs.quad {
		return
	}
	clear(hs.gu)
	clear(hs.gp)
	hs.gs.loss.RunningGradient(hs.gu, hs.gp, u, p, t)
	for i, g := range hs.gu {
		dl[i] -= g
	}
	for k, g := range hs.gp {
		dm[k] -= g
	}
}
