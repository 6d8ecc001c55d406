package ode

import (
	"math"
	"strconv"
)

// The derivatives of events and schedules that the gradient methods need:
// the user's CondGrad, EffectJVP, EffectVJP and TimesFromJac, or central
// differences of Cond, Effect and TimesFrom when the sensitivity method's
// FiniteDiff is set. An effect is named as Integrator.fire names it: an
// event's index j ≥ 0, or ^k for Problem.Schedules[k].

// hybridDerivs evaluates those derivatives for one problem. It keeps its
// scratch, so warm calls allocate nothing; it is not safe for concurrent
// use.
type hybridDerivs[T Float] struct {
	prob   *Problem[T]
	fd     bool
	sens   string
	condG  []func(du, dp []T, u []T, p []float32, t float64) float64
	effJ   []func(jv, u, v []T, p []float32, dp []T, t, dt float64) // events, then schedules
	effV   []func(du, dp, w, u []T, p []float32, t float64) float64
	timesJ []func(J []float64, p []float32) // per schedule; nil for fixed times

	// the differences, made once when fd is set
	fdCondG  []func(du, dp []T, u []T, p []float32, t float64) float64
	fdEffJ   []func(jv, u, v []T, p []float32, dp []T, t, dt float64)
	fdEffV   []func(du, dp, w, u []T, p []float32, t float64) float64
	fdTimesJ []func(J []float64, p []float32)
}

// newHybridDerivs gathers the derivatives of prob's events and schedules.
// A missing one is taken by finite differences when fd is set, else it is
// an error naming it. sens names the sensitivity method, for the error.
// The difference closures read *prob when called, so refresh can take a
// new problem's functions without allocating.
func newHybridDerivs[T Float](prob *Problem[T], fd bool, sens string) (*hybridDerivs[T], error) {
	ne, ns := len(prob.Events), len(prob.Schedules)
	h := &hybridDerivs[T]{prob: prob, fd: fd, sens: sens,
		condG:  make([]func(du, dp []T, u []T, p []float32, t float64) float64, ne),
		effJ:   make([]func(jv, u, v []T, p []float32, dp []T, t, dt float64), ne+ns),
		effV:   make([]func(du, dp, w, u []T, p []float32, t float64) float64, ne+ns),
		timesJ: make([]func(J []float64, p []float32), ns)}
	if fd {
		h.fdCondG = make([]func(du, dp []T, u []T, p []float32, t float64) float64, ne)
		h.fdEffJ = make([]func(jv, u, v []T, p []float32, dp []T, t, dt float64), ne+ns)
		h.fdEffV = make([]func(du, dp, w, u []T, p []float32, t float64) float64, ne+ns)
		h.fdTimesJ = make([]func(J []float64, p []float32), ns)
		for j := range ne {
			h.fdCondG[j] = fdCondGrad(func(u []T, p []float32, t float64) float64 { return h.prob.Events[j].cond(u, p, t) })
			h.fdEffJ[j], h.fdEffV[j] = fdEffect(func(u []T, p []float32, t float64) { h.prob.Events[j].apply(u, p, t) })
		}
		for k := range ns {
			h.fdEffJ[ne+k], h.fdEffV[ne+k] = fdEffect(func(u []T, p []float32, t float64) { h.prob.Schedules[k].Effect(u, p, t) })
			h.fdTimesJ[k] = fdTimesJac(func(ts []float64, p []float32) { h.prob.Schedules[k].TimesFrom(ts, p) }, len(prob.Schedules[k].Times))
		}
	}
	return h, h.refresh()
}

// refresh takes the derivatives from h.prob's events and schedules again,
// after the problem changed (GradientSolver.GradientFor). The numbers of
// events, schedules and schedule times must be those h was made for.
func (h *hybridDerivs[T]) refresh() error {
	prob, fd := h.prob, h.fd
	missing := func(what string) error {
		return errorf("%s: %s is nil; want it (odead builds the derivatives of conditions and effects written with ad ops), or set %s's FiniteDiff to take it by central differences", h.sens, what, h.sens)
	}
	ne := len(prob.Events)
	if ne != len(h.condG) || ne+len(prob.Schedules) != len(h.effJ) {
		return errorf("Gradient: the problem has %d Events and %d Schedules, want %d and %d as when the solver was made", ne, len(prob.Schedules), len(h.condG), len(h.effJ)-len(h.condG))
	}
	for j := range prob.Events {
		ev := &prob.Events[j]
		name := "Problem.Events[" + strconv.Itoa(j) + "]."
		switch {
		case ev.CondGrad != nil:
			h.condG[j] = ev.CondGrad
		case fd:
			h.condG[j] = h.fdCondG[j]
		default:
			return missing(name + "CondGrad")
		}
		if ev.Effect == nil && ev.Affect == nil {
			h.effJ[j], h.effV[j] = identityJVP[T], identityVJP[T]
			continue
		}
		if err := h.effectPair(j, ev.EffectJVP, ev.EffectVJP, name, missing); err != nil {
			return err
		}
	}
	for k := range prob.Schedules {
		s := &prob.Schedules[k]
		name := "Problem.Schedules[" + strconv.Itoa(k) + "]."
		if err := h.effectPair(ne+k, s.EffectJVP, s.EffectVJP, name, missing); err != nil {
			return err
		}
		switch {
		case s.TimesFrom == nil:
			h.timesJ[k] = nil
		case s.TimesFromJac != nil:
			h.timesJ[k] = s.TimesFromJac
		case fd:
			h.timesJ[k] = h.fdTimesJ[k]
		default:
			return missing(name + "TimesFromJac")
		}
	}
	return nil
}

// effectPair sets slot i's products: the user's, or differences when fd
// is set. Without fd both must be given: a gradient method uses one or
// the other.
func (h *hybridDerivs[T]) effectPair(i int, jvp func(jv, u, v []T, p []float32, dp []T, t, dt float64),
	vjp func(du, dp, w, u []T, p []float32, t float64) float64, name string, missing func(string) error) error {
	h.effJ[i], h.effV[i] = jvp, vjp
	if h.fd {
		if jvp == nil {
			h.effJ[i] = h.fdEffJ[i]
		}
		if vjp == nil {
			h.effV[i] = h.fdEffV[i]
		}
		return nil
	}
	switch {
	case jvp == nil:
		return missing(name + "EffectJVP")
	case vjp == nil:
		return missing(name + "EffectVJP")
	}
	return nil
}

// effectJVP is the JVP of effect e (an event's index, or ^k for a schedule).
func (h *hybridDerivs[T]) effectJVP(e int, jv, u, v []T, p []float32, dp []T, t, dt float64) {
	h.effJ[h.slot(e)](jv, u, v, p, dp, t, dt)
}

// effectVJP is the VJP of effect e.
func (h *hybridDerivs[T]) effectVJP(e int, du, dp, w, u []T, p []float32, t float64) float64 {
	return h.effV[h.slot(e)](du, dp, w, u, p, t)
}

func (h *hybridDerivs[T]) slot(e int) int {
	if e >= 0 {
		return e
	}
	return len(h.prob.Events) + ^e
}

func identityJVP[T Float](jv, u, v []T, p []float32, dp []T, t, dt float64) { copy(jv, v) }

func identityVJP[T Float](du, dp, w, u []T, p []float32, t float64) float64 {
	addTo(du, w)
	return 0
}

// timeStep is the central difference step in t: ∛ε·max(|t|, 1).
func timeStep(t float64) float64 { return math.Cbrt(0x1p-52) * max(math.Abs(t), 1) }

// fdCondGrad is the gradient of the condition cond by central
// differences: 2·(n + np) + 2 evaluations, with finiteDiffVJP's steps in u
// and p.
func fdCondGrad[T Float](cond func(u []T, p []float32, t float64) float64) func(du, dp []T, u []T, p []float32, t float64) float64 {
	g := func(out, u []T, p []float32, t float64) { out[0] = T(cond(u, p, t)) }
	vjp := finiteDiffVJP(g, nil)
	one := []T{1}
	return func(du, dp []T, u []T, p []float32, t float64) float64 {
		vjp(du, dp, one, u, p, t)
		d := timeStep(t)
		hi, lo := t+d, t-d
		return (cond(u, p, hi) - cond(u, p, lo)) / (hi - lo)
	}
}

// fdEffect is the pair of products of an effect by central differences:
// finiteDiffJVP's and finiteDiffVJP's of the map u ↦ a(u, p, t), plus a
// difference in t. The effect runs on copies of u; p is never written.
func fdEffect[T Float](apply func(u []T, p []float32, t float64)) (
	func(jv, u, v []T, p []float32, dp []T, t, dt float64), func(du, dp, w, u []T, p []float32, t float64) float64) {
	a := func(out, u []T, p []float32, t float64) {
		copy(out, u)
		apply(out, p, t)
	}
	jvp, vjp := finiteDiffJVP(a, nil), finiteDiffVJP(a, nil)
	var ap, am []T
	// dAdt writes (a(t+δ) − a(t−δ))/2δ into ap.
	dAdt := func(u []T, p []float32, t float64) []T {
		if len(ap) != len(u) {
			ap, am = make([]T, len(u)), make([]T, len(u))
		}
		d := timeStep(t)
		hi, lo := t+d, t-d
		a(ap, u, p, hi)
		a(am, u, p, lo)
		for i := range ap {
			ap[i] = (ap[i] - am[i]) / T(hi-lo)
		}
		return ap
	}
	fj := func(jv, u, v []T, p []float32, dp []T, t, dt float64) {
		jvp(jv, u, v, p, dp, t)
		if dt != 0 {
			for i, d := range dAdt(u, p, t) {
				jv[i] += d * T(dt)
			}
		}
	}
	fv := func(du, dp, w, u []T, p []float32, t float64) float64 {
		vjp(du, dp, w, u, p, t)
		s := 0.0
		for i, d := range dAdt(u, p, t) {
			s += float64(w[i]) * float64(d)
		}
		return s
	}
	return fj, fv
}

// fdTimesJac is the Jacobian of TimesFrom by central differences in each
// parameter, stepped in float32 as finiteDiffJVP steps p.
func fdTimesJac(from func(ts []float64, p []float32), m int) func(J []float64, p []float32) {
	var pp []float32
	tp, tm := make([]float64, m), make([]float64, m)
	return func(J []float64, p []float32) {
		np := len(p)
		pp = append(pp[:0], p...)
		for k := range p {
			hi, lo, step := pStep(p[k])
			pp[k] = hi
			from(tp, pp)
			pp[k] = lo
			from(tm, pp)
			pp[k] = p[k]
			for i := range m {
				J[i*np+k] = (tp[i] - tm[i]) / step
			}
		}
	}
}
