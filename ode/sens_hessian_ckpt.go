package ode

import "context"

// The forward solution HvSolver's backward pass reads: the forward
// solve's dense output, or with InterpolatingAdjoint.Checkpoints its
// segments solved again. With checkpoints the forward solve of [u, ṡ, q]
// keeps no dense output, only at most Checkpoints states of the whole
// system (the tangent is part of the state) and its steps. The backward
// solve of [λ, λ̇, μ, μ̇] runs from T1 to T0 as without them,
// reading u and ṡ through a segCache: each segment between two
// checkpoints is solved again on the forward solve's own steps when a
// backward stage first reads a time in it, so that the backward solve
// reads the same dense output, takes the same steps and gives the same
// product. BDF, which takes no fixed steps, solves each segment again
// with its own error control, as InterpolatingAdjoint's gradient does.

// forwardAt writes the forward solution [u, ṡ, q] at t into hs.ub.
func (hs *HvSolver[T]) forwardAt(t float64) { hs.read(&hs.pass, t) }

// buildCheckpoints makes the integrators that solve the segments again,
// for the forward system fp with the forward solve's options fo, and
// makes the forward solve record its steps and checkpoints.
func (hs *HvSolver[T]) buildCheckpoints(fp Problem[T], fo options) error {
	gs := hs.gs
	hs.cache = &segCache[T]{gs: gs, tr: &hs.tr, fwd: hs.fwd}
	so := fo
	so.dense = true
	if isBDF(gs.method) {
		hs.cache.adaptive = true
	} else if so.fixed == 0 {
		// Any fixed step will do: replay gives every step's size, and a
		// fixed step estimates no error.
		so.fixed = abs(gs.prob.T1 - gs.prob.T0)
	}
	for i := range hs.cache.its {
		it, err := initWith(fp, gs.method, so)
		if err != nil {
			return err
		}
		it.quadratures(len(hs.y0) - 2*hs.n)
		hs.cache.its[i] = it
	}
	fwd, tr := hs.fwd, &hs.tr
	fwd.onAccept = func() {
		tr.steps = append(tr.steps, fwd.tPrev, fwd.h, fwd.t)
		switch {
		case hs.schedFired():
			// The state after a firing starts a segment: no re-solve
			// crosses a firing or fires one again.
			if !fwd.done {
				tr.ck.fired(fwd.t, fwd.u, fwd.dt)
			}
		case !fwd.done:
			tr.ck.step(fwd.t, fwd.u, fwd.dt)
		}
	}
	return nil
}

// startCheckpoints resets the record of the forward solve, which starts
// at it's initial state.
func (hs *HvSolver[T]) startCheckpoints(it *Integrator[T]) {
	hs.tr.steps = hs.tr.steps[:0]
	hs.tr.ck.reset(hs.ckpt, len(hs.y0))
	hs.tr.ck.add(it.t, it.u, it.dt)
}

// backwardCheckpointed runs the backward pass to T0 on the segments
// solved again.
func (hs *HvSolver[T]) backwardCheckpointed(ctx context.Context) error {
	hs.tr.tEnd = hs.fwd.t
	hs.cache.reset(ctx, hs.fwdF)
	err := hs.pass.to(ctx, hs.gs.prob.T0)
	if hs.cache.err != nil {
		return wrapSolveErr("forward re-solve of a checkpoint segment", hs.cache.err)
	}
	return err
}
