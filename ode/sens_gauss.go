package ode

import (
	"context"
	"math"
)

// gaussAdjoint is GaussAdjoint: InterpolatingAdjoint's forward pass and
// walk over the save times, with a backward state of λ alone. μ is summed
// by Gauss–Legendre quadrature on each accepted backward step, λ read
// from that step's interpolant and u from the forward dense output.
type gaussAdjoint[T Float] struct {
	ia     *interpAdjoint[T]
	gs     *GradientSolver[T]
	n      int
	nodes  []gaussNode
	lt, d  []T // λ at a node; μ' there, after λ's n values
	quadOK bool
}

// gaussNode is a Gauss–Legendre node θ on [0, 1] and its weight.
type gaussNode struct{ θ, w float64 }

// gaussRules are the Gauss–Legendre rules of 1 to 5 nodes on [0, 1]; the
// rule of k nodes integrates polynomials of degree 2k − 1 exactly.
var gaussRules = [][]gaussNode{
	{{0.5, 1}},
	{{0.21132486540518713, 0.5}, {0.7886751345948129, 0.5}},
	{{0.1127016653792583, 5.0 / 18}, {0.5, 8.0 / 18}, {0.8872983346207417, 5.0 / 18}},
	{{0.06943184420297371, 0.17392742256872692}, {0.33000947820757187, 0.3260725774312731},
		{0.6699905217924281, 0.3260725774312731}, {0.9305681557970263, 0.17392742256872692}},
	{{0.04691007703066802, 0.11846344252809454}, {0.23076534494715845, 0.23931433524968324},
		{0.5, 0.28444444444444444}, {0.7692346550528415, 0.23931433524968324},
		{0.9530899229693319, 0.11846344252809454}},
}

func newGaussAdjoint[T Float](gs *GradientSolver[T], cfg GaussAdjoint) (gradMethod[T], error) {
	k := cfg.Nodes
	if k < 0 || k > len(gaussRules) {
		return nil, errorf("GaussAdjoint{Nodes: %d}: want 0 (the default) to %d", k, len(gaussRules))
	}
	if k == 0 {
		// Degree 2k − 1 ≥ the method's order: λ's interpolant and u's
		// are of about that degree.
		k = min(max((gs.method.info().order+2)/2, 2), len(gaussRules))
	}
	ia, err := newInterpAdjoint(gs, InterpolatingAdjoint{Checkpoints: cfg.Checkpoints, AdjointTol: cfg.AdjointTol, FiniteDiff: cfg.FiniteDiff})
	if err != nil {
		return nil, err
	}
	n, np := len(gs.prob.U0), len(gs.prob.P)
	return &gaussAdjoint[T]{ia: ia.(*interpAdjoint[T]), gs: gs, n: n, nodes: gaussRules[k-1],
		lt: make([]T, n), d: make([]T, n+np)}, nil
}

// build builds InterpolatingAdjoint's solves and replaces its backward
// one by λ's alone. (InterpolatingAdjoint's [λ | μ] integrator is built
// too, and not used.)
func (g *gaussAdjoint[T]) build(quad bool) error {
	ia, gs, n := g.ia, g.gs, g.n
	if err := ia.build(quad); err != nil {
		return err
	}
	bp := Problem[T]{F: g.rhs, U0: make([]T, n), P: gs.prob.P}
	bm := gs.method
	if gs.method.info().stiff {
		st, _ := transposeStructure(gs.prob.JacStructure, n)
		bp.JacStructure, bp.JVP = st, ia.jvpB
		if ia.aj != nil {
			bp.Jac = ia.jacB
		}
		bm = transposedMethod(gs.method)
	}
	bwd, err := initWith(bp, bm, backwardOptions(&gs.o, n, 0, n))
	if err != nil {
		return err
	}
	bwd.onAccept = g.accept
	// A firing's parameter cotangent goes into the sum of μ, as accept's.
	ia.pass = adjointPass[T]{gs: gs, bwd: bwd, a: make([]T, n), fl: ia.fl, mu: gs.res.P}
	return nil
}

// rhs is λ' = −Jᵀλ − ∂g/∂uᵀ: one VJP without its parameter part.
func (g *gaussAdjoint[T]) rhs(dl, l []T, p []float32, t float64) {
	ia := g.ia
	ia.forwardAt(t)
	sys := ia.sys
	wn := sys.wneg[:g.n]
	for i, v := range l {
		wn[i] = -v
	}
	clear(dl)
	u := ia.ub[:g.n]
	g.gs.prob.VJP(dl, nil, wn, u, p, t)
	if sys.quad {
		sys.runningGrad(u, p, t)
		for i, v := range sys.gu {
			dl[i] -= v
		}
	}
}

// accept adds the accepted backward step's share of μ into gs.res.P,
// ∫ μ' dt over the step, μ' = −(∂F/∂p)ᵀλ − ∂g/∂pᵀ. λ's interpolant is
// smooth on the step, u's only on each forward step: where u has a fast
// transient that λ does not, one backward step spans many forward steps,
// and a rule on the whole step would miss the transient. So the step is
// cut at the forward steps' ends inside it and each piece gets the Gauss
// rule, one VJP per node: at most (backward + forward steps) × nodes VJPs
// over the pass. A piece at either end of the step that is less than half
// of its forward step is joined to its neighbour, so where the backward
// and forward steps are alike most steps stay whole; a piece then spans at
// most one and a half forward steps, which resolve u as well.
func (g *gaussAdjoint[T]) accept() {
	it := g.ia.pass.bwd
	it.ensurePoly()
	lo, a := it.t, it.tPrev // a: the start of the next piece
	e, h := g.cutBelow(a, lo)
	if e != lo && math.Abs(a-e) < math.Abs(h)/2 {
		e, _ = g.cutBelow(e, lo)
	}
	for e != lo {
		e2, h2 := g.cutBelow(e, lo)
		if e2 == lo && math.Abs(e-lo) < math.Abs(h2)/2 {
			break
		}
		g.piece(a, e)
		a, e = e, e2
	}
	g.piece(a, lo)
}

// piece adds the Gauss rule's ∫ μ' dt from a to b, both in the last
// backward step, with no forward step end between them.
func (g *gaussAdjoint[T]) piece(a, b float64) {
	it, ia := g.ia.pass.bwd, g.ia
	h, hp := it.t-it.tPrev, b-a
	mu := g.gs.res.P
	for _, nd := range g.nodes {
		t := a + nd.θ*hp
		it.interpInto(g.lt, (t-it.tPrev)/h)
		ia.forwardAt(t)
		negVJP(ia.sys, g.d, g.lt, ia.ub[:g.n], it.prob.P, t)
		c := T(hp * nd.w)
		for k, v := range g.d[g.n:] {
			mu[k] += c * v
		}
	}
}

// cutBelow returns the end of the forward dense output's step nearest
// before cur (in the forward solve's direction) that lies after lo, or lo
// if there is none: the next cut of the backward step from cur to lo. It
// also returns the size of the forward step that holds the times just
// before cur. With checkpoints the segment before cur is solved again (if
// it is not held) to read its steps.
func (g *gaussAdjoint[T]) cutBelow(cur, lo float64) (float64, float64) {
	ia := g.ia
	dir := ia.fwd.dir
	lo2 := lo // the bound the steps' ends are looked for after
	fw := ia.fwd
	if c := ia.cache; c != nil {
		ts := ia.ck.ts
		k := lastBefore(ts, dir, cur)
		if k < 0 {
			return lo, 0
		}
		if dir*(ts[k]-lo) > 0 {
			lo2 = ts[k]
		}
		// Any time strictly between lo2 and cur is in segment k.
		ia.forwardAt(lo2 + (cur-lo2)/2)
		switch k {
		case c.held[0]:
			fw = c.its[0]
		case c.held[1]:
			fw = c.its[1]
		default: // a failed replay: cache.err says why
			return lo2, 0
		}
	}
	j := lastBefore(fw.denseT, dir, cur)
	if j < 0 {
		return lo2, 0
	}
	if e := fw.denseT[j]; dir*(e-lo2) > 0 {
		return e, fw.denseH[j]
	}
	return lo2, fw.denseH[j]
}

// lastBefore returns the last k with ts[k] strictly before t in the
// direction dir, ts sorted in that direction, or −1 if there is none.
func lastBefore(ts []float64, dir, t float64) int {
	i, j := 0, len(ts) // ts[:i] before t, ts[j:] not
	for i < j {
		m := int(uint(i+j) >> 1)
		if dir*(t-ts[m]) > 0 {
			i = m + 1
		} else {
			j = m
		}
	}
	return i - 1
}

func (g *gaussAdjoint[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	if !g.ia.built || quad != g.ia.quad {
		if err := g.build(quad); err != nil {
			return err
		}
	}
	// InterpolatingAdjoint's run copies λ's n values into res.U0 and none
	// into res.P, where accept sums μ before the end's derivatives.
	clear(gs.res.P)
	return g.ia.run(ctx, gs)
}
