package ode

import (
	"context"
	"math"
)

// segCache is InterpolatingAdjoint's dense output with checkpoints: the
// forward solve's segments between checkpoints, each replayed on the
// forward solve's own steps (Integrator.replay) when the backward solve
// first reads a time in it, two at a time. The backward solve then runs
// from T1 to T0 without stopping at the checkpoints and reads the same
// dense output as without them, so the gradient is the same (bit for bit
// for an autonomous F: see TestInterpCheckpointReplay). Two segments,
// because a backward step (and its retries) can straddle a checkpoint.
type segCache[T Float] struct {
	ia   *interpAdjoint[T]
	its  [2]*Integrator[T]
	held [2]int // the segment each integrator holds, −1 none
	rd   [2]denseReader[T]
	last int // the segment of the last read
	ctx  context.Context
	err  error // the first failed replay
}

// reset empties the cache for a new backward pass.
func (c *segCache[T]) reset(ctx context.Context) {
	c.held = [2]int{-1, -1}
	c.last = c.ia.ck.len() - 1
	c.ctx, c.err = ctx, nil
	for i, it := range c.its {
		it.prob.F = c.ia.sys.rhs()
		c.rd[i].reset()
	}
}

// segmentOf returns the checkpoint segment holding t: the last checkpoint
// at or before t in the direction of integration. The backward solve reads
// times that move monotonically, so this walks a step or two.
func (c *segCache[T]) segmentOf(t float64) int {
	ts, dir := c.ia.ck.ts, c.ia.fwd.dir
	k := min(max(c.last, 0), len(ts)-1)
	for k > 0 && dir*(t-ts[k]) < 0 {
		k--
	}
	for k+1 < len(ts) && dir*(t-ts[k+1]) >= 0 {
		k++
	}
	c.last = k
	return k
}

// eval writes u(t) into dst, replaying its segment first if it is not
// held (in place of the one farther from it). After a failed replay it
// writes zeros and c.err says why.
func (c *segCache[T]) eval(dst []T, t float64) {
	k := c.segmentOf(t)
	s := -1
	switch k {
	case c.held[0]:
		s = 0
	case c.held[1]:
		s = 1
	default:
		s = 0
		if c.held[0] >= 0 && (c.held[1] < 0 || absInt(c.held[1]-k) > absInt(c.held[0]-k)) {
			s = 1
		}
		if err := c.replay(s, k); err != nil {
			if c.err == nil {
				c.err = err
			}
			c.held[s] = -1
			clear(dst)
			return
		}
	}
	c.rd[s].eval(dst, t)
}

// replay solves segment k again into integrator s.
func (c *segCache[T]) replay(s, k int) error {
	ia := c.ia
	gs := ia.gs
	ck := &ia.ck
	lo, hi := ck.ts[k], gs.prob.T1
	s0, s1 := ck.idx[k], len(ia.steps)/3
	if k+1 < ck.len() {
		hi, s1 = ck.ts[k+1], ck.idx[k+1]
	}
	it := c.its[s]
	it.prob.Err = gs.hook()
	err := it.replay(c.ctx, ck.state(k), lo, hi, gs.prob.P, ia.steps[3*s0:3*s1])
	addStats(&gs.res.Backward, it.Stats())
	c.held[s] = k
	c.rd[s] = denseReader[T]{it: it}
	return err
}

func absInt(k int) int {
	if k < 0 {
		return -k
	}
	return k
}

// replayOptions are the options of the integrators that replay
// checkpoint segments: the forward solve's, dense, with a fixed step (any:
// replay gives every step's size) so that no error is estimated.
func replayOptions[T Float](g *options, sys *fwdSystem[T], span float64) options {
	o := forwardOptions(g, sys, true)
	if o.fixed == 0 {
		o.fixed = math.Abs(span)
	}
	return o
}
