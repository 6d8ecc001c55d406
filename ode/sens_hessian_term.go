package ode

import "math"

// HvSolver through a firing that ends the solve: an event, or a schedule
// entry at a fixed time or one from TimesFrom, whose effect returns true
// at τ. The loss then reads the saves before τ, the running cost's
// integral up to τ and Loss.End at (τ, u⁺), u⁺ = a(u⁻, p, τ) the state
// the solve ends with.
//
// The first-order jump is the terminal one (hybridDerivs.cotangent with
// x.terminal): no −f⁺τ̇ forwards, no −λ⁺·f⁺ in dL/dτ, and dL/dτ takes
// the running cost's r(u⁻) alone and End's ∂End/∂t,
//
//	λ⁻ = J(λ⁺, τ̄ₑ; x),  μ⁻ = M(λ⁺, τ̄ₑ; x),
//	λ⁺ = ∂End/∂u(τ, u⁺),  τ̄ₑ = ∂End/∂t(τ, u⁺),
//
// with μ⁺ = 0, J and M linear in (λ⁺, τ̄ₑ) but for r(u⁻)'s term.
// Differentiating along θ + εv_θ as in sens_hessian_events.go, λ⁺ and τ̄ₑ
// are now the loss's values at the moving end, not the values of an
// adjoint trajectory there, so λ̇⁺ + λ'⁺τ̇ becomes their total derivative
// and μ'⁺ goes:
//
//	λ̇⁻ = J₁(λ⁺˙, τ̄ₑ˙; x) + ∂ₓJ(λ⁺, τ̄ₑ; x)·ẋ − λ'⁻τ̇,
//	μ̇⁻ = M₁(λ⁺˙, τ̄ₑ˙; x) + ∂ₓM(λ⁺, τ̄ₑ; x)·ẋ − μ'⁻τ̇,
//
// where (λ⁺˙, τ̄ₑ˙) is the derivative of End's gradient (∂End/∂u,
// ∂End/∂t) along (u̇⁺, τ̇), u̇⁺ = a_u·(ṡ⁻ + f⁻τ̇) + a_p·v_θ + a_t·τ̇ the
// forward tangent of the end state (the terminal tangent, in the forward
// integrator's state at the end). It is taken by Richardson-extrapolated
// central differences of Loss.End, which give its mixed derivatives in
// (u, t) that EndHv does not. Without End both are zero. The save times
// at τ see the state before the firing and add their jumps after it, as
// elsewhere.

// jumpTauBar is the part of dL/dτ at a firing that its jump map does not
// hold: the running cost's jump r(u⁻) − r(u⁺), or at a terminating
// firing r(u⁻) and End's ∂End/∂t.
func (hs *HvSolver[T]) jumpTauBar(terminal bool, before, after []T, p []float32, t float64) float64 {
	if !terminal {
		return hs.runningJump(before, after, p, t)
	}
	tb := 0.0
	if hs.quad {
		tb = hs.gs.loss.Running(before, p, t)
	}
	if hs.gs.loss.End != nil {
		tb += hs.gs.endDt
	}
	return tb
}

// terminalDir writes into wl λ̇⁺ (lamdAfter) plus the derivative of End's
// ∂End/∂u along (u̇⁺, τ̇) at the end of the solve, and returns that of
// ∂End/∂t; without End, lamdAfter and 0.
func (hs *HvSolver[T]) terminalDir(wl, lamdAfter []T, x *firing[T], τd float64) float64 {
	copy(wl, lamdAfter)
	gs := hs.gs
	if gs.loss.End == nil {
		return 0
	}
	ev, n := hs.sch.ev, hs.n
	ev.eu = grow(ev.eu, n)
	ev.edl = grow(ev.edl, n)
	u, ud := gs.us[gs.endK], hs.fwd.u[n:2*n]
	vn := max(normInf(ud), math.Abs(τd))
	if vn == 0 {
		return 0
	}
	// Steps s and s/2, extrapolated as in jumpDir.
	s := jumpStep * max(1, normInf(u), math.Abs(x.t)) / vn
	dt := hs.endPair(wl, u, ud, x.t, s, τd, -1/(6*s))
	dt += hs.endPair(wl, u, ud, x.t, s/2, τd, 4/(3*s))
	return dt
}

// endPair adds c·(∂End/∂u(t + sτ̇, u + s·ud) − ∂End/∂u(t − sτ̇, u − s·ud))
// into wl and returns c times the same difference of ∂End/∂t.
func (hs *HvSolver[T]) endPair(wl, u, ud []T, t, s, τd, c float64) float64 {
	ev, end := hs.sch.ev, hs.gs.loss.End
	dt := 0.0
	for _, sg := range [2]float64{1, -1} {
		for i, x := range u {
			ev.eu[i] = x + T(sg*s)*ud[i]
		}
		clear(ev.edl)
		_, d := end(t+sg*s*τd, ev.eu, ev.edl)
		for i, g := range ev.edl {
			wl[i] += T(sg*c) * g
		}
		dt += sg * c * d
	}
	return dt
}

// terminalStep records the step cut short by a terminating firing for
// the checkpoints: the solve ends without onAccept, and that step ends
// the last segment.
func (hs *HvSolver[T]) terminalStep() {
	if it := hs.fwd; hs.cache != nil && it.h != 0 {
		hs.tr.steps = append(hs.tr.steps, it.tPrev, it.h, it.t)
	}
}
