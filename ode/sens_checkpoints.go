package ode

import (
	"context"
	"math"
)

// checkpoints keeps at most budget states of a forward solve: the start
// and then every stride-th accepted step. When the budget is full the
// stride doubles and every other checkpoint is dropped. Each checkpoint
// has its time, state and the next step size to try.
type checkpoints[T Float] struct {
	budget, stride, steps int
	n                     int
	ts, dts               []float64
	idx                   []int // the number of steps before each checkpoint
	us                    []T
	// pin marks the checkpoints kept after a firing: they are never
	// dropped and do not count against the budget; free counts the others.
	pin  []bool
	free int
}

func (c *checkpoints[T]) reset(budget, n int) {
	c.budget, c.stride, c.steps, c.n, c.free = max(budget, 2), 1, 0, n, 0
	c.ts, c.dts, c.us, c.idx, c.pin = c.ts[:0], c.dts[:0], c.us[:0], c.idx[:0], c.pin[:0]
}

func (c *checkpoints[T]) len() int { return len(c.ts) }

func (c *checkpoints[T]) state(k int) []T { return c.us[k*c.n : (k+1)*c.n] }

// add records a start t and u, and the next step dt.
func (c *checkpoints[T]) add(t float64, u []T, dt float64) { c.addPinned(t, u, dt, false) }

func (c *checkpoints[T]) addPinned(t float64, u []T, dt float64, pin bool) {
	c.ts = append(c.ts, t)
	c.dts = append(c.dts, dt)
	c.idx = append(c.idx, c.steps)
	c.us = append(c.us, u...)
	c.pin = append(c.pin, pin)
	if !pin {
		c.free++
	}
}

// step is called after every accepted step with the new time and state.
// The last step, to T1, is never recorded: T1 ends the last segment.
func (c *checkpoints[T]) step(t float64, u []T, dt float64) {
	c.steps++
	if c.steps%c.stride != 0 {
		return
	}
	if c.free == c.budget {
		// Keep every other unpinned checkpoint: those at multiples of the
		// doubled stride (the start is one).
		c.stride *= 2
		keep, free := 0, 0
		for k := range c.ts {
			if !c.pin[k] && c.idx[k]%c.stride != 0 {
				continue
			}
			c.ts[keep], c.dts[keep], c.idx[keep], c.pin[keep] = c.ts[k], c.dts[k], c.idx[k], c.pin[k]
			copy(c.us[keep*c.n:(keep+1)*c.n], c.us[k*c.n:(k+1)*c.n])
			if !c.pin[k] {
				free++
			}
			keep++
		}
		c.ts, c.dts, c.us, c.idx, c.pin = c.ts[:keep], c.dts[:keep], c.us[:keep*c.n], c.idx[:keep], c.pin[:keep]
		c.free = free
		if c.steps%c.stride != 0 {
			return
		}
	}
	c.add(t, u, dt)
}

// fired is step for a step that ended with a firing: the state after it
// is always kept, so that no re-solved segment holds a firing inside it
// or fires one again at its start.
func (c *checkpoints[T]) fired(t float64, u []T, dt float64) {
	c.steps++
	c.addPinned(t, u, dt, true)
}

// fwdTrace is what a forward pass with checkpoints keeps for its segments
// to be solved again: the checkpoints, every accepted step's start, size
// and end, and where the solve ended.
type fwdTrace[T Float] struct {
	ck    checkpoints[T]
	steps []float64
	tEnd  float64
}

// segCache is InterpolatingAdjoint's dense output with checkpoints, and
// HvSolver's. It
// holds the forward solve's segments between checkpoints, two at a time.
// Integrator.replay solves each on the forward solve's own steps when the
// backward solve first reads a time in it. The backward solve then runs
// from T1 to T0 without stopping at the checkpoints. It reads the same
// dense output as without them, so the gradient is the same: bit for bit
// for an autonomous F, as TestInterpCheckpointReplay checks. It holds two
// segments because a backward step and its retries can straddle a
// checkpoint. With BDF, which takes no fixed steps, each segment is solved
// again with error control instead (adaptive): a dense output of the same
// accuracy, not the same bits.
type segCache[T Float] struct {
	gs   *GradientSolver[T]
	tr   *fwdTrace[T]   // the segments
	fwd  *Integrator[T] // the forward solve that recorded them
	its  [2]*Integrator[T]
	held [2]int // the segment each integrator holds, −1 none
	rd   [2]denseReader[T]
	last int // the segment of the last read
	ctx  context.Context
	err  error // the first failed replay
	// adaptive: the segments are solved again with error control, not
	// on the forward solve's steps (BDF, which takes no fixed steps).
	adaptive bool
}

// reset empties the cache for a new backward pass whose segments are
// solved again with the right-hand side f.
func (c *segCache[T]) reset(ctx context.Context, f func(du, u []T, p []float32, t float64)) {
	c.held = [2]int{-1, -1}
	c.last = c.tr.ck.len() - 1
	c.ctx, c.err = ctx, nil
	for i, it := range c.its {
		it.prob.F = f
		c.rd[i].reset()
	}
}

// segmentOf returns the checkpoint segment holding t: the last checkpoint
// at or before t in the direction of integration. The backward solve reads
// times that move monotonically, so this walks a step or two.
func (c *segCache[T]) segmentOf(t float64) int {
	ts, dir := c.tr.ck.ts, c.fwd.dir
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

// eval writes u(t) into dst. It first replays t's segment if it is not
// held, in place of the held one farther from it. After a failed replay it
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
	gs, tr := c.gs, c.tr
	ck := &tr.ck
	lo, hi := ck.ts[k], tr.tEnd
	s0, s1 := ck.idx[k], len(tr.steps)/3
	if k+1 < ck.len() {
		hi, s1 = ck.ts[k+1], ck.idx[k+1]
	}
	it := c.its[s]
	it.prob.Err = gs.hook()
	var err error
	if c.adaptive {
		if err = it.Reinit(ck.state(k), lo, hi, gs.prob.P); err == nil {
			err = it.Run(c.ctx)
		}
	} else {
		err = it.replay(c.ctx, ck.state(k), lo, hi, gs.prob.P, tr.steps[3*s0:3*s1])
	}
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
// checkpoint segments: the forward solve's, dense, with a fixed step so
// that no error is estimated. Any fixed step will do: replay gives every
// step's size.
func replayOptions[T Float](g *options, sys *fwdSystem[T], span float64) options {
	o := forwardOptions(g, sys, true)
	if o.fixed == 0 {
		o.fixed = math.Abs(span)
	}
	return o
}
