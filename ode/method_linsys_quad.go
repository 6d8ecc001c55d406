package ode

import "fmt"

// quadJacobian is the structure of a system whose last Quad components
// are quadratures: F does not read them, so the Jacobian of the whole
// system is
//
//	[ J  0 ]
//	[ Q  0 ]
//
// with J the Inner-structured Jacobian of the first n components and Q
// the quadratures' dependence on them. The gradient code builds it for
// the adjoint's backward system [λ | μ], where J = −(∂F/∂u)ᵀ and
// Q = −(∂F/∂p)ᵀ. It is internal: users cannot name it.
//
// Such a problem's Jac writes J alone, in Inner's storage, and its JVP
// takes v of length n, giving J·v, or of the whole length n+Quad, giving
// the whole product (its last Quad components are Q·v for v's first n).
// JVP must be set.
type quadJacobian struct {
	Inner Structure
	Quad  int
}

func (quadJacobian) structure() {}

func (q quadJacobian) String() string {
	inner := q.Inner
	if inner == nil {
		inner = DenseJacobian{}
	}
	return fmt.Sprintf("%v with %d quadratures", inner, q.Quad)
}

// quadSys is linSys for a quadJacobian structure. W = I − c·J_all is
// block lower triangular,
//
//	[ I − c·J   0 ]
//	[  −c·Q     I ],
//
// so a solve is the inner system's solve for the first n components and
// then x_q = b_q + c·Q·x: one product with Q, and no factorisation of
// the quadratures. The solve is exact, so a Rosenbrock method keeps its
// order on the quadratures, and BDF's Newton iteration converges on them
// with the inner components. Q is taken at the point of the last
// jacobian, as J is.
type quadSys[T Float] struct {
	in     linSys[T]
	n, nq  int
	c      float64 // c of the solves: that of the last factor, or of shift
	tJ     float64 // the time and state of the last jacobian
	uJ     []T
	v, jv  []T // [x | 0] and the product, of the whole length
	reduce reducedSolver
	free   bool
}

// newQuadSys builds the linear system of prob, whose structure is q,
// with the inner system of q.Inner solved by ls.
func newQuadSys[T Float](prob *Problem[T], q quadJacobian, ls LinearSolver) (linSys[T], error) {
	N := len(prob.U0)
	n := N - q.Quad
	if q.Quad < 0 || n < 0 {
		return nil, errorf("%v for a system of %d components: want 0 to %d quadratures", q, N, N)
	}
	if prob.JVP == nil {
		return nil, errorf("%v needs Problem.JVP for the quadratures' coupling", q)
	}
	inner := *prob
	inner.U0, inner.JacStructure = prob.U0[:n:n], q.Inner
	in, err := newLinSys(&inner, ls)
	if err != nil {
		return nil, err
	}
	s := &quadSys[T]{in: in, n: n, nq: q.Quad, uJ: make([]T, N), v: make([]T, N), jv: make([]T, N)}
	s.reduce, _ = in.(reducedSolver)
	if f, ok := in.(setupFreeSolver); ok {
		s.free = f.setupFree()
	}
	return s, nil
}

func (s *quadSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	s.tJ = t
	copy(s.uJ, u)
	return s.in.jacobian(it, t, u[:s.n], f0[:s.n], h)
}

func (s *quadSys[T]) factor(it *Integrator[T], c float64) bool {
	s.c = c
	return s.in.factor(it, c)
}

func (s *quadSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	n := s.n
	ok := s.in.solve(it, b[:n], u, fu, tol)
	if !ok && !s.reduced() {
		return false
	}
	if s.nq > 0 {
		copy(s.v[:n], b[:n])
		it.prob.JVP(s.jv, s.uJ, s.v, it.prob.P, nil, s.tJ)
		c := T(s.c)
		for k, q := range s.jv[n:] {
			b[n+k] += c * q
		}
	}
	return ok
}

func (s *quadSys[T]) shift(c float64) bool {
	if s.in.shift(c) {
		s.c = c
		return true
	}
	return false
}

func (s *quadSys[T]) failure() (Retcode, int, error) { return s.in.failure() }

func (s *quadSys[T]) reduced() bool { return s.reduce != nil && s.reduce.reduced() }

func (s *quadSys[T]) setupFree() bool { return s.free }

var (
	_ reducedSolver   = (*quadSys[float64])(nil)
	_ setupFreeSolver = (*quadSys[float64])(nil)
)
