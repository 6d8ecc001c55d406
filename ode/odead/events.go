package odead

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/ode"
)

// EventFunc is an event's condition, or an event's or a schedule's
// effect, written with ad ops. u is the state, of shape [n], p the
// parameters, of shape [len(p)], and t the time as a scalar Var, all in
// the state's precision (p converted as for Func64 when the state is
// float64). A condition returns g(u, p, t), one value; an effect returns
// the new state a(u, p, t), n values. Write every use of t with ad ops on
// t, so that ∂/∂t is exact.
type EventFunc = func(u, p, t ad.Var) ad.Var

// EventOption configures AddEvent and AddSchedule.
type EventOption func(*eventConfig)

type eventConfig struct {
	direction int
	terminate bool
	timesFrom func(p ad.Var) ad.Var
}

// Direction filters an event's crossings as ode.Event.Direction does:
// +1 rising, −1 falling, 0 both (the default).
func Direction(d int) EventOption { return func(c *eventConfig) { c.direction = d } }

// Terminate ends the solve after the effect, with ode.Terminated. An
// event without an effect always terminates.
func Terminate() EventOption { return func(c *eventConfig) { c.terminate = true } }

// TimesFrom makes a schedule's times a function of the parameters, written
// with ad ops: ts(p) returns len(times) values, computed in float64 from
// the float32 parameters. AddSchedule sets ode.Schedule.TimesFrom and its
// exact Jacobian TimesFromJac; times then gives only their number.
func TimesFrom(ts func(p ad.Var) ad.Var) EventOption {
	return func(c *eventConfig) { c.timesFrom = ts }
}

// AddEvent appends to prob.Events the event with condition cond and effect
// effect, written with ad ops, with their exact derivatives for
// ode.Gradient: CondGrad, EffectJVP and EffectVJP, by reverse and forward
// mode as Derivs gives the right-hand side's. A nil effect is a
// terminating event that leaves the state as it is.
//
// It evaluates cond, effect and their derivatives once at prob's initial
// state, parameters and T0, and returns the error recorded on the tape,
// if any, naming the call; prob is then unchanged. Later failures are
// reported by prob.Err, which AddEvent extends, as for Func. The event's
// callbacks record cond and effect anew at every call, on tapes kept for
// reuse, one per goroutine in use, so they are safe for concurrent use.
//
// n = len(prob.U0) < 1 or a nil cond is a bug, and panics.
func AddEvent[F ode.Float](prob *ode.Problem[F], cond, effect EventFunc, opts ...EventOption) error {
	if cond == nil || len(prob.U0) == 0 {
		panic("odead: AddEvent: want a non-nil cond and a problem with U0 set")
	}
	var c eventConfig
	for _, o := range opts {
		o(&c)
	}
	g := &hybridFn[F]{n: len(prob.U0), name: fmt.Sprintf("Problem.Events[%d]", len(prob.Events))}
	ev := ode.Event[F]{Direction: c.direction, Cond: g.cond(cond), CondGrad: g.condGrad(cond)}
	if effect != nil {
		ev.Effect = g.effect(effect, c.terminate)
		ev.EffectJVP, ev.EffectVJP = g.effectJVP(effect), g.effectVJP(effect)
	}
	if err := g.check(prob, cond, effect); err != nil {
		return err
	}
	prob.Events = append(prob.Events, ev)
	g.chainErr(prob)
	return nil
}

// AddSchedule appends to prob.Schedules the schedule that sets u ←
// effect(u, p, t) at each of times, with the exact derivatives EffectJVP
// and EffectVJP, as AddEvent does for an event. With the option TimesFrom,
// the times are a function of the parameters, with their Jacobian. It
// checks effect once, as AddEvent does, and extends prob.Err.
//
// A nil effect, or len(prob.U0) < 1, is a bug, and panics.
func AddSchedule[F ode.Float](prob *ode.Problem[F], times []float64, effect EventFunc, opts ...EventOption) error {
	if effect == nil || len(prob.U0) == 0 {
		panic("odead: AddSchedule: want a non-nil effect and a problem with U0 set")
	}
	var c eventConfig
	for _, o := range opts {
		o(&c)
	}
	g := &hybridFn[F]{n: len(prob.U0), name: fmt.Sprintf("Problem.Schedules[%d]", len(prob.Schedules))}
	s := ode.Schedule[F]{Times: times, Effect: g.effect(effect, c.terminate),
		EffectJVP: g.effectJVP(effect), EffectVJP: g.effectVJP(effect)}
	if c.timesFrom != nil {
		s.TimesFrom, s.TimesFromJac = g.timesFrom(c.timesFrom, len(times)), g.timesFromJac(c.timesFrom, len(times))
	}
	if err := g.check(prob, nil, effect); err != nil {
		return err
	}
	if s.TimesFrom != nil {
		ts, J := make([]float64, len(times)), make([]float64, len(times)*len(prob.P))
		s.TimesFrom(ts, prob.P)
		s.TimesFromJac(J, prob.P)
		if err := g.errOf(); err != nil {
			return err
		}
	}
	prob.Schedules = append(prob.Schedules, s)
	g.chainErr(prob)
	return nil
}

// hybridFn holds the tapes and the sticky error of one event or schedule.
type hybridFn[F ode.Float] struct {
	n    int
	name string // Problem.Events[j] or Problem.Schedules[k], for errors
	free freelist.List[hybridWork[F]]
	err  atomic.Pointer[error]
}

// hybridWork is one goroutine's tape and the recording's own copies of
// its inputs and seeds.
type hybridWork[F ode.Float] struct {
	tp                  *ad.Tape
	u, t, s1, s2, s3    []F
	shU, shP, shT, shTs [1]int
	pf                  []float64
}

// record runs f on w's tape at u, p and t: u, p and t are Params when
// params is set (t of shape [1], passed to f as a scalar), constants
// otherwise. It returns the Params and f's result, checked to have want
// values.
func (g *hybridFn[F]) record(w *hybridWork[F], f EventFunc, u []F, p []float32, t float64, params bool, want int) (uv, pv, tp1, y ad.Var, err error) {
	if w.tp == nil {
		w.tp = ad.NewTape()
	}
	tp := w.tp
	tp.Reset()
	w.u = append(w.u[:0], u...)
	w.t = append(w.t[:0], F(t))
	w.shU[0], w.shP[0], w.shT[0] = len(u), len(p), 1
	if params {
		uv, tp1 = stateParam(tp, w.u), stateParam(tp, w.t)
	} else {
		uv, tp1 = stateConst(tp, w.shU[:], w.u), stateConst(tp, w.shT[:], w.t)
	}
	switch {
	case isFloat64(u):
		pv = tp.ParamFloat64(p)
	case params:
		pv = tp.Param(p)
	default:
		pv = tp.Const(flat.Tensor{Shape: w.shP[:], Data: p})
	}
	y = f(uv, pv, ad.Reshape(tp1))
	if err := tp.Err(); err != nil {
		return uv, pv, tp1, y, err
	}
	if y.IsZero() || y.Tape() != tp {
		return uv, pv, tp1, y, fmt.Errorf("the function returned the zero Var or a Var of another tape, want a Var computed from u, p and t on their tape")
	}
	if y.Size() != want {
		return uv, pv, tp1, y, fmt.Errorf("the function returned %d values (shape %v), want %d", y.Size(), y.Shape(), want)
	}
	return uv, pv, tp1, y, nil
}

// report keeps the first failure, naming the call.
func (g *hybridFn[F]) report(what string, err error) {
	if err != nil && g.err.Load() == nil {
		e := errorf("%s.%s: %w", g.name, what, err)
		g.err.CompareAndSwap(nil, &e)
	}
}

func (g *hybridFn[F]) errOf() error {
	if p := g.err.Load(); p != nil {
		return *p
	}
	return nil
}

// chainErr makes prob.Err report g's failures after those of the old Err.
func (g *hybridFn[F]) chainErr(prob *ode.Problem[F]) {
	old := prob.Err
	prob.Err = func() error {
		if old != nil {
			if err := old(); err != nil {
				return err
			}
		}
		return g.errOf()
	}
}

// done resets w's tape, so that it holds no reference to the caller's
// slices between calls, and returns w to the free list.
func (g *hybridFn[F]) done(w *hybridWork[F]) {
	w.tp.Reset()
	g.free.Put(w)
}

func (g *hybridFn[F]) cond(f EventFunc) func(u []F, p []float32, t float64) float64 {
	return func(u []F, p []float32, t float64) float64 {
		w := g.free.Get()
		defer g.done(w)
		_, _, _, y, err := g.record(w, f, u, p, t, false, 1)
		if err != nil {
			g.report("Cond", err)
			return math.NaN()
		}
		return float64(valuesOf[F](y)[0])
	}
}

// condGrad adds ∂g/∂u into du and ∂g/∂p into dp (unless nil) and returns
// ∂g/∂t: one reverse sweep seeded with 1.
func (g *hybridFn[F]) condGrad(f EventFunc) func(du, dp []F, u []F, p []float32, t float64) float64 {
	return func(du, dp []F, u []F, p []float32, t float64) float64 {
		var one = [1]F{1}
		return g.vjp("CondGrad", f, 1, du, dp, one[:], u, p, t)
	}
}

// vjp adds wtᵀ·∂y/∂u into du and wtᵀ·∂y/∂p into dp (unless nil) and
// returns wtᵀ·∂y/∂t, for y = f(u, p, t) of want values: one reverse
// sweep. what names the call in an error.
func (g *hybridFn[F]) vjp(what string, f EventFunc, want int, du, dp, wt, u []F, p []float32, t float64) float64 {
	w := g.free.Get()
	defer g.done(w)
	uv, pv, tv, y, err := g.record(w, f, u, p, t, true, want)
	if err != nil {
		g.report(what, err)
		return math.NaN()
	}
	w.s1 = append(w.s1[:0], wt...)
	seed := stateConst(w.tp, y.Shape(), w.s1)
	wrt, out := [3]ad.Var{uv, tv, pv}, [3]ad.Var{}
	nw := 3
	if dp == nil {
		nw = 2
	}
	if err := w.tp.VJPOf(y, seed, wrt[:nw], out[:nw]); err != nil {
		g.report(what, err)
		return math.NaN()
	}
	addValues(du, out[0])
	if dp != nil {
		addValues(dp, out[2])
	}
	if out[1].IsZero() {
		return 0
	}
	return float64(valuesOf[F](out[1])[0])
}

func (g *hybridFn[F]) effect(f EventFunc, terminate bool) func(u []F, p []float32, t float64) bool {
	return func(u []F, p []float32, t float64) bool {
		w := g.free.Get()
		defer g.done(w)
		_, _, _, y, err := g.record(w, f, u, p, t, false, g.n)
		if err != nil {
			g.report("Effect", err)
			return terminate
		}
		copy(u, valuesOf[F](y))
		return terminate
	}
}

// effectJVP writes jv = ∂a/∂u·v + ∂a/∂p·dp + ∂a/∂t·dt: one forward sweep.
func (g *hybridFn[F]) effectJVP(f EventFunc) func(jv, u, v []F, p []float32, dp []F, t, dt float64) {
	return func(jv, u, v []F, p []float32, dp []F, t, dt float64) {
		w := g.free.Get()
		defer g.done(w)
		uv, pv, tv, y, err := g.record(w, f, u, p, t, true, g.n)
		if err != nil {
			g.report("EffectJVP", err)
			return
		}
		w.s1 = append(w.s1[:0], v...)
		w.s3 = append(w.s3[:0], F(dt))
		dirs := [3]ad.Var{stateConst(w.tp, w.shU[:], w.s1), stateConst(w.tp, w.shT[:], w.s3)}
		if dp != nil {
			w.s2 = append(w.s2[:0], dp...)
			dirs[2] = stateConst(w.tp, w.shP[:], w.s2)
		}
		wrt := [3]ad.Var{uv, tv, pv}
		jt, err := w.tp.JVPOf(y, wrt[:], dirs[:])
		if err != nil {
			g.report("EffectJVP", err)
			return
		}
		if jt.IsZero() {
			clear(jv)
			return
		}
		copy(jv, valuesOf[F](jt))
	}
}

// effectVJP adds wᵀ·∂a/∂u into du and wᵀ·∂a/∂p into dp (unless nil) and
// returns wᵀ·∂a/∂t: one reverse sweep seeded with w.
func (g *hybridFn[F]) effectVJP(f EventFunc) func(du, dp, wt, u []F, p []float32, t float64) float64 {
	return func(du, dp, wt, u []F, p []float32, t float64) float64 {
		return g.vjp("EffectVJP", f, g.n, du, dp, wt, u, p, t)
	}
}

// recordTimes runs ts on w's tape with p as a float64 Param.
func (g *hybridFn[F]) recordTimes(w *hybridWork[F], ts func(p ad.Var) ad.Var, p []float32, m int) (pv, y ad.Var, err error) {
	if w.tp == nil {
		w.tp = ad.NewTape()
	}
	w.tp.Reset()
	pv = w.tp.ParamFloat64(p)
	y = ts(pv)
	if err := w.tp.Err(); err != nil {
		return pv, y, err
	}
	if y.IsZero() || y.Tape() != w.tp {
		return pv, y, fmt.Errorf("TimesFrom's function returned the zero Var or a Var of another tape")
	}
	if y.Size() != m {
		return pv, y, fmt.Errorf("TimesFrom's function returned %d values (shape %v), want %d (len(times))", y.Size(), y.Shape(), m)
	}
	return pv, ad.Reshape(y, m), nil
}

func (g *hybridFn[F]) timesFrom(ts func(p ad.Var) ad.Var, m int) func(out []float64, p []float32) {
	return func(out []float64, p []float32) {
		w := g.free.Get()
		defer g.done(w)
		_, y, err := g.recordTimes(w, ts, p, m)
		if err != nil {
			g.report("TimesFrom", err)
			for i := range out {
				out[i] = math.NaN()
			}
			return
		}
		copy(out, y.Data64())
	}
}

// timesFromJac writes J[i*len(p)+k] = ∂ts_i/∂p_k by m reverse sweeps.
func (g *hybridFn[F]) timesFromJac(ts func(p ad.Var) ad.Var, m int) func(J []float64, p []float32) {
	return func(J []float64, p []float32) {
		w := g.free.Get()
		defer g.done(w)
		pv, y, err := g.recordTimes(w, ts, p, m)
		if err != nil {
			g.report("TimesFromJac", err)
			return
		}
		np := len(p)
		if cap(w.pf) < m {
			w.pf = make([]float64, m)
		}
		w.pf = w.pf[:m]
		w.shTs[0] = m
		wrt, out := [1]ad.Var{pv}, [1]ad.Var{}
		for i := range m {
			clear(w.pf)
			w.pf[i] = 1
			seed := w.tp.Const64(flat.Tensor64{Shape: w.shTs[:], Data: w.pf})
			if err := w.tp.VJPOf(y, seed, wrt[:], out[:]); err != nil {
				g.report("TimesFromJac", err)
				return
			}
			row := J[i*np : (i+1)*np]
			if out[0].IsZero() {
				clear(row)
				continue
			}
			copy(row, out[0].Data64())
		}
	}
}

// check evaluates cond (unless nil), effect (unless nil) and their
// derivatives once at prob's initial state, parameters and T0, with
// directions of ones so that every rule on a path from u, p or t runs.
func (g *hybridFn[F]) check(prob *ode.Problem[F], cond, effect EventFunc) error {
	n, p, t0 := g.n, prob.P, prob.T0
	u0 := append([]F(nil), prob.U0...)
	if prob.U0From != nil {
		prob.U0From(u0, p)
	}
	ones := make([]F, n+len(p))
	for i := range ones {
		ones[i] = 1
	}
	v, dp := ones[:n], ones[n:]
	du, dq := make([]F, n), make([]F, len(p))
	if cond != nil {
		g.cond(cond)(u0, p, t0)
		g.condGrad(cond)(du, dq, u0, p, t0)
	}
	if effect != nil {
		u := append([]F(nil), u0...)
		g.effect(effect, false)(u, p, t0)
		g.effectJVP(effect)(du, u0, v, p, dp, t0, 1)
		g.effectVJP(effect)(du, dq, v, u0, p, t0)
	}
	return g.errOf()
}
