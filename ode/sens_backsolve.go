package ode

import (
	"context"
	"errors"
)

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
	aj    *adjointJac[T] // −Jᵀ from Problem.Jac; nil: from VJPs
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
	stiff := gs.method.info().stiff
	if stiff {
		fp.Jac = bs.sys.jac
		if structured(gs.prob.JacStructure) {
			bs.sys.inStructure(&fp, quad)
		}
	}
	var err error
	if bs.fwd, err = initWith(fp, gs.method, forwardOptions(&gs.o, bs.sys, false)); err != nil {
		return err
	}
	// With a dense structure a stiff method takes the backward system's
	// Jacobian by finite differences: it needs second derivatives of F.
	// Otherwise the system is solved in the problem's structure
	// (sens_backsolve_struct.go).
	bp := Problem[T]{F: bs.rhs, U0: make([]T, 2*n+np), P: gs.prob.P}
	if n == 2 && !quad {
		bp.F = bs.rhs2
	}
	if stiff && structured(gs.prob.JacStructure) {
		st, perm := transposeStructure(gs.prob.JacStructure, n)
		bs.aj = nil
		if usesJac(&gs.prob) {
			bs.aj = newAdjointJac(&gs.prob, perm)
		}
		bp.JacStructure = backJacobian{Fwd: gs.prob.JacStructure, Adj: st, Quad: np,
			Coupled: !isBDF(gs.method), bs: bs}
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

// rhs2 is rhs for two states without a running cost, with negVJP's work
// in the same frame, as interpAdjoint.rhs2.
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
		return backsolveHint(err)
	}
	copy(gs.res.U0, ap.a[n:2*n])
	copy(gs.res.P, ap.a[2*n:])
	gs.endDerivatives(gs.res.U0, bs.u1)
	return nil
}

// backsolveHint adds to a backward solve that blew up (not a failed
// callback nor a cancelled context) why it may have, and what to use
// instead.
func backsolveHint(err error) error {
	var se *solveError
	var oe *Error
	if !errors.As(err, &se) || !errors.As(err, &oe) {
		return err
	}
	switch oe.Code {
	case MaxStepsReached, DtUnderflow, NonFinite, Singular, ErrorTestFailed, ConvergenceFailed:
		se.hint = "BacksolveAdjoint integrates u back from T1, which blows up where the forward problem is stiff or dissipative (diffusion, decay): InterpolatingAdjoint and GaussAdjoint keep the forward solution instead"
	}
	return err
}
