package ode

import (
	"fmt"
	"math"
)

// augJacobian is the structure of the gradient code's augmented systems:
// Blocks blocks of n components whose Jacobian has the same Inner-
// structured J on its diagonal, and then Quad quadratures, components F
// does not read. The Jacobian is
//
//	[ J              ]
//	[ C_1  J         ]
//	[ …        ⋱     ]
//	[ C_b        J   ]
//	[ Q_0  Q_1 … Q_b 0 ]
//
// with the coupling blocks C_k = ∂(F_k)/∂(first block) and the
// quadratures' dependence Q. ForwardSensitivity's system [u | s_1 … | q]
// has this form (C_k holds F's second derivatives against s_k), and so has
// the adjoint's backward system [λ | μ] with one block, J = −(∂F/∂u)ᵀ and
// Q = −(∂F/∂p)ᵀ. It is internal: users cannot name it.
//
// Such a problem's Jac writes J alone, in Inner's storage, from the first
// block; its JVP, when set, takes v of length n and gives J·v. Coupling
// says how the solves get the products with C and Q (see augSys).
type augJacobian struct {
	Inner    Structure
	Blocks   int
	Quad     int
	Coupling int // augCoupleJVP, augCoupleFD or augCoupleNone
	// DiffRHS: F's coupling rows are central differences themselves
	// (FiniteDiff products), so augCoupleFD's differences step ∛ε, not
	// √ε (see forwardSens.augJac).
	DiffRHS bool
}

const (
	// augCoupleJVP: Problem.JVP with v of the whole length gives the
	// whole product, C_k·v_1 and Q·v in the coupling rows. The first
	// block's rows are not read.
	augCoupleJVP = iota
	// augCoupleFD: the products are forward differences of F in the
	// direction of the solution, one evaluation of F each.
	augCoupleFD
	// augCoupleNone: C and Q are left out of W, a block-diagonal Newton
	// matrix, as CVODES's correctors for sensitivities take it. Only for
	// a method with a Newton iteration.
	augCoupleNone
)

func (augJacobian) structure() {}

func (a augJacobian) String() string {
	inner := a.Inner
	if inner == nil {
		inner = DenseJacobian{}
	}
	return fmt.Sprintf("%v in %d blocks with %d quadratures", inner, a.Blocks, a.Quad)
}

// blockSolver is a linSys whose solves stop on a residual weighed by the
// integrator's error weights: GMRES. augSys solves each block after the
// first with the weights of that block's own components. Weighed by the
// first block's, a block whose components are far smaller than the
// first's (a tangent or an adjoint's tangent near 0, on its absolute
// tolerance, beside a state of order 1) would stop orders of magnitude
// above its own error test's scale, and the inexact correction would fail
// that test at every step size: BDF's forward solve of HvSolver on the
// Brusselator (N = 100, rtol 1e-8) ended in a dt underflow so
// (TestHvKrylovBlockWeights).
type blockSolver[T Float] interface {
	solveAt(it *Integrator[T], b, u, fu []T, off int, tol float64) bool
}

// augSys is linSys for an augJacobian structure. W = I − c·J_all is block
// lower triangular with I − c·J on its diagonal, so a solve is one
// factorisation of I − c·J and block substitution:
//
//	x_1 = (I − cJ)⁻¹ b_1
//	x_k = (I − cJ)⁻¹ (b_k + c·C_k·x_1)
//	x_q = b_q + c·Q·x
//
// With augCoupleJVP or augCoupleFD the solve is that of W, exact but for
// the difference's error, so a Rosenbrock method keeps its order on the
// coupled components. With augCoupleNone the C and Q terms are dropped.
// C and Q are taken at the point of the solve: for a Rosenbrock stage
// that is the point of J, for BDF's Newton iterate a point closer to the
// solution than that of its kept J. (The adjoint's products at the point
// of J would read the forward solution there, and with checkpoints BDF's
// J can be segments behind.)
type augSys[T Float] struct {
	in        linSys[T]
	n, nb, nq int
	coupling  int
	step      float64 // the relative step of augCoupleFD's differences
	c         float64 // c of the solves: that of the last factor, or of shift
	v, jv, up []T     // a direction [x | 0], the product, u + σv
	reduce    reducedSolver
	blocks    blockSolver[T] // in, when its solves weigh the residual
	free      bool
}

// newAugSys builds the linear system of prob, of structure a, with the
// inner system of a.Inner solved by ls.
func newAugSys[T Float](prob *Problem[T], a augJacobian, ls LinearSolver) (linSys[T], error) {
	N := len(prob.U0)
	if a.Blocks < 1 || a.Quad < 0 || (N-a.Quad)%a.Blocks != 0 {
		return nil, errorf("%v for a system of %d components: want the blocks to divide the rest", a, N)
	}
	if a.Coupling == augCoupleJVP && prob.JVP == nil {
		return nil, errorf("%v needs Problem.JVP for the coupling", a)
	}
	n := (N - a.Quad) / a.Blocks
	inner := *prob
	inner.U0, inner.JacStructure = prob.U0[:n:n], a.Inner
	in, err := newLinSys(&inner, ls)
	if err != nil {
		return nil, err
	}
	s := &augSys[T]{in: in, n: n, nb: a.Blocks, nq: a.Quad, coupling: a.Coupling, step: sqrtEpsOf[T]()}
	if a.DiffRHS {
		s.step = cbrtEps[T]()
	}
	if a.Coupling != augCoupleNone && (a.Blocks > 1 || a.Quad > 0) {
		s.v, s.jv = make([]T, N), make([]T, N)
		if a.Coupling == augCoupleFD {
			s.up = make([]T, N)
		}
	}
	s.reduce, _ = in.(reducedSolver)
	s.blocks, _ = in.(blockSolver[T])
	if f, ok := in.(setupFreeSolver); ok {
		s.free = f.setupFree()
	}
	return s, nil
}

func (s *augSys[T]) coupled() bool { return s.v != nil }

func (s *augSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	return s.in.jacobian(it, t, u[:s.n], f0[:s.n], h)
}

func (s *augSys[T]) factor(it *Integrator[T], c float64) bool {
	s.c = c
	return s.in.factor(it, c)
}

func (s *augSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	n, nb := s.n, s.nb
	ok := s.in.solve(it, b[:n], u, fu, tol)
	if !ok && (nb > 1 || !s.reduced()) {
		return false
	}
	c := T(s.c)
	// The time of the solve's point, as gmresSys takes it.
	t := it.t
	if len(u) == 0 || &u[0] != &it.u[0] {
		t = it.t + it.lastDt
	}
	if nb > 1 {
		if s.coupled() {
			copy(s.v[:n], b[:n])
			if s.coupling == augCoupleJVP {
				clear(s.v[n:]) // a quadrature product left the other blocks there; JVP reads them
			}
			s.product(it, n, u, fu, t)
			for r := n; r < n*nb; r++ {
				b[r] += c * s.jv[r]
			}
		}
		for k := 1; k < nb; k++ {
			blk := b[k*n : (k+1)*n]
			var ok bool
			if s.blocks != nil {
				ok = s.blocks.solveAt(it, blk, u, fu, k*n, tol)
			} else {
				ok = s.in.solve(it, blk, u, fu, tol)
			}
			if !ok {
				return false
			}
		}
	}
	if s.nq > 0 && s.coupled() {
		copy(s.v[:n*nb], b[:n*nb])
		s.product(it, n*nb, u, fu, t)
		for r := n * nb; r < len(b); r++ {
			b[r] += c * s.jv[r]
		}
	}
	return ok
}

// product writes into s.jv the product of the whole Jacobian at u and t,
// where fu = F(u, t), with s.v, whose first m components are set and the
// rest 0: by Problem.JVP, or by a forward difference of F. Its increment
// σ moves no component j by more than s.step·scale_j, scale_j =
// max(|u_j|, atol_j/rtol_j), as the columns of a difference Jacobian
// move: a J·v quotient of the error test's scale (CVODE's) would lose
// the difference to rounding at tight tolerances. s.step is √ε, or ∛ε
// when F's coupling rows are differences themselves.
func (s *augSys[T]) product(it *Integrator[T], m int, u, fu []T, t float64) {
	if s.coupling == augCoupleJVP {
		it.prob.JVP(s.jv, u, s.v, it.prob.P, nil, t)
		return
	}
	sig, ok := fdIncrement(it, u, s.v[:m], s.step)
	if !ok {
		clear(s.jv)
		return
	}
	copy(s.up, u)
	for i, x := range s.v[:m] {
		s.up[i] += sig * x
	}
	it.prob.F(s.jv, s.up, it.prob.P, t)
	it.stats.FEvals++
	inv := 1 / sig
	for i, f := range fu {
		s.jv[i] = (s.jv[i] - f) * inv
	}
}

// fdIncrement is the increment σ of a forward difference at u in the
// direction v, on u's first len(v) components: no component j moves by
// more than step·scale_j, scale_j = max(|u_j|, atol_j/rtol_j); step is
// √ε of T for a difference of exact values. It reports false when v is 0
// or not finite: the product is then 0.
func fdIncrement[T Float](it *Integrator[T], u, v []T, step float64) (T, bool) {
	sqrtEps := sqrtEpsOf[T]()
	var r float64 // max |v_j|/scale_j
	for i, x := range v {
		a, rt := it.o.tolAt(i)
		scale := math.Abs(float64(u[i]))
		if !math.IsInf(a, 1) {
			scale = max(scale, a/max(rt, sqrtEps))
		}
		if !(scale > 0) || math.IsInf(scale, 0) {
			scale = 1
		}
		r = max(r, math.Abs(float64(x))/scale)
	}
	if !(r > 0) || r > math.MaxFloat64 {
		return 0, false
	}
	return T(step / r), true
}

func (s *augSys[T]) shift(c float64) bool {
	if s.in.shift(c) {
		s.c = c
		return true
	}
	return false
}

func (s *augSys[T]) failure() (Retcode, int, error) { return s.in.failure() }

func (s *augSys[T]) reduced() bool { return s.nb == 1 && s.reduce != nil && s.reduce.reduced() }

func (s *augSys[T]) setupFree() bool { return s.free }

var (
	_ reducedSolver   = (*augSys[float64])(nil)
	_ setupFreeSolver = (*augSys[float64])(nil)
)
