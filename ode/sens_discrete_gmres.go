package ode

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// gmresT solves with Wᵀ = I − c·Jᵀ for the discrete adjoint of a
// Rosenbrock step solved by GMRES: GMRES on the products
// Wᵀv = v − c·VJP(u, v), left-preconditioned by the transposed solve of
// the forward preconditioner's factorisation (a band preconditioner's
// band LU, a block-diagonal one's block LU), which ls's jacobian and
// factor keep current. It stops at a relative preconditioned residual
// of gmresTTol.
type gmresT[T Float] struct {
	n        int
	g        *linalg.GMRES[T]
	vjp      func(du, dp, w, u []T, p []float32, t float64)
	pre      transposeSolver[T] // nil: none
	c        T
	u        []T
	p        []float32
	t        float64
	x, z     []T
	aFn, pFn func(dst, v []T)
	iters    int
	fail     lsFail
}

// gmresTTol is the relative residual at which the transposed solves stop:
// the cotangents have no error test to scale a looser one by.
const gmresTTol = 1e-10

// gmresTRestarts bounds the restarts of a transposed solve.
const gmresTRestarts = 100

func newGMREST[T Float](s *gmresSys[T], vjp func(du, dp, w, u []T, p []float32, t float64)) *gmresT[T] {
	n := s.n
	g := &gmresT[T]{n: n, g: linalg.NewGMRES[T](n, s.g.Restart()), vjp: vjp, x: make([]T, n), z: make([]T, n),
		fail: lsFail{name: "GMRES on Wᵀ"}}
	g.aFn = g.apply
	if s.pre != nil {
		g.pre = s.pre.lu.(transposeSolver[T])
		g.pFn = g.precond
	}
	return g
}

// at sets the point and c of the next solves.
func (g *gmresT[T]) at(u []T, p []float32, t, c float64) { g.u, g.p, g.t, g.c = u, p, t, T(c) }

func (g *gmresT[T]) apply(dst, v []T) {
	clear(dst)
	g.vjp(dst, nil, v, g.u, g.p, g.t)
	c := g.c
	for i := range dst {
		dst[i] = v[i] - c*dst[i]
	}
}

func (g *gmresT[T]) precond(dst, r []T) {
	copy(dst, r)
	g.pre.SolveTranspose(dst)
}

// solve overwrites b with W⁻ᵀb; it reports false when GMRES did not
// converge.
func (g *gmresT[T]) solve(b []T) bool {
	z := g.z
	if g.pre != nil {
		g.precond(z, b)
	} else {
		copy(z, b)
	}
	var s float64
	for _, v := range z {
		s += float64(v) * float64(v)
	}
	rms := math.Sqrt(s / float64(len(z)))
	if rms == 0 {
		return true
	}
	clear(g.x)
	iters, res, ok := g.g.Solve(g.aFn, g.pFn, b, g.x, nil, gmresTTol*rms, gmresTRestarts)
	g.iters += iters
	if !ok {
		g.fail.kind, g.fail.v, g.fail.t, g.fail.i = lsNoConv, res, gmresTTol*rms, iters
		return false
	}
	copy(b, g.x)
	return true
}
