package ode

import (
	"context"
	"math"
)

// The continuous adjoint methods. With λ(T1) = dL/du(T1) (from a save time
// at T1, else 0) and μ(T1) = 0, both are integrated backwards to T0:
//
//	λ' = −(∂F/∂u)ᵀλ − (∂g/∂u)ᵀ,   μ' = −(∂F/∂p)ᵀλ − (∂g/∂p)ᵀ,
//
// λ jumping by dL/du(t_i) at each save time. Then dL/du0 = λ(T0) and
// dL/dp = μ(T0). The backward solve is cut at the save times, so the
// jumps land exactly (not at checkpoints: see segCache).

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
func (ap *adjointPass[T]) start(dir float64) {
	ap.dir = dir
	clear(ap.a)
	ap.j = len(ap.gs.at) - 1
	ap.tCur = ap.gs.prob.T1
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
// time on the way.
func (ap *adjointPass[T]) to(ctx context.Context, lo float64) error {
	gs := ap.gs
	for {
		next := lo
		if ap.j >= 0 {
			if t, _ := ap.saveIO(ap.j); ap.dir*(t-lo) > 0 {
				next = t
			}
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
		ap.jumps()
		if next == lo {
			return nil
		}
	}
}

// sliver reports whether [a, b] is shorter than the smallest step an
// integrator takes (16ε relative): a save time one ulp from the end, say.
// The state cannot change over it, so it is not integrated.
func sliver(a, b float64) bool {
	return math.Abs(b-a) <= 16*eps*max(math.Abs(a), math.Abs(b))
}

// backwardOptions returns the options of a backward solve of dimension N
// whose components [lo, hi) are λ, those from hi on μ (quadratures) and
// those before lo a state with the forward tolerances.
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

// forwardOptions returns the forward solve's options for the system sys:
// the state's tolerances and, with a running cost, the quadrature's.
func forwardOptions[T Float](g *options, sys *fwdSystem[T], dense bool) options {
	o := *g
	o.saveAt, o.saveAtSet, o.dense = nil, true, dense
	if sys.quad {
		N := sys.dim()
		o.atolv, o.rtolv = make([]float64, N), make([]float64, N)
		for i := 0; i < sys.n; i++ {
			o.atolv[i], o.rtolv[i] = g.tolAt(i)
		}
		o.rtolv[sys.n], o.atolv[sys.n] = g.quadTols()
		o.atol = min(o.atol, o.atolv[sys.n])
	}
	return o
}

// negVJP writes d = −(wᵀ∂f/∂u, wᵀ∂f/∂p) of the forward system at (u, p,
// t), the two parts one after the other (len(w) + len(p) values), with
// the running cost's partials (the constant adjoint 1 of q). The VJP is
// linear in w, so it is taken at −w (in sys.wneg) rather than negated
// afterwards.
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

// interpAdjoint is InterpolatingAdjoint.
type interpAdjoint[T Float] struct {
	gs      *GradientSolver[T]
	cfg     InterpolatingAdjoint
	n, np   int
	quad    bool
	built   bool
	sys     *fwdSystem[T]
	fwd     *Integrator[T]
	rd      denseReader[T] // the forward solve's dense output (no checkpoints)
	cache   *segCache[T]   // or the replayed segments (checkpoints)
	ck      checkpoints[T]
	pass    adjointPass[T]
	y0, ub  []T
	ubT     float64   // the time of the state in ub (NaN: none)
	steps   []float64 // with checkpoints: every forward step's start, size and end
	ev      []T
	row, rp []T
	u1      []T
}

func newInterpAdjoint[T Float](gs *GradientSolver[T], cfg InterpolatingAdjoint) (gradMethod[T], error) {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	ia := &interpAdjoint[T]{gs: gs, cfg: cfg, n: n, np: np,
		ev: make([]T, n), row: make([]T, n), rp: make([]T, np), u1: make([]T, n)}
	gs.res.P = make([]T, np)
	return ia, nil
}

func (ia *interpAdjoint[T]) build(quad bool) error {
	gs := ia.gs
	n, np := ia.n, ia.np
	stiff := gs.method.info().stiff
	ia.sys = newFwdSystem(gs, quad)
	N := ia.sys.dim()
	ia.quad = quad
	ia.y0, ia.ub = make([]T, N), make([]T, N)
	fp := Problem[T]{F: ia.sys.f, U0: ia.y0, T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P}
	if stiff {
		fp.Jac = ia.sys.jac
	}
	ckpt := ia.cfg.Checkpoints > 0
	var err error
	if ia.fwd, err = initWith(fp, gs.method, forwardOptions(&gs.o, ia.sys, !ckpt)); err != nil {
		return err
	}
	if ckpt {
		// The segments are re-solved on the forward solve's own steps
		// (replay): fixed steps, no error estimates or rejections, and the
		// same dense output as the forward solve's.
		ia.cache = &segCache[T]{ia: ia}
		so := replayOptions(&gs.o, ia.sys, gs.prob.T1-gs.prob.T0)
		for i := range ia.cache.its {
			if ia.cache.its[i], err = initWith(fp, gs.method, so); err != nil {
				return err
			}
			ia.cache.its[i].quadratures(N - n)
		}
		fwd := ia.fwd
		fwd.onAccept = func() {
			ia.steps = append(ia.steps, fwd.tPrev, fwd.h, fwd.t)
			if !fwd.done {
				ia.ck.step(fwd.t, fwd.u, fwd.dt)
			}
		}
	}
	bp := Problem[T]{F: ia.rhs, U0: make([]T, n+np), P: gs.prob.P}
	if n == 2 && !quad {
		bp.F = ia.rhs2
	}
	if stiff {
		bp.Jac = ia.jacB
	}
	bwd, err := initWith(bp, gs.method, backwardOptions(&gs.o, n+np, 0, n))
	if err != nil {
		return err
	}
	bwd.quadratures(np) // rhs reads λ only
	ia.pass = adjointPass[T]{gs: gs, bwd: bwd, a: make([]T, n+np)}
	ia.built = true
	return nil
}

// forwardAt writes the forward state at t into ia.ub. The state at the
// time of the last call is kept (ubT): an explicit method's last stages
// often share a time (Tsit5's sixth and seventh at t+h), and the dense
// output is a function of t alone, so reading it again would give the
// same bits.
func (ia *interpAdjoint[T]) forwardAt(t float64) {
	if t == ia.ubT {
		return
	}
	if ia.cache != nil {
		ia.cache.eval(ia.ub, t)
	} else {
		ia.rd.eval(ia.ub, t)
	}
	ia.ubT = t
}

// rhs is the backward right-hand side of [λ | μ].
func (ia *interpAdjoint[T]) rhs(da, a []T, p []float32, t float64) {
	n := ia.n
	ia.forwardAt(t)
	negVJP(ia.sys, da, a[:n], ia.ub[:n], p, t)
}

// rhs2 is rhs for two states without a running cost, negVJP's work in
// the same frame (one call level and its loops fewer per stage of the
// common small case); the same operations, so the same bits.
func (ia *interpAdjoint[T]) rhs2(da, a []T, p []float32, t float64) {
	if t != ia.ubT {
		// The quartic dense output of Tsit5 and DP5 read here, as
		// denseReader.eval reads it, without its two call levels.
		if it := ia.rd.it; ia.cache == nil && it.deg == 4 && len(it.denseT) > 0 {
			k, θ := ia.rd.seek(t)
			quartic2(ia.ub[:2:2], it.denseC[k*10:], θ)
			ia.ubT = t
		} else {
			ia.forwardAt(t)
		}
	}
	d := da[: 2+ia.np : 2+ia.np]
	for i := 0; i < len(d); i++ { // short: cheaper than a memclr call
		d[i] = 0
	}
	wn := ia.sys.wneg[:2:2]
	wn[0], wn[1] = -a[0], -a[1]
	ia.gs.prob.VJP(d[:2:2], d[2:], wn, ia.ub[:2:2], p, t)
}

// jacB is the backward system's Jacobian [−Jᵀ 0; −(∂F/∂p)ᵀ 0], from n VJPs.
func (ia *interpAdjoint[T]) jacB(JB, a []T, p []float32, t float64) {
	n, np := ia.n, ia.np
	nb := n + np
	ia.forwardAt(t)
	u := ia.ub[:n]
	clear(JB)
	for c := 0; c < n; c++ {
		ia.ev[c] = 1
		clear(ia.row)
		clear(ia.rp)
		ia.gs.prob.VJP(ia.row, ia.rp, ia.ev, u, p, t)
		ia.ev[c] = 0
		for r, v := range ia.row {
			JB[r*nb+c] = -v
		}
		for k, v := range ia.rp {
			JB[(n+k)*nb+c] = -v
		}
	}
}

func (ia *interpAdjoint[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	if !ia.built || quad != ia.quad {
		if err := ia.build(quad); err != nil {
			return err
		}
	}
	n := ia.n
	fwd := ia.fwd
	ckpt := ia.cfg.Checkpoints > 0
	var ck *checkpoints[T]
	if ckpt {
		ck = &ia.ck
	}
	ia.steps = ia.steps[:0]
	if err := gs.forwardPass(ctx, fwd, ia.sys, ia.y0, ck, ia.cfg.Checkpoints, ia.u1); err != nil {
		return err
	}

	ap := &ia.pass
	ap.start(fwd.dir)
	ia.ubT = math.NaN() // a new forward solution
	if !ckpt {
		ia.rd = denseReader[T]{it: fwd}
		if err := ap.to(ctx, gs.prob.T0); err != nil {
			return err
		}
	} else {
		ia.cache.reset(ctx)
		err := ap.to(ctx, gs.prob.T0)
		if ia.cache.err != nil {
			return wrapSolveErr("forward re-solve of a checkpoint segment", ia.cache.err)
		}
		if err != nil {
			return err
		}
	}
	copy(gs.res.U0, ap.a[:n])
	copy(gs.res.P, ap.a[n:])
	gs.endDerivatives(gs.res.U0, ia.u1)
	return nil
}

// backsolve is BacksolveAdjoint: the backward state is [u | λ | μ].
type backsolve[T Float] struct {
	gs    *GradientSolver[T]
	n, np int
	quad  bool
	built bool
	sys   *fwdSystem[T]
	fwd   *Integrator[T]
	pass  adjointPass[T]
	y0    []T
	ys    [][]T // the forward saved states
	u1    []T
}

func newBacksolve[T Float](gs *GradientSolver[T], _ BacksolveAdjoint) (gradMethod[T], error) {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	gs.res.P = make([]T, np)
	return &backsolve[T]{gs: gs, n: n, np: np, u1: make([]T, n)}, nil
}

func (bs *backsolve[T]) build(quad bool) error {
	gs := bs.gs
	n, np := bs.n, bs.np
	bs.sys = newFwdSystem(gs, quad)
	bs.quad = quad
	bs.y0 = make([]T, bs.sys.dim())
	fp := Problem[T]{F: bs.sys.f, U0: bs.y0, T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P}
	if gs.method.info().stiff {
		fp.Jac = bs.sys.jac
	}
	var err error
	if bs.fwd, err = initWith(fp, gs.method, forwardOptions(&gs.o, bs.sys, false)); err != nil {
		return err
	}
	// The backward system's Jacobian (stiff methods) is left to finite
	// differences: it needs second derivatives of F.
	bp := Problem[T]{F: bs.rhs, U0: make([]T, 2*n+np), P: gs.prob.P}
	if n == 2 && !quad {
		bp.F = bs.rhs2
	}
	bwd, err := initWith(bp, gs.method, backwardOptions(&gs.o, 2*n+np, n, 2*n))
	if err != nil {
		return err
	}
	bwd.quadratures(np) // rhs reads u and λ only
	bs.pass = adjointPass[T]{gs: gs, bwd: bwd, a: make([]T, 2*n+np), lam: n}
	bs.pass.onSave = func(k int) { copy(bs.pass.a[:n], bs.ys[k][:n]) }
	bs.built = true
	return nil
}

func (bs *backsolve[T]) rhs(da, a []T, p []float32, t float64) {
	n := bs.n
	bs.gs.prob.F(da[:n], a[:n], p, t)
	negVJP(bs.sys, da[n:], a[n:2*n], a[:n], p, t)
}

// rhs2 is rhs for two states without a running cost, negVJP's work in
// the same frame (see interpAdjoint.rhs2).
func (bs *backsolve[T]) rhs2(da, a []T, p []float32, t float64) {
	u := a[:2:2]
	bs.gs.prob.F(da[:2:2], u, p, t)
	d := da[2 : 4+bs.np : 4+bs.np]
	for i := 0; i < len(d); i++ { // short: cheaper than a memclr call
		d[i] = 0
	}
	wn := bs.sys.wneg[:2:2]
	wn[0], wn[1] = -a[2], -a[3]
	bs.gs.prob.VJP(d[:2:2], d[2:], wn, u, p, t)
}

func (bs *backsolve[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	if !bs.built || quad != bs.quad {
		if err := bs.build(quad); err != nil {
			return err
		}
	}
	n := bs.n
	fwd := bs.fwd
	if err := gs.forwardPass(ctx, fwd, bs.sys, bs.y0, nil, 0, bs.u1); err != nil {
		return err
	}
	bs.ys = gs.ys
	ap := &bs.pass
	ap.start(fwd.dir)
	copy(ap.a[:n], bs.u1) // after start: a save time at T1 has reset u to the same value
	if err := ap.to(ctx, gs.prob.T0); err != nil {
		return err
	}
	copy(gs.res.U0, ap.a[n:2*n])
	copy(gs.res.P, ap.a[2*n:])
	gs.endDerivatives(gs.res.U0, bs.u1)
	return nil
}
