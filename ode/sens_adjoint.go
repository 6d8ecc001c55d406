package ode

import (
	"context"
	"math"
)

// The continuous adjoint methods. λ(T1) is dL/du(T1) from a save time at
// T1, else 0, and μ(T1) = 0. Both are integrated backwards to T0,
//
//	λ' = −(∂F/∂u)ᵀλ − (∂g/∂u)ᵀ,   μ' = −(∂F/∂p)ᵀλ − (∂g/∂p)ᵀ,
//
// λ jumping by dL/du(t_i) at each save time. Then dL/du0 = λ(T0) and
// dL/dp = μ(T0). The backward solve is cut at the save times, so the
// jumps land exactly. It is not cut at checkpoints: see segCache.

// adjointPass is the backward pass both adjoint methods share: the
// backward integrator and the walk over the save times.
type adjointPass[T Float] struct {
	gs     *GradientSolver[T]
	bwd    *Integrator[T]
	a      []T // the backward state
	lam    int // offset of λ in a
	j      int // the next save time to reach, in integration order; −1: none
	tCur   float64
	dir    float64
	onSave func(k int) // called at save time gs.at[k] after its jump (backsolve resets u)

	// Through events and schedules (sens_adjoint_hybrid.go): the forward
	// pass's firings, nil when none are recorded.
	fl       *fireLog[T]
	r        int // the next firing to reach, walking back; −1: none
	mu       []T // where the firings' parameter cotangents go: μ in a, or a sum outside it
	edge     []T // the state before the firing at tCur, read there by the segment below
	lamAfter []T // scratch: λ⁺ at a firing
	// onFire, if set, applies firing x's cotangents to a in place of
	// hybridDerivs.cotangent (HvSolver, whose state has λ̇ and μ̇ too).
	onFire func(x *firing[T])
}

// saveIO returns the j-th save time in the order of integration and its
// index in gs.at.
func (ap *adjointPass[T]) saveIO(j int) (float64, int) {
	at := ap.gs.at
	if ap.dir < 0 {
		j = len(at) - 1 - j
	}
	return at[j], j
}

// start sets the pass at T1 with a cleared state and applies the jumps of
// save times at T1.
func (ap *adjointPass[T]) start(dir float64) { ap.startAt(dir, ap.gs.prob.T1) }

// startAt is start at the end of the forward solve, t1: T1, or the time
// of a terminating firing. It applies the cotangents of the firings at t1
// and then the jumps of save times there.
func (ap *adjointPass[T]) startAt(dir, t1 float64) {
	ap.dir = dir
	clear(ap.a)
	ap.j = len(ap.gs.at) - 1
	ap.r, ap.edge = -1, nil
	if ap.fl != nil {
		ap.r = ap.fl.m - 1
	}
	ap.tCur = t1
	ap.endAt()
	ap.fireAt()
	ap.jumps()
}

// jumps applies λ += dL/du of the save times equal to tCur.
func (ap *adjointPass[T]) jumps() {
	n := len(ap.gs.prob.U0)
	for ap.j >= 0 {
		t, k := ap.saveIO(ap.j)
		if t != ap.tCur {
			return
		}
		lam := ap.a[ap.lam : ap.lam+n]
		for i, v := range ap.gs.dl[k] {
			lam[i] += v
		}
		if ap.onSave != nil {
			ap.onSave(k)
		}
		ap.j--
	}
}

// to integrates the adjoint back from tCur to lo, stopping at every save
// time and every firing on the way.
func (ap *adjointPass[T]) to(ctx context.Context, lo float64) error {
	gs := ap.gs
	for {
		next := lo
		if ap.j >= 0 {
			if t, _ := ap.saveIO(ap.j); ap.dir*(t-lo) > 0 {
				next = t
			}
		}
		if t := ap.nextFire(); ap.dir*(t-next) > 0 {
			next = t
		}
		if next != ap.tCur && !sliver(ap.tCur, next) {
			ap.bwd.prob.Err = gs.hook()
			if err := ap.bwd.Reinit(ap.a, ap.tCur, next, gs.prob.P); err != nil {
				return wrapSolveErr("backward solve", err)
			}
			err := ap.bwd.Run(ctx)
			addStats(&gs.res.Backward, ap.bwd.Stats())
			if err != nil {
				return wrapSolveErr("backward (adjoint) solve", err)
			}
			copy(ap.a, ap.bwd.u)
		}
		ap.tCur = next
		ap.fireAt()
		ap.jumps()
		if next == lo {
			return nil
		}
	}
}

// sliver reports whether [a, b] is shorter than the smallest step an
// integrator takes, 16ε relative: a save time one ulp from the end, say.
// The state cannot change over it, so it is not integrated.
func sliver(a, b float64) bool {
	return math.Abs(b-a) <= 16*eps*max(math.Abs(a), math.Abs(b))
}

// backwardOptions returns the options of a backward solve of dimension N.
// Its components [lo, hi) are λ, those from hi on are the quadratures μ,
// and those before lo are a state with the forward tolerances.
func backwardOptions(g *options, N, lo, hi int) options {
	o := *g
	// TStops stay: where F jumps, the backward solve must land there too.
	o.saveAt, o.saveAtSet, o.dense, o.everyStep, o.dt0 = nil, true, false, false, 0
	o.atolv, o.rtolv = make([]float64, N), make([]float64, N)
	ar, aa := g.adjointTols()
	qr, qa := g.quadTols()
	for i := range N {
		switch {
		case i < lo:
			o.atolv[i], o.rtolv[i] = g.tolAt(i)
		case i < hi:
			o.atolv[i], o.rtolv[i] = aa, ar
		default:
			o.atolv[i], o.rtolv[i] = qa, qr
		}
	}
	o.atol = math.Inf(1)
	for _, a := range o.atolv {
		o.atol = min(o.atol, a)
	}
	return o
}

// negVJP writes d = −[wᵀ∂f/∂u, wᵀ∂f/∂p] of the forward system at u, p
// and t: the two parts one after the other, len(w) + len(p) values. It
// adds the running cost's partials, for the constant adjoint 1 of q. The
// VJP is linear in w, so it is taken at −w, in sys.wneg, rather than
// negated afterwards.
func negVJP[T Float](sys *fwdSystem[T], d, w, u []T, p []float32, t float64) {
	// An index loop, not range: a short vector, cheaper than a memclr call.
	for i := 0; i < len(d); i++ {
		d[i] = 0
	}
	n := len(w)
	wn := sys.wneg[:n]
	for i, v := range w {
		wn[i] = -v
	}
	du, dp := d[:n], d[n:]
	sys.gs.prob.VJP(du, dp, wn, u, p, t)
	if sys.quad {
		sys.runningGrad(u, p, t)
		for i, v := range sys.gu {
			du[i] -= v
		}
		for k, v := range sys.gp {
			dp[k] -= v
		}
	}
}
