package ode

// The dense LU of the stiff methods is linalg.LUFactor and linalg.LUSolve;
// this file keeps the unrolled solves of the smallest systems.

// luPerm turns linalg.LUFactor's sequence of row swaps into a permutation: row i
// of PA is row perm[i] of A.
func luPerm(piv, perm []int) {
	for i := range perm {
		perm[i] = i
	}
	for k, p := range piv {
		perm[k], perm[p] = perm[p], perm[k]
	}
}

// luSolveSmall is linalg.LUSolve unrolled for n ≤ 3, with the permutation of
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
