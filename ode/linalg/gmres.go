package linalg

import (
	"fmt"
	"math"
)

// GMRES solves A·x = b by the restarted generalised minimal residual
// method, with A given only by its products. It is the workspace of one
// system size: restart+1 Krylov vectors of length n and the small
// Hessenberg least-squares problem. Solve allocates nothing, so one GMRES
// serves every Newton iteration of an integration.
//
// The iteration is that of CVODE's SPGMR with left preconditioning and
// scaling by the error weights on both sides. It runs on the scaled system
// S·P⁻¹·A·S⁻¹·(S·x) = S·P⁻¹·b with S = diag(w), so that the residual it
// minimises is the weighted one the ODE solver measures errors in. The
// Krylov basis is orthogonalised by modified Gram–Schmidt, with a second
// pass when the first cancels almost all of a vector (CVODE's test), and
// the least-squares problem is kept in QR form by Givens rotations.
//
// A GMRES is not safe for concurrent use.
type GMRES[T Float] struct {
	n, m int
	v    [][]T // m+1 Krylov vectors of length n, views of one block
	tmp  []T   // operator input or preconditioner input
	invw []T   // 1/w of the current solve

	h      []float64 // Hessenberg, column l at h[l*(m+1):], rows 0..l+1
	cs, sn []float64 // Givens rotation l acts on rows l and l+1
	g      []float64 // rotated right-hand side β·e₁, len m+1
	y      []float64 // least-squares solution, then restart coefficients

	res0 float64
}

// NewGMRES returns the workspace for systems of n equations, restarted
// after restart Krylov vectors. It panics if n < 0 or restart < 1.
func NewGMRES[T Float](n, restart int) *GMRES[T] {
	if n < 0 || restart < 1 {
		panic(fmt.Sprintf("linalg: NewGMRES(%d, %d): want n ≥ 0 and restart ≥ 1", n, restart))
	}
	m := restart
	block := make([]T, (m+3)*n)
	v := make([][]T, m+1)
	for i := range v {
		v[i] = block[i*n : (i+1)*n : (i+1)*n]
	}
	return &GMRES[T]{
		n: n, m: m, v: v,
		tmp:  block[(m+1)*n : (m+2)*n : (m+2)*n],
		invw: block[(m+2)*n:],
		h:    make([]float64, m*(m+1)),
		cs:   make([]float64, m),
		sn:   make([]float64, m),
		g:    make([]float64, m+1),
		y:    make([]float64, m+1),
	}
}

// Len is the number of equations.
func (g *GMRES[T]) Len() int { return g.n }

// Restart is the number of Krylov vectors kept before a restart.
func (g *GMRES[T]) Restart() int { return g.m }

// InitialResidual is the weighted RMS norm of S·P⁻¹·b, the residual of
// x = 0, in the last Solve. A caller that accepts a reduced but not
// converged residual, as CVODE does in the first Newton iteration,
// compares Solve's residual with it.
func (g *GMRES[T]) InitialResidual() float64 { return g.res0 }

// Solve solves A·x = b approximately, from x = 0, and writes x, which
// must not alias b.
//
// a writes dst ← A·v. prec, if not nil, writes dst ← P⁻¹·r for a
// preconditioner P ≈ A, applied on the left. Neither may keep its
// arguments, modify v or r, or assume anything about them beyond their
// length n; dst never aliases v or r.
//
// w are the positive error weights of the residual, as CVODE's ewt; nil
// means all ones. The solve has converged when the weighted RMS norm of
// the preconditioned residual
//
//	‖P⁻¹(b − A·x)‖ = sqrt(Σᵢ (wᵢ·(P⁻¹(b − A·x))ᵢ)² / n)
//
// is at most tol. This is CVODE's test: cvLsSolve passes SPGMR the
// 2-norm bound delta = tol·√n for the residual scaled by w, with tol =
// eplifac·tq[4], 0.05 times the Newton iteration's convergence
// tolerance. cvLsSolve first returns x = 0 without a solve when the
// weighted RMS norm of b itself is at most tol; that test is the
// caller's. Each restart cycle takes at most Restart iterations, and
// there are at most maxRestarts restarts.
//
// iters is the number of products with A, res the weighted RMS norm of
// the last residual as GMRES's recurrence estimates it, and converged
// whether res ≤ tol. When the solve does not converge, x is the last
// iterate if it reduced the residual below InitialResidual, and zero
// otherwise (CVODE's SUNLS_RES_REDUCED and SUNLS_CONV_FAIL). A NaN from
// a or prec stops the solve with res NaN.
//
// Solve panics if b, x or a non-nil w is not of length n.
func (g *GMRES[T]) Solve(a func(dst, v []T), prec func(dst, r []T), b, x, w []T, tol float64, maxRestarts int) (iters int, res float64, converged bool) {
	n, m := g.n, g.m
	if len(b) != n || len(x) != n || (w != nil && len(w) != n) {
		panic(fmt.Sprintf("linalg: GMRES.Solve: len(b) = %d, len(x) = %d, len(w) = %d, want %d (w may be nil)", len(b), len(x), len(w), n))
	}
	clear(x)
	g.res0 = 0
	if n == 0 {
		return 0, 0, true
	}
	rootn := math.Sqrt(float64(n))
	delta := tol * rootn
	v0 := g.v[0]

	// v₀ = S·P⁻¹·b, the residual of x = 0.
	src := b
	if prec != nil {
		prec(g.tmp, b)
		src = g.tmp
	}
	var beta float64
	if w == nil {
		beta = math.Sqrt(dot(src, src))
	} else {
		beta = math.Sqrt(scaleNormInv(v0, w, src, g.invw))
	}
	g.res0 = beta / rootn
	if beta <= delta {
		return 0, g.res0, true
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return 0, g.res0, false
	}
	// Normalise v₀; unweighted, copy it from src.
	if w == nil {
		scaleTo(v0, src, 1/beta)
	} else {
		scaleTo(v0, v0, 1/beta)
	}

	rnorm, rho := beta, beta
	var k int
	for try := 0; ; try++ {
		g.g[0] = rnorm
		for i := 1; i <= m; i++ {
			g.g[i] = 0
		}
		k = 0
		stop := false // converged, broken down or NaN
		for l := 0; l < m; l++ {
			iters++
			vl, vk := g.v[l], g.v[l+1]
			nrm2, h0 := g.arnoldiVector(a, prec, vl, vk, v0, w)
			hc := g.h[l*(m+1) : l*(m+1)+l+2]
			hc[0] = h0
			nrm := g.orthogonalise(l, hc, nrm2)

			// Apply the previous rotations to the new column, then
			// the one that zeroes its subdiagonal entry.
			for i := 0; i < l; i++ {
				c, s := g.cs[i], g.sn[i]
				hi, hj := hc[i], hc[i+1]
				hc[i], hc[i+1] = c*hi+s*hj, c*hj-s*hi
			}
			r := math.Hypot(hc[l], nrm)
			if r == 0 || math.IsNaN(r) {
				// A singular projection (A·v_l in the span
				// of the basis, cancelled to zero) or a NaN:
				// column l adds nothing; stop with what came
				// before.
				if math.IsNaN(r) {
					rho = math.NaN()
				}
				stop = true
				break
			}
			c, s := hc[l]/r, nrm/r
			g.cs[l], g.sn[l] = c, s
			hc[l], hc[l+1] = r, 0
			g.g[l+1] = -s * g.g[l]
			g.g[l] *= c
			rho = math.Abs(g.g[l+1])
			k = l + 1
			if rho <= delta {
				converged, stop = true, true
				break
			}
			scaleTo(vk, vk, 1/nrm)
		}

		// y = R⁻¹·g over the k columns taken; x += V·y in the scaled
		// variables.
		y := g.y[:k]
		for i := k - 1; i >= 0; i-- {
			s := g.g[i]
			for j := i + 1; j < k; j++ {
				s -= g.h[j*(m+1)+i] * y[j]
			}
			y[i] = s / g.h[i*(m+1)+i]
		}
		for i, yi := range y {
			axpy(x, T(yi), g.v[i])
		}
		if stop || try >= maxRestarts {
			break
		}

		// Restart from the residual S·P⁻¹·(b − A·x) = g_k·V_{k+1}·Qᵀ·e_k,
		// Q the product of the rotations: v₀ becomes its direction.
		z := g.y[:k+1]
		z[k] = 1
		for i := k - 1; i >= 0; i-- {
			c, s := g.cs[i], g.sn[i]
			z[i] = -s * z[i+1]
			z[i+1] *= c
		}
		if g.g[k] < 0 {
			for i := range z {
				z[i] = -z[i]
			}
		}
		rnorm = math.Abs(g.g[k])
		combine(v0, z, g.v[:k+1])
	}

	res = rho / rootn
	if math.IsNaN(rho) || (!converged && !(rho < beta)) {
		clear(x)
		return iters, res, false
	}
	// Undo the scaling: x = S⁻¹·(S·x).
	if w != nil {
		mulTo(x, x, g.invw)
	}
	return iters, res, converged
}

// arnoldiVector writes vk = S·P⁻¹·A·S⁻¹·vl and returns ‖vk‖² and v₀·vk.
func (g *GMRES[T]) arnoldiVector(a func(dst, v []T), prec func(dst, r []T), vl, vk, v0, w []T) (nrm2, h0 float64) {
	tmp := g.tmp
	switch {
	case w == nil && prec == nil:
		a(vk, vl)
		return normDot(vk, v0)
	case w == nil:
		a(tmp, vl)
		prec(vk, tmp)
		return normDot(vk, v0)
	case prec == nil:
		mulTo(tmp, vl, g.invw)
		a(vk, tmp)
		return scaleNormDot(vk, w, vk, v0)
	default:
		mulTo(tmp, vl, g.invw)
		a(vk, tmp)
		prec(tmp, vk)
		return scaleNormDot(vk, w, tmp, v0)
	}
}

// orthogonalise makes v[l+1] orthogonal to v[0..l] by modified
// Gram–Schmidt. hc[0] holds v₀·v[l+1] on entry; on return hc[0..l] hold
// the projections. nrm2 is ‖v[l+1]‖² before; the result is its norm
// after. If the norm fell below 1000·ε of what it was, the cancellation
// may have hidden a loss of orthogonality, and a second pass adds its
// corrections to hc (CVODE's ModifiedGS).
func (g *GMRES[T]) orthogonalise(l int, hc []float64, nrm2 float64) float64 {
	vk := g.v[l+1]
	after := g.mgsPass(l, hc, vk)
	if after > 1000*roundoff[T]()*math.Sqrt(nrm2) || after == 0 {
		return after
	}
	for i := 0; i <= l; i++ {
		p := dot(g.v[i], vk)
		hc[i] += p
		axpy(vk, T(-p), g.v[i])
	}
	return math.Sqrt(dot(vk, vk))
}

// mgsPass subtracts the projections of vk on v[0..l], hc[0] given, and
// returns ‖vk‖ after. Each subtraction is fused with the next projection
// or, last, with the norm: l+1 passes over the vectors.
func (g *GMRES[T]) mgsPass(l int, hc []float64, vk []T) float64 {
	for i := 0; i < l; i++ {
		hc[i+1] = axpyDot(vk, T(-hc[i]), g.v[i], g.v[i+1])
	}
	return math.Sqrt(axpyNorm(vk, T(-hc[l]), g.v[l]))
}

// roundoff is the unit roundoff of T.
func roundoff[T Float]() float64 { return float64(eps[T]()) }
