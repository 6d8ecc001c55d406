package ode

import "fmt"

// BacksolveAdjoint's backward system in the forward problem's structure.
// The backward state is [u | λ | μ] with
//
//	u' = F(u),  λ' = −Jᵀλ − ∂g/∂uᵀ,  μ' = −(∂F/∂p)ᵀλ − ∂g/∂pᵀ,
//
// so its Jacobian is block lower triangular:
//
//	[ J          ]
//	[ C   −Jᵀ    ]
//	[ Q_u  Q_λ  0 ]
//
// with C = −∂(Jᵀλ + ∂g/∂uᵀ)/∂u (F's and g's second derivatives), Q_u
// likewise for μ and Q_λ = −(∂F/∂p)ᵀ. W = I − c·J_all is solved by block
// substitution: u's block with I − c·J in the forward structure, λ's with
// I + c·Jᵀ in the transposed one (as InterpolatingAdjoint's), μ's rows
// added exactly by one VJP. A Rosenbrock method needs the solve of the
// whole W for its order: C·x_u and Q_u·x_u are then a forward difference
// of the VJP at u + σ·x_u, one VJP per solve. BDF's Newton matrix leaves
// C and Q_u out, an approximate Newton matrix whose iteration still
// converges, as the u block converges first.

// backJacobian is the structure of BacksolveAdjoint's backward system:
// u's block in Fwd, λ's in Adj (Fwd transposed), then Quad components of
// μ. It is internal: users cannot name it.
type backJacobian struct {
	Fwd, Adj Structure
	Quad     int
	// Coupled adds C and Q_u to the solves (a Rosenbrock method).
	Coupled bool
	// bs is the *backsolve[T] whose problem the blocks' products read.
	bs any
}

func (backJacobian) structure() {}

func (b backJacobian) String() string {
	return fmt.Sprintf("BacksolveAdjoint's [u | λ | μ] system: %v, its transpose and %d quadratures", b.Fwd, b.Quad)
}

// probFuncs are the functions of a Problem a linSys calls: swap exchanges
// them with the integrator's, so that a block's linSys runs against its
// own problem; a second swap puts them back.
type probFuncs[T Float] struct {
	f   func(du, u []T, p []float32, t float64)
	jac func(J []T, u []T, p []float32, t float64)
	jvp func(jv, u, v []T, p []float32, dp []T, t float64)
}

func (f *probFuncs[T]) swap(p *Problem[T]) {
	p.F, f.f = f.f, p.F
	p.Jac, f.jac = f.jac, p.Jac
	p.JVP, f.jvp = f.jvp, p.JVP
}

// backSys is linSys for a backJacobian structure.
type backSys[T Float] struct {
	bs          *backsolve[T]
	lead, adj   linSys[T]
	leadF, adjF probFuncs[T]
	n, np       int
	coupled     bool
	c           float64
	up, d, wn   []T // u + σ·x_u; a VJP's n+np values; −x_λ
	last        linSys[T]
	red, free   bool
}

func newBackSys[T Float](prob *Problem[T], b backJacobian, ls LinearSolver) (linSys[T], error) {
	bs, ok := b.bs.(*backsolve[T])
	if !ok {
		return nil, errorf("%v: the backsolve of another precision", b)
	}
	n, np := bs.n, bs.np
	if len(prob.U0) != 2*n+np || b.Quad != np {
		return nil, errorf("%v for a system of %d components: want 2·%d+%d", b, len(prob.U0), n, np)
	}
	s := &backSys[T]{bs: bs, n: n, np: np, coupled: b.Coupled}
	g := &bs.gs.prob
	s.leadF = probFuncs[T]{f: g.F, jvp: g.JVP}
	if usesJac(g) {
		s.leadF.jac = g.Jac
	}
	s.adjF = probFuncs[T]{f: prob.F, jvp: bs.jvpB}
	if bs.aj != nil {
		s.adjF.jac = bs.jacB
	}
	lp := Problem[T]{U0: prob.U0[:n:n], P: prob.P, JacStructure: b.Fwd}
	var err error
	if s.lead, err = newLinSys(&lp, ls); err != nil {
		return nil, err
	}
	lp.JacStructure = b.Adj
	if s.adj, err = newLinSys(&lp, transposedSolver(ls)); err != nil {
		return nil, err
	}
	if g, ok := s.adj.(*gmresSys[T]); ok {
		g.off = n // λ's weights
	}
	s.d, s.wn = make([]T, n+np), make([]T, n)
	if s.coupled {
		s.up = make([]T, n)
	}
	f1, ok1 := s.lead.(setupFreeSolver)
	f2, ok2 := s.adj.(setupFreeSolver)
	s.free = ok1 && ok2 && f1.setupFree() && f2.setupFree()
	return s, nil
}

func (s *backSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	n := s.n
	s.leadF.swap(&it.prob)
	ok := s.lead.jacobian(it, t, u[:n], f0[:n], h)
	s.leadF.swap(&it.prob)
	if !ok {
		s.last = s.lead
		return false
	}
	s.adjF.swap(&it.prob)
	ok = s.adj.jacobian(it, t, u, f0[n:2*n], h)
	s.adjF.swap(&it.prob)
	if !ok {
		s.last = s.adj
	}
	return ok
}

func (s *backSys[T]) factor(it *Integrator[T], c float64) bool {
	s.c = c
	if !s.lead.factor(it, c) {
		s.last = s.lead
		return false
	}
	if !s.adj.factor(it, c) {
		s.last = s.adj
		return false
	}
	return true
}

// solve is the block substitution above. A block whose iterative solve
// did not converge but reduced the residual is carried on with; then
// solve reports false and reduced true, as gmresSys does.
func (s *backSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	n := s.n
	bu, bl, bm := b[:n], b[n:2*n], b[2*n:]
	s.red = false
	s.leadF.swap(&it.prob)
	ok := s.lead.solve(it, bu, u[:n], fu[:n], tol)
	s.leadF.swap(&it.prob)
	if !ok && !s.carryOn(s.lead) {
		return false
	}
	c := T(s.c)
	t := it.t // the time of the solve's point, as gmresSys takes it
	if &u[0] != &it.u[0] {
		t = it.t + it.lastDt
	}
	p := it.prob.P
	if s.coupled {
		// C·x_u and Q_u·x_u: the VJP's rows at u + σ·x_u less those at u,
		// which fu holds.
		if sig, nz := fdIncrement(it, u[:n], bu, sqrtEpsOf[T]()); nz {
			for i, x := range bu {
				s.up[i] = u[i] + sig*x
			}
			negVJP(s.bs.sys, s.d, u[n:2*n], s.up, p, t)
			inv := 1 / sig
			f := fu[n : 2*n+s.np]
			for i, x := range s.d {
				b[n+i] += c * ((x - f[i]) * inv)
			}
		}
	}
	s.adjF.swap(&it.prob)
	okA := s.adj.solve(it, bl, u, fu[n:2*n], tol)
	s.adjF.swap(&it.prob)
	if !okA && !s.carryOn(s.adj) {
		return false
	}
	if s.np > 0 {
		// Q_λ·x_λ = −(∂F/∂p)ᵀx_λ, one VJP.
		for i, x := range bl {
			s.wn[i] = -x
		}
		clear(s.d)
		s.bs.gs.prob.VJP(s.d[:n], s.d[n:], s.wn, u[:n], p, t)
		for i, x := range s.d[n:] {
			bm[i] += c * x
		}
	}
	return ok && okA
}

// carryOn records the failed block ls and reports whether its solve left
// a reduced residual to go on with.
func (s *backSys[T]) carryOn(ls linSys[T]) bool {
	s.last = ls
	r, ok := ls.(reducedSolver)
	s.red = ok && r.reduced()
	return s.red
}

func (s *backSys[T]) shift(c float64) bool {
	if s.lead.shift(c) && s.adj.shift(c) {
		s.c = c
		return true
	}
	return false
}

func (s *backSys[T]) failure() (Retcode, int, error) {
	if s.last == nil {
		return Unfinished, -1, nil
	}
	return s.last.failure()
}

func (s *backSys[T]) reduced() bool { return s.red }

func (s *backSys[T]) setupFree() bool { return s.free }

var (
	_ reducedSolver   = (*backSys[float64])(nil)
	_ setupFreeSolver = (*backSys[float64])(nil)
)

// jacB writes the λ block's Jacobian −Jᵀ at the state's u, in the
// transposed structure's storage, from Problem.Jac.
func (bs *backsolve[T]) jacB(JB, a []T, p []float32, t float64) {
	bs.aj.eval(JB, a[:bs.n], p, t)
}

// jvpB writes −Jᵀ·v at the state's u, for v of λ's length: one VJP.
func (bs *backsolve[T]) jvpB(jv, a, v []T, p []float32, _ []T, t float64) {
	n := bs.n
	wn := bs.sys.wneg[:n]
	for i, x := range v[:n] {
		wn[i] = -x
	}
	clear(jv[:n])
	bs.gs.prob.VJP(jv[:n], nil, wn, a[:n], p, t)
}
