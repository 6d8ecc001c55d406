package ode

import "math"

// The jumps of the sensitivities and of the adjoints at a firing. At an
// event time τ, defined by g(u(τ), p, τ) = 0, the state jumps from u⁻ to
// u⁺ = a(u⁻, p, τ). With ġ = ∂g/∂u·f⁻ + ∂g/∂t and f± = F(u±, p, τ), the
// implicit function theorem gives
//
//	dτ = −(∂g/∂u·δu⁻ + ∂g/∂p·δp)/ġ
//
// and the tangent after the firing, at a fixed time just after τ, is
//
//	δu⁺ = ∂a/∂u·(δu⁻ + f⁻dτ) + ∂a/∂p·δp + ∂a/∂t·dτ − f⁺dτ.
//
// A schedule entry's τ is not found by a root: dτ is zero, or ∂τ/∂p·δp
// when TimesFrom makes it a parameter. At a terminating firing the solve
// ends at τ, so the state after it is u⁺ at τ itself and the −f⁺dτ term
// goes. cotangent is the transpose of tangent.

// firing is one firing of one effect, as the gradient methods keep it.
type firing[T Float] struct {
	e        int     // the event's index, or ^k for Problem.Schedules[k]
	i        int     // a schedule's time index in Times; −1 for an event
	t        float64 // τ
	terminal bool
	before   []T // u⁻ (n)
	after    []T // u⁺
	fBefore  []T // f⁻
	fAfter   []T // f⁺
	gu, gp   []T // an event's ∂g/∂u and ∂g/∂p; empty for a schedule
	gdot     float64
	dtdp     []float64 // a schedule's ∂τ/∂p (a row of TimesFromJac); nil if fixed
	work     []T       // n, for the products
}

// prepare fills x's derivatives after x.e, x.i, x.t, x.terminal, x.before
// and x.after are set: f± by prob.F, and an event's ∂g and ġ. dtdp is the
// caller's (a row of the schedule's TimesFromJac, or nil). It fails when
// the event's condition crosses zero tangentially (ġ = 0): its time then
// has no derivative.
func (h *hybridDerivs[T]) prepare(x *firing[T], p []float32) error {
	n := len(x.before)
	x.fBefore = grow(x.fBefore, n)
	x.fAfter = grow(x.fAfter, n)
	x.work = grow(x.work, n)
	h.prob.F(x.fBefore, x.before, p, x.t)
	h.prob.F(x.fAfter, x.after, p, x.t)
	if x.e < 0 {
		x.gu, x.gp, x.gdot = x.gu[:0], x.gp[:0], 0
		return nil
	}
	x.gu = grow(x.gu, n)
	x.gp = grow(x.gp, len(p))
	clear(x.gu)
	clear(x.gp)
	gt := h.condG[x.e](x.gu, x.gp, x.before, p, x.t)
	x.gdot = dotT(x.gu, x.fBefore) + gt
	if x.gdot == 0 || math.IsNaN(x.gdot) || math.IsInf(x.gdot, 0) {
		return errorf("Problem.Events[%d] fired at t=%g where its condition's time derivative ∂g/∂u·F + ∂g/∂t = %g; want a transversal crossing (nonzero and finite), since the event time has no derivative otherwise", x.e, x.t, x.gdot)
	}
	return nil
}

// tangent writes into out the tangent after firing x of the tangent v
// before it (both n long) and the parameter tangent dp (nil means zero),
// and returns dτ. out must not alias v.
func (h *hybridDerivs[T]) tangent(x *firing[T], out, v []T, p []float32, dp []T) float64 {
	dτ := 0.0
	switch {
	case x.e >= 0:
		s := dotT(x.gu, v)
		if dp != nil {
			s += dotT(x.gp, dp)
		}
		dτ = -s / x.gdot
	case x.dtdp != nil && dp != nil:
		for k, d := range x.dtdp {
			dτ += d * float64(dp[k])
		}
	}
	w := x.work
	for i := range w {
		w[i] = v[i] + x.fBefore[i]*T(dτ)
	}
	h.effectJVP(x.e, out, x.before, w, p, dp, x.t, dτ)
	if !x.terminal {
		for i := range out {
			out[i] -= x.fAfter[i] * T(dτ)
		}
	}
	return dτ
}

// cotangent is tangent's transpose. Given λ⁺ = lamAfter, the cotangent of
// the state after firing x, and tauBar, that of τ itself (a loss of the
// event time; usually 0), it writes into lamBefore the cotangent of the
// state before, adds the parameters' cotangent into mu (nil when not
// wanted), and returns the cotangent of τ left for the caller: for a
// schedule whose time is a parameter through a TimesFrom without the row
// in x.dtdp, the caller chains it. lamBefore must not alias lamAfter.
func (h *hybridDerivs[T]) cotangent(x *firing[T], lamBefore, mu, lamAfter []T, p []float32, tauBar float64) float64 {
	clear(lamBefore)
	at := h.effectVJP(x.e, lamBefore, mu, lamAfter, x.before, p, x.t)
	// dL/dτ through w = δu⁻ + f⁻dτ, ∂a/∂t and −f⁺dτ.
	τb := tauBar + dotT(lamBefore, x.fBefore) + at
	if !x.terminal {
		τb -= dotT(lamAfter, x.fAfter)
	}
	switch {
	case x.e >= 0:
		c := T(τb / x.gdot)
		for i, g := range x.gu {
			lamBefore[i] -= c * g
		}
		if mu != nil {
			for k, g := range x.gp {
				mu[k] -= c * g
			}
		}
		return 0
	case x.dtdp != nil:
		if mu != nil {
			for k, d := range x.dtdp {
				mu[k] += T(τb * d)
			}
		}
		return 0
	}
	return τb
}

func dotT[T Float](a, b []T) float64 {
	s := 0.0
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

// grow returns s resized to n, reallocating only when it is too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
