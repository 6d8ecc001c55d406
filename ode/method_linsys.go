package ode

import (
	"fmt"

	"github.com/flatkit/flatkit/ode/linalg"
)

// linSys is the seam between a stiff method and its linear algebra: the
// Jacobian J = ∂F/∂u kept in the problem's Structure, and solves with
// W = I − c·J by the method's LinearSolver. BDF and the Rosenbrock
// methods use it alike; BDF calls jacobian and factor only when its
// reuse heuristics ask for them.
//
// The implementations are denseSys (a dense J and a dense LU), structSys
// (a band or sparse J and a dense, band or sparse LU) and gmresSys
// (GMRES on products J·v, with an optional preconditioner).
type linSys[T Float] interface {
	// jacobian evaluates J at t and u, where f0 = F(u, t): from
	// Problem.Jac, from coloured JVP sweeps, or from coloured differences
	// of F. It counts JacEvals and the FEvals it takes. h is the step the
	// Jacobian is for (the difference increments depend on it). It
	// reports false when J is not finite; failure then says where. A
	// matrix-free system records u and f0 for its products.
	jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool
	// factor forms W = I − c·J from the last J and factors it, or sets up
	// the preconditioner. It counts LUs. It reports false when W is
	// singular; failure then says where.
	factor(it *Integrator[T], c float64) bool
	// solve overwrites b with W⁻¹b. A direct solver ignores the rest. An
	// iterative one computes J·v at u, where fu = F(u, t), and stops when
	// the residual's weighted RMS norm (the integrator's weights at it.u)
	// is below tol; it counts LinearIters, and LinearFails when it did not
	// converge, and then reports false. t is it.t when u is it.u itself (a
	// Rosenbrock stage) and otherwise it.t + h of the attempt (a Newton
	// iterate of an implicit method).
	solve(it *Integrator[T], b, u, fu []T, tol float64) bool
	// shift sets c for the products W·v = v − c·J·v of an iterative
	// solver, so that it solves with the current W while its
	// preconditioner keeps the c of the last factor, and reports true. A
	// direct solver keeps the W of the last factor and reports false; a
	// caller whose c has changed since then scales the solutions, as
	// CVODE does for direct solvers only (its scalesol).
	shift(c float64) bool
	// failure reports why the last jacobian, factor or solve failed.
	failure() (Retcode, int, error)
}

// newLinSys builds the linear system of prob's structure for the linear
// solver ls; nil chooses from the structure: DenseLU for a dense one,
// BandLU for a band one, SparseLU for a sparse one and GMRES for a
// matrix-free one. A band structure may also be solved by SparseLU (its
// entries gathered into the band's pattern) and a sparse one by BandLU
// (scattered into the band of the pattern's bandwidths); both may be
// filled into a DenseLU. A dense structure takes only DenseLU or GMRES,
// and a matrix-free one only GMRES. The errors name the pair.
func newLinSys[T Float](prob *Problem[T], ls LinearSolver) (linSys[T], error) {
	n := len(prob.U0)
	s := prob.JacStructure
	if s == nil {
		s = DenseJacobian{}
	}
	if a, ok := s.(augJacobian); ok {
		return newAugSys(prob, a, ls)
	}
	if b, ok := s.(backJacobian); ok {
		return newBackSys(prob, b, ls)
	}
	if err := checkStructure(s, n); err != nil {
		return nil, err
	}
	if ls == nil {
		ls = defaultSolver(s)
	}
	if err := checkSolver(ls, n); err != nil {
		return nil, err
	}
	if g, ok := ls.(GMRES); ok {
		return newGMRESSys[T](n, g, s), nil
	}
	bad := func() error {
		want := defaultSolver(s)
		if isGMRES(want) {
			return errorf("linear solver %v cannot solve with a %v Jacobian; want %v", ls, s, want)
		}
		return errorf("linear solver %v cannot solve with a %v Jacobian; want %v (or GMRES)", ls, s, want)
	}
	switch s := s.(type) {
	case DenseJacobian:
		if _, ok := ls.(DenseLU); ok {
			return newDenseSys[T](n), nil
		}
	case BandJacobian:
		sj := newBandJac[T](n, s.Lower, s.Upper)
		switch ls.(type) {
		case DenseLU:
			return newStructSys[T](sj, newDenseFill(sj), "dense LU"), nil
		case BandLU:
			return newStructSys[T](sj, linalg.NewBandLU[T](n, s.Lower, s.Upper), "band LU"), nil
		case SparseLU:
			return newBandAsSparse(sj)
		}
	case SparseJacobian:
		sj := newSparseJac[T](s.Pattern)
		switch ls.(type) {
		case DenseLU:
			return newStructSys[T](sj, newDenseFill(sj), "dense LU"), nil
		case BandLU:
			return newSparseAsBand(sj), nil
		case SparseLU:
			lu, err := newSparseLU[T](s.Pattern)
			if err != nil {
				return nil, errorf("SparseJacobian: %v", err)
			}
			return newStructSys[T](sj, lu, "sparse LU"), nil
		}
	}
	return nil, bad()
}

// defaultSolver is the linear solver nil stands for with structure s.
func defaultSolver(s Structure) LinearSolver {
	switch s.(type) {
	case BandJacobian:
		return BandLU{}
	case SparseJacobian:
		return SparseLU{}
	case MatrixFreeJacobian:
		return GMRES{}
	}
	return DenseLU{}
}

// denseSys is linSys for a dense Jacobian and a dense LU.
type denseSys[T Float] struct {
	w wSystem[T]
}

func newDenseSys[T Float](n int) *denseSys[T] { return &denseSys[T]{w: newWSystem[T](n)} }

func (d *denseSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	w := &d.w
	w.failK = wOK
	w.userJac = it.prob.Jac != nil
	w.je.jacobianAt(it, w.J, t, u, f0, h)
	w.hg = 0
	if i := firstNonFinite(w.J); i >= 0 {
		w.failK, w.failAt = wJacNaN, i
		return false
	}
	return true
}

func (d *denseSys[T]) factor(it *Integrator[T], c float64) bool {
	w := &d.w
	w.failK = wOK
	return w.factorW(it, c)
}

func (d *denseSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	d.w.solve(b)
	return true
}

func (d *denseSys[T]) shift(c float64) bool { return false }

func (d *denseSys[T]) failure() (Retcode, int, error) { return d.w.failure() }

// lsFail is why a linear system's last operation failed.
type lsFail struct {
	kind    int // one of the ls… constants
	i, j    int // the entry of J, or the pivot column in j; GMRES's iterations in i
	v       float64
	t       float64 // GMRES's tolerance
	userJac bool    // J came from Problem.Jac
	name    string  // the solver or preconditioner
}

const (
	lsOK       = iota
	lsSingular // a zero or negligible pivot in column j
	lsJacNaN   // J[i][j] is NaN or ±Inf
	lsOutside  // Problem.Jac wrote v at (i, j), outside the n×n matrix
	lsNoConv   // GMRES stopped at residual v > t after i iterations
	lsMissing  // F_i depends on u_j, which the structure lacks; found at time v
)

func (f *lsFail) failure() (Retcode, int, error) {
	switch f.kind {
	case lsSingular:
		return Singular, -1, fmt.Errorf("%s: W = I − γ·dt·J is singular (zero pivot at row or column %d)", f.name, f.j)
	case lsJacNaN:
		src := "the finite-difference Jacobian"
		if f.userJac {
			src = "the Jacobian from Problem.Jac"
		}
		return NonFinite, f.i, fmt.Errorf("%s has a NaN or Inf at J[%d][%d]", src, f.i, f.j)
	case lsOutside:
		return Failed, f.i, fmt.Errorf("Problem.Jac wrote %g at row %d, column %d of the band storage, outside the matrix; want those entries left 0", f.v, f.i, f.j)
	case lsMissing:
		return Failed, f.i, fmt.Errorf("the Jacobian's structure misses ∂F_%d/∂u_%d: F_%d changes with u_%d (found by the coloured Jacobian sweep at t=%.17g); declare that entry, or use GMRES with a preconditioner for an approximate structure", f.i, f.j, f.i, f.j, f.v)
	case lsNoConv:
		return Failed, -1, fmt.Errorf("%s did not converge: weighted RMS residual %.3g after %d iterations, want ≤ %g", f.name, f.v, f.i, f.t)
	}
	return Unfinished, -1, nil
}
