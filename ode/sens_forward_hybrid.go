package ode

import "fmt"

// ForwardSensitivity through events and schedules. The augmented system
// Y = [u | s_0 … s_{m−1} | q | q_0 … q_{m−1}] gets one event per event of
// the problem and one schedule per schedule: their conditions read Y[:n]
// and their effects change Y[:n] only, as the problem's do. The jump of
// the sensitivities is applied by the integrator's onFire hook, not by
// the effects: the integrator calls effects that fire together twice on
// copies (to check that their order does not matter), while the hook runs
// once, after the checks, with the state before and after the firing, and
// knows whether it terminates. The hook writes the jumped columns into
// after[n:], which is the integrator's state: the method restarts from it,
// and the saves after the firing see it.
//
// At a firing at τ every column takes hybridDerivs.tangent of its value
// before, with dp = e_k for parameter k and dp = nil for a column of u0
// (with U0From, the parameter columns hold the sensitivities at fixed u0
// and GradientFor chains dL/du0 through U0FromVJP afterwards, so the jump
// is the same). The running cost's quadratures jump by
// (g(u⁻, p, τ) − g(u⁺, p, τ))·dτ_k, since the integrand switches at τ;
// at a terminating firing by g(u⁻, p, τ)·dτ_k, the end of the integral.

// hybridForward is the state of ForwardSensitivity's events and schedules.
type hybridForward[T Float] struct {
	x          firing[T]   // the firing being applied, reused
	tj         [][]float64 // each schedule's TimesFromJac, len(Times)·np; nil for fixed times
	terminated bool        // the solve ended at a terminating firing
	tEnd       float64     // its time
	dtau       []float64   // its dτ per column, for Loss.End
}

// hybridAug gives the augmented problem aug the events and schedules of
// the problem, reading the problem through fs.gs.prob when called, so
// that GradientFor's problem is the one seen.
func (fs *forwardSens[T]) hybridAug(aug *Problem[T]) {
	prob := &fs.gs.prob
	if len(prob.Events)+len(prob.Schedules) == 0 {
		return
	}
	n := fs.n
	fs.hf = &hybridForward[T]{tj: make([][]float64, len(prob.Schedules)), dtau: make([]float64, fs.m)}
	aug.Events = stateEvents(fs.gs, n)
	aug.Schedules = make([]Schedule[T], len(prob.Schedules))
	for k := range aug.Schedules {
		aug.Schedules[k].Effect = func(Y []T, p []float32, t float64) bool {
			return fs.gs.prob.Schedules[k].Effect(Y[:n:n], p, t)
		}
	}
}

// hybridSync copies the problem's directions and schedule times into the
// integrator's events and schedules, fills the schedules' TimesFromJac at
// the current parameters, and sets the firing hook. It allocates only on
// the first run.
func (fs *forwardSens[T]) hybridSync() {
	hf, it, prob := fs.hf, fs.it, &fs.gs.prob
	if hf == nil {
		return
	}
	for j := range prob.Events {
		it.prob.Events[j].Direction = prob.Events[j].Direction
	}
	for k := range prob.Schedules {
		s, a := &prob.Schedules[k], &it.prob.Schedules[k]
		a.Times, a.TimesFrom = s.Times, s.TimesFrom
		tj := fs.gs.hyb.timesJ[k]
		if tj == nil {
			hf.tj[k] = hf.tj[k][:0]
			continue
		}
		hf.tj[k] = grow(hf.tj[k], len(s.Times)*fs.np)
		clear(hf.tj[k])
		tj(hf.tj[k], prob.P)
	}
	hf.terminated = false
	if it.onFire == nil {
		it.onFire = fs.onFire
	}
}

// onFire applies the jump of the sensitivities and quadratures at a firing.
// before and after are the augmented states; after is it.u.
func (fs *forwardSens[T]) onFire(fire []int, t float64, before, after []T, terminate bool) error {
	it, hf, h := fs.it, fs.hf, fs.gs.hyb
	if len(fire) > 1 {
		return errorf("%s fire together at t=%g; gradients through simultaneous firings are not supported", it.fireNames(), t)
	}
	n, m, np := fs.n, fs.m, fs.np
	p := it.prob.P
	x := &hf.x
	x.e, x.i = it.firingOf(fire[0])
	x.t, x.terminal = t, terminate
	x.before, x.after = before[:n:n], after[:n:n]
	x.dtdp = nil
	if x.e < 0 {
		if tj := hf.tj[^x.e]; len(tj) > 0 {
			x.dtdp = tj[x.i*np : (x.i+1)*np : (x.i+1)*np]
		}
	}
	if err := h.prepare(x, p); err != nil {
		return err
	}
	var dg float64 // the running cost's jump g(u⁻) − g(u⁺)
	q := n * (1 + m)
	if fs.quad {
		l := fs.gs.loss
		dg = l.Running(x.before, p, t)
		if !terminate {
			dg -= l.Running(x.after, p, t)
		}
	}
	dp := fs.dp // zero between uses
	for k, lo := 0, n; k < m; k, lo = k+1, lo+n {
		v, out := before[lo:lo+n:lo+n], after[lo:lo+n:lo+n]
		var dτ float64
		if k < np {
			dp[k] = 1
			dτ = h.tangent(x, out, v, p, dp)
			dp[k] = 0
		} else {
			dτ = h.tangent(x, out, v, p, nil)
		}
		if fs.quad {
			after[q+1+k] = before[q+1+k] + T(dg*dτ)
		}
		if terminate {
			hf.dtau[k] = dτ
		}
	}
	if c := firstNonFinite(after[n:]); c >= 0 {
		return errorf("the sensitivities after %s at t=%g have %g in component %d; want finite values", it.fireNames(), t, float64(after[n+c]), n+c)
	}
	if terminate {
		hf.terminated, hf.tEnd = true, t
	}
	return nil
}

// hybridEnd checks the save times of a solve that a firing terminated and
// drops the terminal state from the saved ones. Loss.At times after the
// terminal time are not reached: an error names them. Loss.End's save at
// T1 is not one of them: End sees the terminal state (takeSaved).
func (fs *forwardSens[T]) hybridEnd() error {
	hf, it, at := fs.hf, fs.it, fs.gs.at
	if hf == nil || !hf.terminated {
		return nil
	}
	want := len(at) // the save times to reach: all but End's at T1, the last
	if fs.gs.endK >= 0 {
		want--
	}
	if it.saveIdx < want {
		first, last := it.sortedAt(at, it.saveIdx), it.sortedAt(at, want-1)
		times := fmt.Sprintf("%g", first)
		if k := want - it.saveIdx; k > 1 {
			times = fmt.Sprintf("%d times from %g to %g", k, first, last)
		}
		return errorf("Gradient: a terminating firing ended the solve at t=%g, before Loss.At %s; want save times the solve reaches", hf.tEnd, times)
	}
	it.outT = it.outT[:len(at)]
	it.outU = it.outU[:len(at)*it.n]
	return nil
}
