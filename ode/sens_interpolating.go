package ode

import (
	"context"
	"math"
)

// interpAdjoint is InterpolatingAdjoint.
type interpAdjoint[T Float] struct {
	forwardReader[T] // the forward solve's dense output, or the segments solved again

	gs     *GradientSolver[T]
	cfg    InterpolatingAdjoint
	n, np  int
	quad   bool
	built  bool
	sys    *fwdSystem[T]
	fwd    *Integrator[T]
	pass   adjointPass[T]
	y0     []T
	u1     []T
	aj     *adjointJac[T] // −Jᵀ from Problem.Jac; nil: from VJPs
	fl     *fireLog[T]    // the forward pass's firings; nil without events and schedules
	nFired int            // fl.m at the last accepted step (checkpoints)

	// Where the forward solve ended (tEnd: T1, or a terminating firing)
	// and, with checkpoints, its segments (ck, steps).
	fwdTrace[T]
}

func newInterpAdjoint[T Float](gs *GradientSolver[T], cfg InterpolatingAdjoint) (gradMethod[T], error) {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	ia := &interpAdjoint[T]{gs: gs, cfg: cfg, n: n, np: np,
		u1: make([]T, n)}
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
		if structured(gs.prob.JacStructure) {
			ia.sys.inStructure(&fp, quad)
		}
	}
	ckpt := ia.cfg.Checkpoints > 0
	// The forward solve fires the events and schedules; the re-solves of
	// checkpoint segments do not: a firing ends a segment (see
	// checkpoints.fired), and the next starts from the state after it.
	ffp := fp
	ffp.Events, ffp.Schedules = gs.prob.Events, gs.prob.Schedules
	var err error
	if ia.fwd, err = initWith(ffp, gs.method, forwardOptions(&gs.o, ia.sys, !ckpt)); err != nil {
		return err
	}
	if gs.hyb != nil {
		ia.fl = newFireLog(gs, ia.fwd)
		ia.fwd.onFire = ia.fl.hook
	}
	if ckpt {
		// replay solves the segments again on the forward solve's own
		// steps: fixed steps, no error estimates or rejections, and the
		// same dense output as the forward solve's.
		ia.cache = &segCache[T]{gs: gs, tr: &ia.fwdTrace, fwd: ia.fwd}
		so := replayOptions(&gs.o, ia.sys, gs.prob.T1-gs.prob.T0)
		if isBDF(gs.method) {
			// BDF takes no fixed steps: it solves each segment again with
			// its own error control (see segCache.replay).
			ia.cache.adaptive = true
			so = forwardOptions(&gs.o, ia.sys, true)
		}
		for i := range ia.cache.its {
			if ia.cache.its[i], err = initWith(fp, gs.method, so); err != nil {
				return err
			}
			ia.cache.its[i].quadratures(N - n)
		}
		fwd := ia.fwd
		fwd.onAccept = func() {
			ia.steps = append(ia.steps, fwd.tPrev, fwd.h, fwd.t)
			fired := ia.fl != nil && ia.fl.m != ia.nFired
			if fired {
				ia.nFired = ia.fl.m
			}
			switch {
			case fwd.done:
			case fired:
				ia.ck.fired(fwd.t, fwd.u, fwd.dt)
			default:
				ia.ck.step(fwd.t, fwd.u, fwd.dt)
			}
		}
		if ia.fl != nil {
			ia.fl.onStep = func(x *firing[T]) {
				// A terminating firing ends the solve without onAccept:
				// its cut step ends the last segment.
				if x.terminal && fwd.h != 0 {
					ia.steps = append(ia.steps, fwd.tPrev, fwd.h, fwd.t)
				}
			}
		}
	}
	bp := Problem[T]{F: ia.rhs, U0: make([]T, n+np), P: gs.prob.P}
	if n == 2 && !quad {
		bp.F = ia.rhs2
	}
	bm := gs.method
	if stiff {
		// The backward system in the transposed structure, μ beside λ
		// as quadratures (sens_adjoint_struct.go).
		st, perm := transposeStructure(gs.prob.JacStructure, n)
		bp.JacStructure = st
		if np > 0 {
			bp.JacStructure = augJacobian{Inner: st, Blocks: 1, Quad: np, Coupling: augCoupleJVP}
		}
		bp.JVP = ia.jvpB
		if usesJac(&gs.prob) {
			ia.aj = newAdjointJac(&gs.prob, perm)
			bp.Jac = ia.jacB
		}
		bm = transposedMethod(gs.method)
	}
	bwd, err := initWith(bp, bm, backwardOptions(&gs.o, n+np, 0, n))
	if err != nil {
		return err
	}
	bwd.quadratures(np) // rhs reads λ only
	a := make([]T, n+np)
	ia.pass = adjointPass[T]{gs: gs, bwd: bwd, a: a, fl: ia.fl, mu: a[n:]}
	ia.built = true
	return nil
}

// forwardReader reads the forward solution for a backward pass: from the
// forward solve's dense output, or with checkpoints from the segments
// solved again. InterpolatingAdjoint and HvSolver share it.
type forwardReader[T Float] struct {
	rd    denseReader[T] // the forward solve's dense output (no checkpoints)
	cache *segCache[T]   // or the replayed segments (checkpoints)
	ub    []T            // the state read last
	ubT   float64        // its time (NaN: none)
}

// read writes the forward state at t into r.ub. It keeps the state at the
// time of the last call, ubT. An explicit method's last stages often share
// a time, as Tsit5's sixth and seventh do at t+h. The dense output is a
// function of t alone, so reading it again would give the same bits. The
// segment below a firing reads the state before it at τ (pass.edge).
func (r *forwardReader[T]) read(pass *adjointPass[T], t float64) {
	if e := pass.edge; e != nil && t == pass.tCur {
		copy(r.ub, e)
		r.ubT = math.NaN()
		return
	}
	if t == r.ubT {
		return
	}
	if r.cache != nil {
		r.cache.eval(r.ub, t)
	} else {
		r.rd.eval(r.ub, t)
	}
	r.ubT = t
}

// forwardAt writes the forward state at t into ia.ub.
func (ia *interpAdjoint[T]) forwardAt(t float64) { ia.read(&ia.pass, t) }

// rhs is the backward right-hand side of [λ | μ].
func (ia *interpAdjoint[T]) rhs(da, a []T, p []float32, t float64) {
	n := ia.n
	ia.forwardAt(t)
	negVJP(ia.sys, da, a[:n], ia.ub[:n], p, t)
}

// rhs2 is rhs for two states without a running cost, with negVJP's work
// in the same frame. That saves one call level and its loops per stage of
// the common small case. The operations are the same, so are the bits.
func (ia *interpAdjoint[T]) rhs2(da, a []T, p []float32, t float64) {
	if edge := ia.pass.edge != nil && t == ia.pass.tCur; t != ia.ubT || edge {
		// The quartic dense output of Tsit5 and DP5 read here, as
		// denseReader.eval reads it, without its two call levels.
		if it := ia.rd.it; ia.cache == nil && it.deg == 4 && len(it.denseT) > 0 && !edge {
			k, θ := ia.rd.seek(t)
			quartic2(ia.ub[:2:2], it.denseC[k*10:], T(θ))
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

// jacB writes the backward system's Jacobian with respect to λ, −Jᵀ, in
// the transposed structure's storage, from Problem.Jac.
func (ia *interpAdjoint[T]) jacB(JB, a []T, p []float32, t float64) {
	ia.forwardAt(t)
	ia.aj.eval(JB, ia.ub[:ia.n], p, t)
}

// jvpB is the backward system's product with its Jacobian,
// −[Jᵀ; (∂F/∂p)ᵀ]·v[:n], one VJP: of λ's length, or of the whole with
// the quadrature's rows (see augJacobian).
func (ia *interpAdjoint[T]) jvpB(jv, a, v []T, p []float32, _ []T, t float64) {
	n := ia.n
	ia.forwardAt(t)
	wn := ia.sys.wneg[:n]
	for i, x := range v[:n] {
		wn[i] = -x
	}
	clear(jv)
	var dp []T
	if len(jv) > n {
		dp = jv[n:]
	}
	ia.gs.prob.VJP(jv[:n], dp, wn, ia.ub[:n], p, t)
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
	if ia.fl != nil {
		ia.fl.reset()
		ia.nFired = 0
		fwd.prob.Events, fwd.prob.Schedules = gs.prob.Events, gs.prob.Schedules
	}
	if err := gs.forwardPass(ctx, fwd, ia.sys, ia.y0, ck, ia.cfg.Checkpoints, ia.u1); err != nil {
		return err
	}
	ia.tEnd = fwd.t
	if fl := ia.fl; fl != nil && fl.m > 0 {
		if x := &fl.recs[fl.m-1]; x.t == gs.prob.T1 && !x.terminal {
			copy(ia.u1, x.before) // the state at T1 the loss sees
		}
	}

	ap := &ia.pass
	ap.startAt(fwd.dir, ia.tEnd)
	ia.ubT = math.NaN() // a new forward solution
	if !ckpt {
		ia.rd = denseReader[T]{it: fwd}
		if err := ap.to(ctx, gs.prob.T0); err != nil {
			return err
		}
	} else {
		ia.cache.reset(ctx, ia.sys.rhs())
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
	if ia.tEnd != gs.prob.T1 {
		gs.res.T1 = 0 // a terminating firing ended the solve: T1 does not matter
	}
	return nil
}
