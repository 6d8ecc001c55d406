package ode

// HvSolver through schedules whose times are parameters: a TimesFrom
// schedule fires its i-th entry at τ = ts_i(θ), and the state jumps,
// u⁺ = a(u⁻, p, τ). It is an event whose time comes from θ alone instead
// of a root, so the derivation of sens_hessian_events.go applies with
// two changes.
//
// The time's tangent is a row of TimesFromJac instead of the implicit
// function theorem's:
//
//	τ̇ = ∂ts_i/∂θ·v_θ,
//
// and the forward tangent jumps by the same map as an event's,
//
//	ṡ⁺ = a_u·(ṡ⁻ + f⁻τ̇) + a_p·v_θ + a_t·τ̇ − f⁺τ̇,
//
// hybridDerivs.tangent with the firing's dtdp.
//
// The first-order jump map (hybridDerivs.cotangent with dtdp) is, with
// x = (u⁻, p, τ) and c(θ) = ∂ts_i/∂θ,
//
//	λ⁻ = J(λ⁺; x) = a_uᵀλ⁺,
//	M(λ⁺; x) = a_pᵀλ⁺ + τ̄(λ⁺; x)·c(θ),
//	τ̄ = λ⁻·f⁻ + λ⁺·a_t − λ⁺·f⁺ + r(u⁻) − r(u⁺),
//
// τ̄ being dL/dτ. λ⁻ has no τ̄ term, as an event's has through
// −τ̄/ġ·∂g/∂u: τ does not move with u⁻. The identity
// λ(τ(ε)⁻; ε) = J(λ(τ(ε)⁺; ε); x(ε)), and M's for μ, hold for every
// θ + εv_θ at the moving τ(ε) = ts_i(θ + εv_θ), as for an event, so
// differentiating at ε = 0 gives the events' jumps of λ̇ and μ̇ word for
// word:
//
//	λ̇⁻ = J₁(λ̇⁺ + λ'⁺τ̇; x) + ∂ₓJ(λ⁺; x)·ẋ − λ'⁻τ̇,
//	μ̇⁻ = μ̇⁺ + M₁(λ̇⁺ + λ'⁺τ̇; x) + ∂ₓM(λ⁺; x)·ẋ + (μ'⁺ − μ'⁻)τ̇,
//
// ẋ = (ṡ⁻ + f⁻τ̇, v_θ, τ̇). The second derivatives of ts_i(θ) enter
// through M's c(θ): ∂ₓM·ẋ holds τ̄·(∂c/∂θ·v_θ), the curvature of the dose
// time. jumpDir takes ∂ₓ(J, M)·ẋ by central differences of the whole
// jump map, as for events: in (u⁻, τ) at fixed θ with c(θ) from the
// firing, and in each θ_k with c evaluated again by TimesFromJac at the
// perturbed θ, so that the differences of TimesFromJac give ∂c/∂θ
// (exact to rounding when ts is affine in θ, as when it reads a dose
// time from θ). With FiniteDiff and no TimesFromJac, c is itself a
// difference of TimesFrom, and its derivative a difference of those.
//
// A Gauss–Newton product applies J₁ and M₁ to λ̇⁺ alone, as for events.

// timesFromAug gives the forward system's schedule k the times of the
// current problem's: those TimesFrom computes when it is set, else
// Times, which schedStart copies. It reads hs.gs.prob when called, so
// HvFor's problem is the one solved.
func (hs *HvSolver[T]) timesFromAug(s *Schedule[T], k int) {
	s.Times = hs.gs.prob.Schedules[k].Times
	s.TimesFrom = func(ts []float64, p []float32) {
		if from := hs.gs.prob.Schedules[k].TimesFrom; from != nil {
			from(ts, p)
		}
	}
}

// timesRow returns the row of schedule ^e's TimesFromJac for its time i
// at this pass's parameters, evaluated once a pass into the log's tj, or
// nil for an event or a schedule at fixed times.
func (hs *HvSolver[T]) timesRow(e, i int) []float64 {
	if e >= 0 || hs.gs.hyb.timesJ[^e] == nil {
		return nil
	}
	fl, k := hs.sch.fl, ^e
	if !fl.tjOK[k] {
		fl.tj[k] = hs.timesJac(fl.tj[k], k, hs.gs.prob.P)
		fl.tjOK[k] = true
	}
	return fl.tj[k][i*hs.np : (i+1)*hs.np : (i+1)*hs.np]
}

// timesRowAt returns the row of schedule ^e's TimesFromJac for its time
// i at p, evaluated into the events' scratch: the jump map's c(θ) at a
// perturbed θ. It is nil for an event or a schedule at fixed times.
func (hs *HvSolver[T]) timesRowAt(e, i int, p []float32) []float64 {
	if e >= 0 || hs.gs.hyb.timesJ[^e] == nil {
		return nil
	}
	ev := hs.sch.ev
	ev.tj = hs.timesJac(ev.tj, ^e, p)
	return ev.tj[i*hs.np : (i+1)*hs.np : (i+1)*hs.np]
}

// timesJac writes schedule k's TimesFromJac at p into J, grown to fit,
// and returns it.
func (hs *HvSolver[T]) timesJac(J []float64, k int, p []float32) []float64 {
	J = grow(J, len(hs.gs.prob.Schedules[k].Times)*hs.np)
	hs.gs.hyb.timesJ[k](J, p)
	return J
}

// tauDot is τ̇ at firing x along (ṡ⁻, v_θ): −(g_u·ṡ⁻ + g_p·v_θ)/ġ for an
// event, ∂ts_i/∂θ·v_θ for a schedule whose times are parameters.
func (hs *HvSolver[T]) tauDot(x *firing[T], ud []T) float64 {
	s := 0.0
	if x.e < 0 {
		if hs.vθ != nil {
			for k, d := range x.dtdp {
				s += d * float64(hs.vθ[k])
			}
		}
		return s
	}
	s = dotT(x.gu, ud)
	if hs.vθ != nil {
		s += dotT(x.gp, hs.vθ)
	}
	return -s / x.gdot
}

// applyAt applies effect e (an event's index, or ^k for a schedule) to u
// at (p, t).
func (hs *HvSolver[T]) applyAt(e int, u []T, p []float32, t float64) {
	prob := &hs.gs.prob
	if e >= 0 {
		prob.Events[e].apply(u, p, t)
		return
	}
	prob.Schedules[^e].Effect(u, p, t)
}
