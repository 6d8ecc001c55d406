package ode

import "math"

// HvSolver through schedules at fixed times. At a firing at t_k the state
// jumps, u⁺ = a(u⁻, p, t_k); t_k does not move with θ, so no dτ terms
// appear. The forward pass jumps the tangent,
//
//	ṡ⁺ = a_u·ṡ⁻ + a_p·v_θ,
//
// one EffectJVP with dt = 0, in the integrator's onFire hook, and records
// the state [u, ṡ, q] before the firing. The backward pass, stopping at
// t_k, applies the transpose and its derivative along (ṡ⁻, v_θ):
//
//	λ⁻ = a_uᵀλ⁺,          μ += a_pᵀλ⁺,
//	λ̇⁻ = a_uᵀλ̇⁺ + D_u,    μ̇ += a_pᵀλ̇⁺ + D_p,
//
// where (D_u, D_p) is the derivative of EffectVJP(w = λ⁺) at (u⁻, p)
// along (ṡ⁻, v_θ), taken by central differences of EffectVJP: in u with
// the step that VJPJVP's differences take (hvDiff.dir), in θ with two
// float32 steps extrapolated (paramDiff). They are exact to rounding when
// the effect is affine in (u, p), as a dose u += D is. A save time
// at t_k sees the state before the firing, as in Gradient, so its jump is
// applied after the firing's. The segment below t_k reads the recorded
// state before it (adjointPass.edge). A schedule whose times are
// parameters (TimesFrom) fires as an event does, with its τ̇
// (sens_hessian_timesfrom.go).

// hvSched is HvSolver's state for schedules: the firings of the forward
// pass, in a fireLog whose records hold the whole forward state before
// each firing.
type hvSched[T Float] struct {
	fl        *fireLog[T]
	nFired    int // fl.m at the last accepted step (checkpoints)
	lamAfter  []T // λ⁺, λ̇⁺ at a backward firing
	lamdAfter []T
	e         int                                         // the effect being differenced, for effectVJPAtW
	vjpAtW    func(gu, gp, u []T, p []float32, t float64) // effectVJPAtW
	ev        *hvEvents[T]                                // the events' scratch; nil without events
}

// schedAug returns the forward system fp with the problem's schedules,
// acting on u, for the forward integrator (the re-solves of checkpoint
// segments fire nothing: a firing ends a segment). The effects read
// hs.gs.prob when called, so HvFor's problem is the one fired.
func (hs *HvSolver[T]) schedAug(fp Problem[T]) Problem[T] {
	gs := hs.gs
	hs.sch = nil
	if len(gs.prob.Schedules)+len(gs.prob.Events) == 0 {
		return fp
	}
	n := hs.n
	fp.Schedules = make([]Schedule[T], len(gs.prob.Schedules))
	for k := range fp.Schedules {
		fp.Schedules[k].Effect = func(Y []T, p []float32, t float64) bool {
			return hs.gs.prob.Schedules[k].Effect(Y[:n:n], p, t)
		}
		hs.timesFromAug(&fp.Schedules[k], k)
	}
	hs.sch = &hvSched[T]{lamAfter: make([]T, n), lamdAfter: make([]T, n)}
	hs.sch.vjpAtW = hs.effectVJPAtW
	hs.eventAug(&fp)
	return fp
}

// schedHooks sets the hooks of the forward integrator and the backward
// pass, after build made them.
func (hs *HvSolver[T]) schedHooks() {
	sc := hs.sch
	if sc == nil {
		return
	}
	sc.fl = newFireLog(hs.gs, hs.fwd)
	hs.fwd.onFire = hs.fireForward
	hs.pass.fl = sc.fl
	hs.pass.mu = hs.pass.a[2*hs.n : 2*hs.n+hs.np]
	hs.pass.onFire = hs.fireBackward
}

// schedStart prepares the forward integrator for a pass: the schedules'
// times of the current problem and an empty log.
func (hs *HvSolver[T]) schedStart() {
	sc := hs.sch
	if sc == nil {
		return
	}
	it := hs.fwd
	for k := range it.prob.Schedules {
		it.prob.Schedules[k].Times = hs.gs.prob.Schedules[k].Times
	}
	for j := range it.prob.Events {
		it.prob.Events[j].Direction = hs.gs.prob.Events[j].Direction
	}
	sc.fl.reset()
	sc.nFired = 0
}

// fireForward is the forward integrator's onFire: it records the state
// before the firing and jumps the tangent in after, the integrator's
// state, by ṡ⁺ = a_u·ṡ⁻ + a_p·v_θ. Events, schedules whose times are
// parameters and terminating firings go to fireEventForward.
// Simultaneous firings are refused.
func (hs *HvSolver[T]) fireForward(fire []int, t float64, before, after []T, terminate bool) error {
	fl := hs.sch.fl
	it := fl.it
	if len(fire) > 1 {
		return errorf("HessianVector: %s fire together at t=%g; Hessian-vector products through simultaneous firings are not supported", it.fireNames(), t)
	}
	n := hs.n
	copy(after[n:], before[n:]) // the effect acts on u; q does not jump
	e, i := it.firingOf(fire[0])
	if e >= 0 || terminate || hs.gs.hyb.timesJ[^e] != nil {
		return hs.fireEventForward(e, i, t, before, after, terminate)
	}
	p := hs.gs.prob.P
	hs.gs.hyb.effectJVP(e, after[n:2*n], before[:n], before[n:2*n], p, hs.vθ, t, 0)
	if c := firstNonFinite(after[n : 2*n]); c >= 0 {
		return errorf("HessianVector: the tangent after %s at t=%g has %g in component %d; want finite values", it.fireNames(), t, float64(after[n+c]), c)
	}
	if fl.m == len(fl.recs) {
		fl.recs = append(fl.recs, firing[T]{})
		fl.tauBar = append(fl.tauBar, 0)
	}
	x := &fl.recs[fl.m]
	x.e, x.i, x.t, x.terminal, x.dtdp = e, i, t, false, nil
	x.before = append(x.before[:0], before...)
	fl.m++
	return nil
}

// fireBackward applies firing x's cotangents to [λ, λ̇, μ, μ̇]: the
// transpose of the jump and its derivative along (ṡ⁻, v_θ).
func (hs *HvSolver[T]) fireBackward(x *firing[T]) {
	if x.e >= 0 || x.terminal || x.dtdp != nil {
		hs.fireEventBackward(x)
		return
	}
	sc, h := hs.sch, hs.gs.hyb
	n := hs.n
	lam, lamd, mu, mud := hs.fireState()
	u, ud := x.before[:n], x.before[n:2*n]
	p := hs.gs.prob.P
	clear(lam)
	h.effectVJP(x.e, lam, mu, sc.lamAfter, u, p, x.t)
	clear(lamd)
	h.effectVJP(x.e, lamd, mud, sc.lamdAfter, u, p, x.t)
	if hs.lossv.GaussNewton {
		return // no second derivative of the effect
	}
	sc.e = x.e
	hs.fd.w = sc.lamAfter
	hs.fd.dir(lamd, mud, sc.vjpAtW, u, ud, p, nil, x.t)
	hs.paramDiff(lamd, mud, sc.vjpAtW, u, p, x.t)
	hs.fd.w = nil
}

// fireState returns λ, λ̇, μ and μ̇ in the backward state at a firing,
// keeping λ⁺ and λ̇⁺ in hs.sch.lamAfter and lamdAfter.
func (hs *HvSolver[T]) fireState() (lam, lamd, mu, mud []T) {
	n, np := hs.n, hs.np
	a := hs.pass.a
	lam, lamd = a[:n], a[n:2*n]
	mu, mud = a[2*n:2*n+np], a[2*n+np:]
	copy(hs.sch.lamAfter, lam)
	copy(hs.sch.lamdAfter, lamd)
	return lam, lamd, mu, mud
}

// paramDiff adds into hu and hp the derivative of g at (u, p) along v_θ,
// for g EffectVJP at hs.fd.w or an event's jump map (fireEventBackward):
// along each non-zero v_θ,k by central differences in float32 steps δ
// and δ/2, Richardson-extrapolated. A firing costs a few products, so the
// second pair is cheap, and it takes the parameter part from the
// truncation error of one difference in float32 steps (of order δ²,
// 1e-5 relative) down to rounding (TestHvScheduleNonlinearDose). The
// steps are exact in float32 (symStep), so for float64 states the
// rounding is float64's, of order ε/δ, and δ is 2^-10 relative, which
// balances it against the extrapolated truncation, of order δ⁴; an
// event's jump map, rational in θ through 1/ġ, needs it (its products
// are 1e-12 from symmetric, against 5e-10 with float32's ∛ε). For float32
// states δ is float32's ∛ε. The derivative along ud is the caller's.
func (hs *HvSolver[T]) paramDiff(hu, hp []T, g func(gu, gp, u []T, p []float32, t float64), u []T, p []float32, t float64) {
	d := &hs.fd
	if hs.vθ == nil {
		return
	}
	copy(d.pp, p)
	for k, x := range hs.vθ {
		if x == 0 {
			continue
		}
		// D(h) = D + c·h² + …, so D = (h1²·D(h2) − h2²·D(h1))/(h1² − h2²)
		// for the steps h1, h2 as rounded to float32.
		pk := p[k]
		δ := d.pr * max(math.Abs(float64(pk)), 1)
		hi1, lo1, h1 := symStep(pk, δ)
		hi2, lo2, h2 := symStep(pk, δ/2)
		den := h1*h1 - h2*h2
		hs.effectPDiff(hu, hp, g, u, k, hi1, lo1, t, T(float64(x)*-h2*h2/(den*h1)))
		hs.effectPDiff(hu, hp, g, u, k, hi2, lo2, t, T(float64(x)*h1*h1/(den*h2)))
	}
}

// symStep returns float32 values hi and lo about x, about δ away, and
// hi − lo. hi − x and x − lo are the same when float32 can hold x − (hi −
// x), as it can unless an exponent is far from x's: an asymmetry would
// add a term of order (hi − x) − (x − lo) that Richardson does not
// remove.
func symStep(x float32, δ float64) (hi, lo float32, step float64) {
	xf := float64(x)
	hi = float32(xf + δ)
	lo = float32(xf - (float64(hi) - xf))
	return hi, lo, float64(hi) - float64(lo)
}

// effectPDiff adds c·(g(p_k = hi) − g(p_k = lo)) into hu and hp;
// hs.fd.pp holds p.
func (hs *HvSolver[T]) effectPDiff(hu, hp []T, g func(gu, gp, u []T, p []float32, t float64), u []T, k int, hi, lo float32, t float64, c T) {
	d := &hs.fd
	pk := d.pp[k]
	d.pp[k] = hi
	clear(d.ga)
	clear(d.pa)
	g(d.ga, d.pa, u, d.pp, t)
	d.pp[k] = lo
	clear(d.gb)
	clear(d.pb)
	g(d.gb, d.pb, u, d.pp, t)
	d.pp[k] = pk
	d.accumulate(hu, hp, c)
}

// effectVJPAtW is EffectVJP of the effect sc.e at hs.fd.w, as a function
// of (u, p), for fireBackward's differences.
func (hs *HvSolver[T]) effectVJPAtW(gu, gp, u []T, p []float32, t float64) {
	hs.gs.hyb.effectVJP(hs.sch.e, gu, gp, hs.fd.w, u, p, t)
}

// schedRefresh checks that prob has the schedules the solver was made
// for and takes their derivatives again.
func (hs *HvSolver[T]) schedRefresh(prob *Problem[T]) error {
	gs := hs.gs
	if gs.hyb == nil {
		if len(prob.Schedules)+len(prob.Events) > 0 {
			return errorf("HessianVector: the problem has %d Schedules and %d Events, want none as when the solver was made", len(prob.Schedules), len(prob.Events))
		}
		return nil
	}
	return gs.hyb.refresh()
}

// schedFired reports whether a firing was recorded since the last call,
// for the checkpoints: the state after a firing is always kept.
func (hs *HvSolver[T]) schedFired() bool {
	sc := hs.sch
	if sc == nil || sc.fl == nil || sc.fl.m == sc.nFired {
		return false
	}
	sc.nFired = sc.fl.m
	return true
}
