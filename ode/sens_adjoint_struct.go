package ode

import "github.com/flatkit/flatkit/ode/linalg"

// The adjoint's backward system in the forward problem's structure. Its
// Jacobian with respect to λ is −Jᵀ, so it has the transposed structure:
// a band's bandwidths swapped, a sparse pattern transposed, matrix-free
// again (GMRES on −Jᵀ·v, one VJP per product). The parameter quadrature
// μ is carried beside λ in the backward state [λ | μ], with its own
// tolerances, but its rows are left out of the factorisation: the system
// has an augJacobian structure, and its linear solves are the inner
// structure's on λ and one VJP for μ's rows (see augSys).

// transposeStructure returns the structure of Jᵀ for J of structure s and
// dimension n, and for a band or sparse s the position in s's storage of
// each value of the transposed storage (−1: outside the matrix). A dense
// structure needs no table; a matrix-free one has no storage.
func transposeStructure(s Structure, n int) (Structure, []int) {
	switch s := s.(type) {
	case BandJacobian:
		t := BandJacobian{Lower: s.Upper, Upper: s.Lower}
		w := s.Lower + s.Upper + 1
		perm := make([]int, n*w)
		for k := range perm {
			// Position k of Jᵀ's storage is (i, j) of Jᵀ, (j, i) of J.
			i := k / w
			j := i + k%w - t.Lower
			perm[k] = -1
			if j >= 0 && j < n {
				perm[k] = bandPos(j, i, s.Lower, s.Upper)
			}
		}
		return t, perm
	case SparseJacobian:
		pt, perm := s.Pattern.Transpose()
		return SparseJacobian{Pattern: pt}, perm
	}
	return s, nil
}

// transposedMethod returns m with its linear solver's preconditioner for
// Jᵀ: a band preconditioner's bandwidths swapped. Other settings hold for
// Jᵀ as they are.
func transposedMethod(m Method) Method {
	g, ok := methodLinear(m).(GMRES)
	if !ok {
		return m
	}
	if _, ok := g.Precond.(BandPreconditioner); !ok {
		return m
	}
	g = transposedSolver(g).(GMRES)
	switch v := methodValue(m).(type) {
	case BDFMethod:
		v.Linear = g
		return v
	case Rodas5PMethod:
		v.Linear = g
		return v
	case Rosenbrock23Method:
		v.Linear = g
		return v
	}
	return m
}

// transposedSolver returns ls for Jᵀ: a GMRES's band preconditioner with
// its bandwidths swapped, any other solver as it is.
func transposedSolver(ls LinearSolver) LinearSolver {
	g, ok := ls.(GMRES)
	if !ok {
		return ls
	}
	b, ok := g.Precond.(BandPreconditioner)
	if !ok {
		return ls
	}
	g.Precond = BandPreconditioner{Lower: b.Upper, Upper: b.Lower}
	return g
}

// adjointJac writes −Jᵀ in the transposed structure's storage from
// Problem.Jac, which writes J in the forward structure's: a gather of the
// forward storage, no n×n matrix for a band or sparse J.
type adjointJac[T Float] struct {
	jac   func(J, u []T, p []float32, t float64)
	n     int
	dense bool
	buf   []T   // J in the forward storage
	perm  []int // see transposeStructure
}

// newAdjointJac prepares the transposition of prob's Jac, of structure s
// (nil: dense) with perm from transposeStructure.
func newAdjointJac[T Float](prob *Problem[T], perm []int) *adjointJac[T] {
	n := len(prob.U0)
	a := &adjointJac[T]{jac: prob.Jac, n: n, perm: perm}
	switch s := prob.JacStructure.(type) {
	case BandJacobian:
		a.buf = make([]T, linalg.BandLen(n, s.Lower, s.Upper))
	case SparseJacobian:
		a.buf = make([]T, s.Pattern.NNZ())
	default:
		a.dense = true
		a.buf = make([]T, n*n)
	}
	return a
}

// eval writes −Jᵀ at u, p and t into JB.
func (a *adjointJac[T]) eval(JB, u []T, p []float32, t float64) {
	clear(a.buf) // entries Jac leaves alone are 0, as in denseJac
	a.jac(a.buf, u, p, t)
	if a.dense {
		n := a.n
		for i := 0; i < n; i++ {
			row := JB[i*n : (i+1)*n]
			for j := range row {
				row[j] = -a.buf[j*n+i]
			}
		}
		return
	}
	for k, q := range a.perm {
		if q >= 0 {
			JB[k] = -a.buf[q]
		} else {
			JB[k] = 0
		}
	}
}

// structured reports whether s is a band, sparse or matrix-free structure.
func structured(s Structure) bool {
	switch s.(type) {
	case nil, DenseJacobian:
		return false
	}
	return true
}

// inStructure sets fp, the forward solve's problem, to solve in the
// problem's band, sparse or matrix-free structure. Without a running cost
// that is the problem itself. With one, q' = g is a quadrature beside u
// (an augJacobian): in a Rosenbrock solve its row of W is ∂g/∂u from
// Loss.RunningGradient, exact (see jvpQ), and it is left out of BDF's
// Newton matrix. A difference of g there would make the computed loss
// smooth only to √ε in the parameters, and differences of the solve
// noisy. That needs J of u from Jac or JVP, as the n-component inner
// system cannot difference the whole system's F; without them fp keeps
// its dense Jacobian.
func (s *fwdSystem[T]) inStructure(fp *Problem[T], quad bool) {
	prob := &s.gs.prob
	if !quad {
		fp.F, fp.JVP, fp.JacStructure, fp.Jac = prob.F, prob.JVP, prob.JacStructure, nil
		if usesJac(prob) {
			fp.Jac = prob.Jac
		}
		return
	}
	if prob.JVP == nil && (!usesJac(prob) || isGMRES(methodLinear(s.gs.method))) {
		return
	}
	a := augJacobian{Inner: prob.JacStructure, Blocks: 1, Quad: 1, Coupling: augCoupleJVP}
	fp.JacStructure, fp.Jac, fp.JVP = a, nil, s.jvpQ
	if isBDF(s.gs.method) {
		a.Coupling = augCoupleNone
		fp.JacStructure, fp.JVP = a, nil
		if prob.JVP != nil {
			fp.JVP = s.jvpU
		}
	}
	if usesJac(prob) {
		fp.Jac = s.jacU
	}
}

// jacU writes J of u, in the structure's storage.
func (s *fwdSystem[T]) jacU(J, y []T, p []float32, t float64) { s.gs.prob.Jac(J, y[:s.n], p, t) }

// jvpU writes J·v for v of u's length n.
func (s *fwdSystem[T]) jvpU(jv, y, v []T, p []float32, _ []T, t float64) {
	s.gs.prob.JVP(jv, y[:s.n], v, p, nil, t)
}

// jvpQ is jvpU for v of u's length n, the inner system's products. For v
// of the whole length it is augCoupleJVP's product: the quadrature's row
// ∂g/∂u·v from Loss.RunningGradient. u's rows are left 0, as augSys
// does not read them with one block: that saves a JVP per stage, and
// lets a problem with Jac but no JVP use it.
func (s *fwdSystem[T]) jvpQ(jv, y, v []T, p []float32, _ []T, t float64) {
	n := s.n
	if len(jv) <= n {
		s.gs.prob.JVP(jv, y[:n], v, p, nil, t)
		return
	}
	clear(jv[:n])
	s.runningGrad(y[:n], p, t)
	var d T
	for i, g := range s.gu {
		d += g * v[i]
	}
	jv[n] = d
}
