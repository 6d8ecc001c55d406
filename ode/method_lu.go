package ode

// Dense LU factorisation with partial pivoting for the small systems of the
// stiff methods, with n up to a few hundred. It is generic over the state
// type and accumulates in it. Matrices are row-major n×n. The
// factorisation is in place: L below the diagonal with a unit diagonal, U
// above it, and the reciprocals 1/U_kk on the diagonal, so that a solve
// multiplies instead of dividing. piv[k] is the row swapped with row k at
// step k, LAPACK's getrf convention. The elimination is right-looking by
// rows, so the inner loop runs over contiguous memory.

// luFactor factors the row-major n×n matrix a in place. It returns −1 on
// success, or the column of the first pivot that is zero or not finite. a
// is then left partly factored and must not be used to solve.
//
// scale, if not nil, holds a magnitude per row of a, permuted with the
// rows. A pivot below 4ε·scale of its row counts as zero too. A caller that
// forms a = I − c·J passes max(1, max_j |c·J_ij|). So a row cancelled to
// rounding noise is caught as singular, instead of producing a solution
// amplified by 1/ε.
func luFactor[T Float](a []T, n int, piv []int, scale []T) int {
	a = a[:n*n]
	piv = piv[:n]
	tiny := T(0)
	if scale != nil {
		scale = scale[:n]
		tiny = 4 * T(0x1p-52)
		if T(1)+T(0x1p-30) == T(1) { // float32
			tiny = 4 * T(0x1p-23)
		}
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

// luSolve solves A x = b in place with the factors of luFactor: b becomes
// x.
func luSolve[T Float](lu []T, n int, piv []int, b []T) {
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

// luPerm turns luFactor's sequence of row swaps into a permutation: row i
// of PA is row perm[i] of A.
func luPerm(piv, perm []int) {
	for i := range perm {
		perm[i] = i
	}
	for k, p := range piv {
		perm[k], perm[p] = perm[p], perm[k]
	}
}

// luSolveSmall is luSolve unrolled for n ≤ 3, with the permutation of
// luPerm, because the loops' overhead is most of the work at that size.
// It reports false for larger n.
func luSolveSmall[T Float](lu []T, n int, perm []int, b []T) bool {
	switch n {
	case 1:
		b[0] *= lu[0]
	case 2:
		lu = lu[:4]
		b = b[:2]
		y0 := b[perm[0]]
		y1 := b[perm[1]] - lu[2]*y0
		x1 := y1 * lu[3]
		b[0], b[1] = (y0-lu[1]*x1)*lu[0], x1
	case 3:
		lu = lu[:9]
		b = b[:3]
		perm = perm[:3]
		y0 := b[perm[0]]
		y1 := b[perm[1]] - lu[3]*y0
		y2 := b[perm[2]] - lu[6]*y0 - lu[7]*y1
		x2 := y2 * lu[8]
		x1 := (y1 - lu[5]*x2) * lu[4]
		b[0], b[1], b[2] = (y0-lu[1]*x1-lu[2]*x2)*lu[0], x1, x2
	default:
		return false
	}
	return true
}

func abs[T Float](x T) T {
	if x < 0 {
		return -x
	}
	return x
}
