package ode

import (
	"context"
)

// The forward system the gradient methods share: F with the running
// cost's integral as one more component. Its Jacobian is built from
// derivative products. The adjoints' forward pass solves it.

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

// rhs is the forward system's right-hand side to hand an integrator. It is
// the problem's F itself when there is no running cost, which saves one
// indirect call per evaluation. Else it is s.f.
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

// vjp adds wᵀ∂f/∂u into du and wᵀ∂f/∂p into dp; a nil dp is not wanted.
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

// jac writes the Jacobian of f. J of F comes from Problem.Jac, else from n
// VJPs as rows or n JVPs as columns, whichever the problem has. With a
// running cost, the row of q is ∂g/∂u.
func (s *fwdSystem[T]) jac(J, u []T, p []float32, t float64) {
	n, N := s.n, s.dim()
	jacobianOf(s.jn, s.gs, u[:n], p, t, s.ev, s.row)
	clear(J)
	for i := 0; i < n; i++ {
		copy(J[i*N:i*N+n], s.jn[i*n:(i+1)*n])
	}
	if s.quad {
		s.runningGrad(u[:n], p, t)
		copy(J[n*N:n*N+n], s.gu)
	}
}

// jacobianOf writes the n×n Jacobian of gs.prob.F at u, p and t into J,
// row-major. It comes from Problem.Jac in its structure's storage (see
// denseJac), else from n VJPs, else from n JVPs. ev and col are n-vectors
// of scratch.
func jacobianOf[T Float](J []T, gs *GradientSolver[T], u []T, p []float32, t float64, ev, col []T) {
	n := len(u)
	prob := &gs.prob
	switch {
	case gs.jac.ok():
		gs.jac.eval(J, u, p, t)
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

// forwardPass is the forward solve the adjoint methods share. It solves
// sys in it from the problem's initial state, saving at the loss's save
// times. y0, of sys's dimension, takes the initial state. It evaluates the
// loss plus the running cost's integral, component n. It sets res.Value
// and res.Forward and copies u(T1) into u1. A non-nil ck is reset to
// budget with the start as its first checkpoint; it.onAccept records the
// others.
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
	if err := gs.checkReached(it); err != nil {
		return err
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
