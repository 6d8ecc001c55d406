package ode

import (
	"context"
	"math"
)

// Pieces the gradient methods share: the forward system (F with the
// running cost's integral as one more component), Jacobians built from
// derivative products, reading a stored dense output, and checkpoints.

// fwdSystem is the system a gradient's forward solve integrates: the
// problem's F and, when the loss has a running cost, q' = g(u, p, t) as
// component n.
type fwdSystem[T Float] struct {
	gs     *GradientSolver[T]
	n, np  int
	quad   bool
	gu, gp []T                                     // the running cost's partials
	jn     []T                                     // J of F (n×n)
	ev     []T                                     // a unit vector (n)
	row    []T                                     // a Jacobian row (n)
	wneg   []T                                     // −w for negVJP (n)
	fv     func(du, u []T, p []float32, t float64) // s.f, made once (a method value allocates)
}

func newFwdSystem[T Float](gs *GradientSolver[T], quad bool) *fwdSystem[T] {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	s := &fwdSystem[T]{gs: gs, n: n, np: np, quad: quad,
		gu: make([]T, n), gp: make([]T, np), jn: make([]T, n*n), ev: make([]T, n), row: make([]T, n), wneg: make([]T, n)}
	s.fv = s.f
	return s
}

// rhs is the forward system's right-hand side to hand an integrator: the
// problem's F itself when there is no running cost (one indirect call
// per evaluation less), else s.f.
func (s *fwdSystem[T]) rhs() func(du, u []T, p []float32, t float64) {
	if s.quad {
		return s.fv
	}
	return s.gs.prob.F
}

func (s *fwdSystem[T]) dim() int {
	if s.quad {
		return s.n + 1
	}
	return s.n
}

func (s *fwdSystem[T]) f(du, u []T, p []float32, t float64) {
	n := s.n
	s.gs.prob.F(du[:n], u[:n], p, t)
	if s.quad {
		du[n] = T(s.gs.loss.Running(u[:n], p, t))
	}
}

// runningGrad fills s.gu and s.gp with the running cost's partials at u.
func (s *fwdSystem[T]) runningGrad(u []T, p []float32, t float64) {
	clear(s.gu)
	clear(s.gp)
	s.gs.loss.RunningGradient(s.gu, s.gp, u, p, t)
}

// vjp adds wᵀ∂f/∂u into du and wᵀ∂f/∂p into dp (nil: not wanted).
func (s *fwdSystem[T]) vjp(du, dp, w, u []T, p []float32, t float64) {
	n := s.n
	s.gs.prob.VJP(du[:n], dp, w[:n], u[:n], p, t)
	if s.quad && w[n] != 0 {
		s.runningGrad(u[:n], p, t)
		wq := w[n]
		for i, v := range s.gu {
			du[i] += wq * v
		}
		if dp != nil {
			for k, v := range s.gp {
				dp[k] += wq * v
			}
		}
	}
}

// jac writes the Jacobian of f: J of F from Problem.Jac, else from n VJPs
// (rows) or n JVPs (columns), whichever the problem has; with a running
// cost, the row of q is ∂g/∂u.
func (s *fwdSystem[T]) jac(J, u []T, p []float32, t float64) {
	n, N := s.n, s.dim()
	jacobianOf(s.jn, &s.gs.prob, u[:n], p, t, s.ev, s.row)
	clear(J)
	for i := 0; i < n; i++ {
		copy(J[i*N:i*N+n], s.jn[i*n:(i+1)*n])
	}
	if s.quad {
		s.runningGrad(u[:n], p, t)
		copy(J[n*N:n*N+n], s.gu)
	}
}

// jacobianOf writes the n×n Jacobian of prob.F at (u, p, t) into J, from
// prob.Jac, else from n VJPs, else from n JVPs. ev and col are n-vectors
// of scratch.
func jacobianOf[T Float](J []T, prob *Problem[T], u []T, p []float32, t float64, ev, col []T) {
	n := len(u)
	switch {
	case prob.Jac != nil:
		prob.Jac(J, u, p, t)
	case prob.VJP != nil:
		clear(ev)
		for i := 0; i < n; i++ {
			ev[i] = 1
			row := J[i*n : (i+1)*n]
			clear(row)
			prob.VJP(row, nil, ev, u, p, t)
			ev[i] = 0
		}
	default:
		clear(ev)
		for j := 0; j < n; j++ {
			ev[j] = 1
			prob.JVP(col, u, ev, p, nil, t)
			ev[j] = 0
			for i, v := range col[:n] {
				J[i*n+j] = v
			}
		}
	}
}

// forwardPass is the forward solve the adjoint methods share: it solves
// sys in it from the problem's initial state (copied into y0, of sys's
// dimension), saving at the loss's save times; evaluates the loss, plus the
// running cost's integral (component n); sets res.Value and res.Forward and
// copies u(T1) into u1. A non-nil ck is reset to budget with the start as
// its first checkpoint (it.onAccept records the others).
func (gs *GradientSolver[T]) forwardPass(ctx context.Context, it *Integrator[T], sys *fwdSystem[T], y0 []T, ck *checkpoints[T], budget int, u1 []T) error {
	n := sys.n
	it.o.saveAt = gs.at
	it.prob.F = sys.rhs() // prob.F may differ from the last call's (GradientFor)
	it.prob.Err = gs.hook()
	it.quadratures(len(y0) - n)
	clear(y0)
	copy(y0, gs.initialState())
	if err := it.Reinit(y0, gs.prob.T0, gs.prob.T1, gs.prob.P); err != nil {
		return wrapSolveErr("forward solve", err)
	}
	if ck != nil {
		ck.reset(budget, len(y0))
		ck.add(it.t, it.u, it.dt)
	}
	err := it.Run(ctx)
	gs.res.Forward = it.Stats()
	if err != nil {
		return wrapSolveErr("forward solve", err)
	}
	gs.takeSaved(it, n)
	v, err := gs.evalLoss()
	if err != nil {
		return err
	}
	if sys.quad {
		v += float64(it.u[n])
	}
	gs.res.Value = v
	copy(u1, it.u[:n])
	return nil
}

// denseReader evaluates a stored dense output (an Integrator's denseT,
// denseH, denseC) at any t of the solved span, remembering the last step
// used: the backward passes read it at times that move monotonically.
type denseReader[T Float] struct {
	it   *Integrator[T]
	last int
}

func (d *denseReader[T]) reset() { d.last = 0 }

// eval writes u(t) into dst (len it.n).
func (d *denseReader[T]) eval(dst []T, t float64) {
	it := d.it
	if len(it.denseT) == 0 {
		copy(dst, it.u)
		return
	}
	k, θ := d.seek(t)
	if it.n == 2 && it.deg == 4 && len(dst) >= 2 {
		quartic2(dst, it.denseC[k*10:][:10], θ)
		return
	}
	sz := (it.deg + 1) * it.n
	hornerInto(dst, it.denseC[k*sz:], it.deg, it.n, θ)
}

// seek returns the step k whose interval holds t, and t's place θ in it,
// walking from the last step used: the backward passes move through the
// steps one by one, so this is a step or two, not a search. There must be
// at least one step.
func (d *denseReader[T]) seek(t float64) (int, T) {
	it := d.it
	ts, dir := it.denseT, it.dir
	k := min(d.last, len(ts)-1)
	for k > 0 && dir*(t-ts[k]) < 0 {
		k--
	}
	for k+1 < len(ts) && dir*(t-ts[k+1]) >= 0 {
		k++
	}
	d.last = k
	return k, T((t - ts[k]) / it.denseH[k])
}

// quartic2 is hornerInto's case of two states on a quartic (Tsit5, DP5),
// the same operations, small enough to inline.
func quartic2[T Float](dst, p []T, θ T) {
	p = p[:10]
	dst[0] = (((p[8]*θ+p[6])*θ+p[4])*θ+p[2])*θ + p[0]
	dst[1] = (((p[9]*θ+p[7])*θ+p[5])*θ+p[3])*θ + p[1]
}

// checkpoints keeps at most budget states of a forward solve: the start
// and then every stride-th accepted step, the stride doubling (and every
// other checkpoint dropped) when the budget is full. Each checkpoint has
// its time, state and the next step size to try.
type checkpoints[T Float] struct {
	budget, stride, steps int
	n                     int
	ts, dts               []float64
	idx                   []int // the number of steps before each checkpoint
	us                    []T
}

func (c *checkpoints[T]) reset(budget, n int) {
	c.budget, c.stride, c.steps, c.n = max(budget, 2), 1, 0, n
	c.ts, c.dts, c.us, c.idx = c.ts[:0], c.dts[:0], c.us[:0], c.idx[:0]
}

func (c *checkpoints[T]) len() int { return len(c.ts) }

func (c *checkpoints[T]) state(k int) []T { return c.us[k*c.n : (k+1)*c.n] }

// add records the start (t0, u0) and the next step dt.
func (c *checkpoints[T]) add(t float64, u []T, dt float64) {
	c.ts = append(c.ts, t)
	c.dts = append(c.dts, dt)
	c.idx = append(c.idx, c.steps)
	c.us = append(c.us, u...)
}

// step is called after every accepted step with the new time and state;
// the last step (to T1) is never recorded: T1 ends the last segment.
func (c *checkpoints[T]) step(t float64, u []T, dt float64) {
	c.steps++
	if c.steps%c.stride != 0 {
		return
	}
	if len(c.ts) == c.budget {
		keep := 0
		for k := 0; k < len(c.ts); k += 2 {
			c.ts[keep], c.dts[keep], c.idx[keep] = c.ts[k], c.dts[k], c.idx[k]
			copy(c.us[keep*c.n:(keep+1)*c.n], c.us[k*c.n:(k+1)*c.n])
			keep++
		}
		c.ts, c.dts, c.us, c.idx = c.ts[:keep], c.dts[:keep], c.us[:keep*c.n], c.idx[:keep]
		c.stride *= 2
		if c.steps%c.stride != 0 {
			return
		}
	}
	c.add(t, u, dt)
}

// thetaBar is the scale of parameter θ_k for the sensitivities'
// tolerances (CVODES's pbar): |θ_k|, or 1 where θ_k = 0.
func thetaBar(v float64) float64 {
	v = math.Abs(v)
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 1
	}
	return v
}

// addStats adds the counters of o into s (Retcode: the last non-success).
func addStats(s *Stats, o Stats) {
	rc := s.Retcode
	s.addCounts(o)
	if o.Retcode != Success || rc == Unfinished {
		s.Retcode = o.Retcode
	} else {
		s.Retcode = rc
	}
}
