package ode

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Jacobians for the stiff methods. The sources, in order of preference, are
// Problem.Jac when given, else one Problem.JVP per column (per group of
// columns for a band or sparse structure, see colJac), else forward
// differences of F. odead.Func builds a Jac from a right-hand side written
// with ad ops. The Rosenbrock methods
// need the time derivative ∂F/∂t for non-autonomous problems. It is always
// a forward difference: one evaluation of F, exactly zero when F does not
// depend on t.

// jacEval evaluates J = ∂F/∂u and ∂F/∂t at t and u, given f0 = F(t, u).
type jacEval[T Float] struct {
	n       int
	sqrtEps float64 // √ε of T: the relative size of difference steps
	up      []T     // the perturbed state
	fp      []T     // F at the perturbed point
	inc     []T     // the difference increments
}

func newJacEval[T Float](n int) jacEval[T] {
	buf := padded[T](3 * n)
	return jacEval[T]{n: n, sqrtEps: sqrtEpsOf[T](), up: buf[:n:n], fp: buf[n : 2*n : 2*n], inc: buf[2*n:]}
}

// jacobian writes the row-major Jacobian J[i*n+j] = ∂F_i/∂u_j at it.t and
// it.u. It comes from Problem.Jac, else from n JVPs with the unit vectors,
// else by forward differences: n evaluations of F, counted in FEvals. It
// counts one JacEval in every case. h is the step the Jacobian is for.
//
// The difference increments are CVODE's; see dqIncrements.
func (je *jacEval[T]) jacobian(it *Integrator[T], J, f0 []T, h float64) {
	je.jacobianAt(it, J, it.t, it.u, f0, h)
}

// jacobianAt is jacobian at t and u instead of it.t and it.u.
func (je *jacEval[T]) jacobianAt(it *Integrator[T], J []T, t float64, u, f0 []T, h float64) {
	it.stats.JacEvals++
	p := it.prob.P
	if it.prob.Jac != nil {
		it.prob.Jac(J, u, p, t)
		return
	}
	n := je.n
	up, fp := je.up, je.fp
	if it.prob.JVP != nil { // column j is J·e_j
		clear(up)
		for j := 0; j < n; j++ {
			up[j] = 1
			it.prob.JVP(fp, u, up, p, nil, t)
			up[j] = 0
			for i, v := range fp[:n] {
				J[i*n+j] = v
			}
		}
		return
	}
	copy(up, u)
	f0 = f0[:n]
	inc := je.inc
	dqIncrements(it, u, f0, h, je.sqrtEps, inc)
	for j := 0; j < n; j++ {
		uj := up[j]
		up[j] = uj + inc[j]
		it.prob.F(fp, up, p, t)
		inv := 1 / inc[j]
		for i, v := range fp[:n] {
			J[i*n+j] = (v - f0[i]) * inv
		}
		up[j] = uj
	}
	it.stats.FEvals += n
}

// timeDerivative writes ∂F/∂t at it.t and it.u into dT, by a forward
// difference in the direction of the step h: one evaluation of F. The
// increment is δt = min(√ε·max(|t|, 1), |h|). Staying inside the step keeps
// the difference from reaching across a TStop, where F may jump. The
// Rosenbrock stages use ∂F/∂t multiplied by h², so the rounding error of a
// small δt costs nothing: it is about ε·|F|/δt.
func (je *jacEval[T]) timeDerivative(it *Integrator[T], dT, f0 []T, h float64) {
	t := it.t
	tt := t + math.Copysign(min(je.sqrtEps*max(math.Abs(t), 1), math.Abs(h)), h)
	dt := tt - t
	if dt == 0 {
		clear(dT)
		return
	}
	it.prob.F(je.fp, it.u, it.prob.P, tt)
	it.stats.FEvals++
	inv := T(1 / dt)
	for i, v := range je.fp[:je.n] {
		dT[i] = (v - f0[i]) * inv
	}
}

// wSystem holds a dense Jacobian and the LU factors of W = I − c·J: the
// linear algebra of denseSys.
type wSystem[T Float] struct {
	n       int
	je      jacEval[T]
	J, W    []T
	scale   []T // row magnitudes of W's terms, for linalg.LUFactor
	piv     []int
	perm    []int   // for n ≤ 3: the pivoting as a permutation (luPerm)
	hg      float64 // c of the factored W; 0 when W is not valid
	failK   int     // why the last evaluation or factorisation failed: wOK, wSingular, wJacNaN
	failAt  int     // the pivot column, or the flat index of the bad entry
	userJac bool    // J came from Problem.Jac
}

const (
	wOK = iota
	wSingular
	wJacNaN
)

func newWSystem[T Float](n int) wSystem[T] {
	buf := padded[T](2*n*n + n)
	return wSystem[T]{
		n: n, je: newJacEval[T](n),
		J: buf[: n*n : n*n], W: buf[n*n : 2*n*n : 2*n*n], scale: buf[2*n*n:],
		piv: make([]int, n), perm: make([]int, n),
	}
}

// factorW forms W = I − hg·J and factors it. It reports false when W is
// singular; failure then says where.
func (w *wSystem[T]) factorW(it *Integrator[T], hg float64) bool {
	c := T(-hg)
	W, J := w.W, w.J
	n := w.n
	for i := 0; i < n; i++ {
		row, jr := W[i*n:(i+1)*n], J[i*n:(i+1)*n]
		sc := T(1)
		for j, v := range jr {
			x := c * v
			row[j] = x
			sc = max(sc, abs(x))
		}
		row[i] += 1
		w.scale[i] = sc
	}
	it.stats.LUs++
	if k := linalg.LUFactor(W, n, w.piv, w.scale); k >= 0 {
		w.hg = 0
		w.failK, w.failAt = wSingular, k
		return false
	}
	w.hg = hg
	if w.n <= 3 {
		luPerm(w.piv, w.perm)
	}
	return true
}

// solve overwrites b with W⁻¹b.
func (w *wSystem[T]) solve(b []T) {
	if w.n > 3 || !luSolveSmall(w.W, w.n, w.perm, b) {
		linalg.LUSolve(w.W, w.n, w.piv, b)
	}
}

// failure reports why the last evaluation or factorisation failed, or a
// nil error.
func (w *wSystem[T]) failure() (Retcode, int, error) {
	switch w.failK {
	case wSingular:
		return Singular, -1, fmt.Errorf("W = I − γ·dt·J is singular (zero pivot in column %d)", w.failAt)
	case wJacNaN:
		i, j := w.failAt/w.n, w.failAt%w.n
		src := "the finite-difference Jacobian"
		if w.userJac {
			src = "the Jacobian from Problem.Jac"
		}
		return NonFinite, i, fmt.Errorf("%s has a NaN or Inf at J[%d][%d]", src, i, j)
	}
	return Unfinished, -1, nil
}
