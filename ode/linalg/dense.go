package linalg

// Dense LU factorisation with partial pivoting, for the small systems of
// the stiff ODE methods (n up to a few hundred) and the blocks of BlockLU.
// It is generic over the element type and accumulates in it. Matrices are
// row-major n×n. The factorisation is in place: L below the diagonal with
// a unit diagonal, U above it, and the reciprocals 1/U_kk on the
// diagonal, so that a solve multiplies instead of dividing. piv[k] is the
// row swapped with row k at step k, LAPACK's getrf convention. The
// elimination is right-looking by rows, so the inner loop runs over
// contiguous memory.

// LUFactor factors the row-major n×n matrix a in place. It returns −1 on
// success, or the column of the first pivot that is zero or not finite. a
// is then left partly factored and must not be used to solve.
//
// scale, if not nil, holds a magnitude per row of a, permuted with the
// rows. A pivot below 4ε·scale of its row counts as zero too. A caller that
// forms a = I − c·J passes max(1, max_j |c·J_ij|). So a row cancelled to
// rounding noise is caught as singular, instead of producing a solution
// amplified by 1/ε.
func LUFactor[T Float](a []T, n int, piv []int, scale []T) int {
	a = a[:n*n]
	piv = piv[:n]
	tiny := T(0)
	if scale != nil {
		scale = scale[:n]
		tiny = 4 * eps[T]()
	}
	for k := 0; k < n; k++ {
		// Pivot: the largest |a[i][k]| for i ≥ k.
		p := k
		big := abs(a[k*n+k])
		for i := k + 1; i < n; i++ {
			if v := abs(a[i*n+k]); v > big {
				big, p = v, i
			}
		}
		piv[k] = p
		if !(big > 0) || float64(big)-float64(big) != 0 { // zero, NaN or Inf
			return k
		}
		if p != k {
			rp, rk := a[p*n:p*n+n], a[k*n:k*n+n]
			for j := range rk {
				rk[j], rp[j] = rp[j], rk[j]
			}
			if scale != nil {
				scale[k], scale[p] = scale[p], scale[k]
			}
		}
		if scale != nil && big <= tiny*scale[k] {
			return k
		}
		rk := a[k*n+k+1 : k*n+n]
		inv := 1 / a[k*n+k]
		a[k*n+k] = inv
		for i := k + 1; i < n; i++ {
			l := a[i*n+k] * inv
			a[i*n+k] = l
			if l == 0 {
				continue
			}
			ri := a[i*n+k+1 : i*n+n]
			ri = ri[:len(rk)]
			for j, v := range rk {
				ri[j] -= l * v
			}
		}
	}
	return -1
}

// LUSolve solves A x = b in place with the factors of LUFactor: b becomes
// x.
func LUSolve[T Float](lu []T, n int, piv []int, b []T) {
	lu = lu[:n*n]
	b = b[:n]
	piv = piv[:n]
	for k, p := range piv {
		if p != k {
			b[k], b[p] = b[p], b[k]
		}
	}
	// L y = Pb, unit lower triangular.
	for i := 1; i < n; i++ {
		row := lu[i*n : i*n+i]
		s := b[i]
		for j, v := range row {
			s -= v * b[j]
		}
		b[i] = s
	}
	// U x = y, with 1/U_ii stored on the diagonal.
	for i := n - 1; i >= 0; i-- {
		row := lu[i*n+i : i*n+n]
		bi := b[i:n]
		bi = bi[:len(row)]
		s := bi[0]
		for j := 1; j < len(row); j++ {
			s -= row[j] * bi[j]
		}
		bi[0] = s * row[0]
	}
}

// LUSolveTranspose solves Aᵀ x = b in place with the factors of LUFactor:
// b becomes x. PA = LU, so Aᵀ = UᵀLᵀP: it solves Uᵀz = b, Lᵀy = z and
// sets x = Pᵀy.
func LUSolveTranspose[T Float](lu []T, n int, piv []int, b []T) {
	lu = lu[:n*n]
	b = b[:n]
	piv = piv[:n]
	// Uᵀ z = b: row i of U is column i of Uᵀ, 1/U_ii on the diagonal.
	for i := 0; i < n; i++ {
		s := b[i] * lu[i*n+i]
		b[i] = s
		if s == 0 {
			continue
		}
		row := lu[i*n+i+1 : i*n+n]
		rest := b[i+1:]
		rest = rest[:len(row)]
		for j, v := range row {
			rest[j] -= v * s
		}
	}
	// Lᵀ y = z, unit diagonal: row i of L is column i of Lᵀ.
	for i := n - 1; i > 0; i-- {
		s := b[i]
		if s == 0 {
			continue
		}
		for j, v := range lu[i*n : i*n+i] {
			b[j] -= v * s
		}
	}
	for k := n - 1; k >= 0; k-- {
		if p := piv[k]; p != k {
			b[k], b[p] = b[p], b[k]
		}
	}
}
