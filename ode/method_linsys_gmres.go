package ode

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// gmresSys is linSys for GMRES on products with W = I − c·J, with any
// structure: J is never formed. A product J·v is Problem.JVP at the point
// of the solve when it is set, and otherwise the difference quotient of
// CVODE's cvLsDQJtimes,
//
//	J·v ≈ (F(u + σv) − F(u))/σ,  σ = 1/‖v‖,
//
// with ‖·‖ the weighted RMS norm of the error test, so that σv is a
// perturbation of the size of the tolerance: one evaluation of F per
// product, counted in FEvals. F(u) is the caller's fu.
//
// The products are at time it.t when the caller's u is it.u itself (a
// Rosenbrock stage, at the start of the step) and otherwise at the end of
// the attempted step, it.t + h (an implicit method's Newton iterate).
//
// The preconditioner, if any, keeps its own approximation of J, evaluated
// in jacobian (counted in JacEvals) and factored with c in factor
// (counted in LUs). Without one, jacobian and factor only record.
type gmresSys[T Float] struct {
	n           int
	off         int // the offset of solve's block in the integrator's state, for the weights
	g           *linalg.GMRES[T]
	maxRestarts int
	pre         *precSys[T] // nil: no preconditioner
	c           T

	w, x, tmp []T // error weights, the solution, u + σv

	// the point of the solve in progress, for the products
	it    *Integrator[T]
	u, fu []T
	tp    float64

	aFn, pFn func(dst, v []T) // the method values apply and precond, made once
	red      bool             // the last failed solve reduced the residual
	fail     lsFail
}

// gmresRestart is GMRES's default number of Krylov vectors before a
// restart: CVODE's default maxl.
const gmresRestart = 5

func newGMRESSys[T Float](n int, gm GMRES, s0 Structure) *gmresSys[T] {
	restart := gm.Restart
	if restart == 0 {
		restart = gmresRestart
	}
	s := &gmresSys[T]{n: n, g: linalg.NewGMRES[T](n, restart), maxRestarts: gm.MaxRestarts, fail: lsFail{name: "GMRES"}}
	buf := padded[T](3 * n)
	s.w, s.x, s.tmp = buf[:n:n], buf[n:2*n:2*n], buf[2*n:]
	s.aFn = s.apply
	switch p := gm.Precond.(type) {
	case BandPreconditioner:
		s.pre = newBandPrec[T](n, p.Lower, p.Upper)
	case BlockDiagonalPreconditioner:
		s.pre = newBlockPrec[T](n, p.Block, structPattern(s0, n))
	}
	if s.pre != nil {
		s.pFn = s.precond
		s.fail.name = "GMRES with the " + gm.Precond.String()
	}
	return s
}

func (s *gmresSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	s.fail.kind = lsOK
	if s.pre == nil {
		return true
	}
	return s.pre.jacobian(it, t, u, f0, h, &s.fail)
}

func (s *gmresSys[T]) factor(it *Integrator[T], c float64) bool {
	s.fail.kind = lsOK
	s.c = T(c)
	if s.pre == nil {
		return true
	}
	it.stats.LUs++
	if k := s.pre.lu.FactorShifted(s.pre.vals, T(c)); k >= 0 {
		s.fail.kind, s.fail.j = lsSingular, k
		return false
	}
	return true
}

// solve runs GMRES from x = 0. When ‖b‖ ≤ tol already, x = 0 is the
// answer without a product, as in CVODE's cvLsSolve after the first
// Newton iteration (at the first, BDF takes b itself and does not call
// solve). The weights are those of the error test at it.u, the start of
// the step.
func (s *gmresSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	return s.solveAt(it, b, u, fu, s.off, tol)
}

// solveAt is solve for b, the components off to off+n of the
// integrator's state, weighed by their own error weights at it.u: a block
// of an augSys after the first (blockSolver).
func (s *gmresSys[T]) solveAt(it *Integrator[T], b, u, fu []T, off int, tol float64) bool {
	w := s.w
	for i, v := range it.u[off : off+s.n] {
		atol, rtol := it.o.tolAt(off + i)
		if math.IsInf(atol, 1) { // left out of the error control: weighed on the scale 1
			atol = 1
		}
		w[i] = T(1 / (atol + rtol*math.Abs(float64(v))))
	}
	return s.solveW(it, b, u, fu, tol)
}

// solveWeighted is solve with the weights w of b's components instead of
// the integrator's at it.u: a BDF sensitivity block's (weightedSolver).
func (s *gmresSys[T]) solveWeighted(it *Integrator[T], b, u, fu []T, w []float64, tol float64) bool {
	for i, v := range w[:s.n] {
		s.w[i] = T(v)
	}
	return s.solveW(it, b, u, fu, tol)
}

// solveW is solve with the weights in s.w.
func (s *gmresSys[T]) solveW(it *Integrator[T], b, u, fu []T, tol float64) bool {
	s.fail.kind = lsOK
	n := s.n
	w := s.w
	b = b[:n]
	if weightedRMS(b, w) <= tol {
		clear(b)
		return true
	}
	s.it, s.u, s.fu = it, u, fu
	s.tp = it.t
	if len(u) == 0 || &u[0] != &it.u[0] {
		s.tp = it.t + it.lastDt
	}
	clear(s.x)
	iters, res, ok := s.g.Solve(s.aFn, s.pFn, b, s.x, w, tol, s.maxRestarts)
	s.it, s.u, s.fu = nil, nil, nil
	it.stats.LinearIters += iters
	s.red = false
	if !ok {
		it.stats.LinearFails++
		s.fail.kind, s.fail.v, s.fail.t, s.fail.i = lsNoConv, res, tol, iters
		if res < s.g.InitialResidual() { // x = 0 otherwise
			s.red = true
			copy(b, s.x)
		}
		return false
	}
	copy(b, s.x)
	return true
}

// reduced reports whether the last solve that returned false left in b a
// solution that reduced the residual, CVODE's SUNLS_RES_REDUCED (BDF's
// reducedSolver).
func (s *gmresSys[T]) reduced() bool { return s.red }

// setupFree reports whether there is no preconditioner: then jacobian
// and factor have nothing to do (setupFreeSolver).
func (s *gmresSys[T]) setupFree() bool { return s.pre == nil }

func (s *gmresSys[T]) shift(c float64) bool {
	s.c = T(c)
	return true
}

func (s *gmresSys[T]) failure() (Retcode, int, error) { return s.fail.failure() }

// apply writes dst = W·v = v − c·J·v.
func (s *gmresSys[T]) apply(dst, v []T) {
	it := s.it
	n := s.n
	dst, v = dst[:n], v[:n]
	if it.prob.JVP != nil {
		it.prob.JVP(dst, s.u, v, it.prob.P, nil, s.tp)
	} else {
		vn := weightedRMS(v, s.w)
		if !(vn > 0) || vn > math.MaxFloat64 {
			copy(dst, v) // J·0 = 0; a NaN stops GMRES through its norm
			return
		}
		sig := T(1 / vn)
		tmp, u := s.tmp[:n], s.u[:n]
		for i := range tmp {
			tmp[i] = u[i] + sig*v[i]
		}
		it.prob.F(dst, tmp, it.prob.P, s.tp)
		it.stats.FEvals++
		inv := 1 / sig
		fu := s.fu[:n]
		for i := range dst {
			dst[i] = (dst[i] - fu[i]) * inv
		}
	}
	c := s.c
	for i := range dst {
		dst[i] = v[i] - c*dst[i]
	}
}

// precond writes dst = P⁻¹·r.
func (s *gmresSys[T]) precond(dst, r []T) {
	copy(dst, r)
	s.pre.lu.Solve(dst)
}

// weightedRMS is √(Σ (v_i·w_i)² / n).
func weightedRMS[T Float](v, w []T) float64 {
	var acc float64
	w = w[:len(v)]
	for i, x := range v {
		y := float64(x) * float64(w[i])
		acc += y * y
	}
	return math.Sqrt(acc / float64(len(v)))
}

// structPattern is the pattern of a band or sparse structure, else nil.
func structPattern(s Structure, n int) *linalg.Pattern {
	switch s := s.(type) {
	case BandJacobian:
		return linalg.BandPattern(n, s.Lower, s.Upper)
	case SparseJacobian:
		return s.Pattern
	}
	return nil
}

var (
	_ blockSolver[float64] = (*gmresSys[float64])(nil)
	_ reducedSolver        = (*gmresSys[float64])(nil)
	_ setupFreeSolver      = (*gmresSys[float64])(nil)
)
