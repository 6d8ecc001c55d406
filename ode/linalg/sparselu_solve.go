package linalg

import "fmt"

// Solve overwrites x with W⁻¹x, W as last factored. It panics when the
// last factorisation failed or len(x) is not the order of W.
func (s *SparseLU[T]) Solve(x []T) {
	s.check(x)
	// W = (Wᵀ)ᵀ and P·Qᵀ·Wᵀ·Q = L·U, so W·x = b is Uᵀ·Lᵀ·y = Qᵀb with
	// x[i] = y[rowmap[i]].
	w := s.work
	for k, i := range s.q {
		w[k] = x[i]
	}
	// Uᵀ is lower triangular: forward, by dot products with U's columns.
	for k := 0; k < s.n; k++ {
		ui, ux := s.ucol(k)
		w[k] = (w[k] - dotGather(ui, ux, w)) / s.ud[k]
	}
	// Lᵀ is unit upper triangular: backward, by supernodes.
	for b := len(s.sn) - 2; b >= 0; b-- {
		j, end := int(s.sn[b]), int(s.sn[b+1])-1
		if end-j >= 3 {
			s.dotSupernode(w, j, end)
			continue
		}
		for k := end; k >= j; k-- {
			li, lx := s.lcol(k)
			w[k] -= dotGather(li, lx, w)
		}
	}
	for i, r := range s.rowmap {
		x[i] = w[r]
	}
}

// SolveTranspose overwrites x with W⁻ᵀx, W as last factored. It panics
// when the last factorisation failed or len(x) is not the order of W.
func (s *SparseLU[T]) SolveTranspose(x []T) {
	s.check(x)
	// Wᵀ·x = b is L·U·y = P·b with x[q[k]] = y[k].
	w := s.work
	for i, r := range s.rowmap {
		w[r] = x[i]
	}
	for b := 0; b+1 < len(s.sn); b++ {
		j, end := int(s.sn[b]), int(s.sn[b+1])-1
		if end-j >= 3 {
			s.updateSupernode(w, j, end, nil)
			continue
		}
		for k := j; k <= end; k++ {
			li, lx := s.lcol(k)
			axpyScatter(li, lx, w, w[k])
		}
	}
	for k := s.n - 1; k >= 0; k-- {
		ui, ux := s.ucol(k)
		w[k] /= s.ud[k]
		axpyScatter(ui, ux, w, w[k])
	}
	for k, i := range s.q {
		x[i] = w[k]
	}
}

func (s *SparseLU[T]) check(x []T) {
	if !s.valid {
		panic("linalg: SparseLU: solve without a successful factorisation")
	}
	if len(x) != s.n {
		panic(fmt.Sprintf("linalg: SparseLU: solve of %d values, want %d", len(x), s.n))
	}
}

// lcol returns the row indices and values of column k of L.
func (s *SparseLU[T]) lcol(k int) ([]int32, []T) {
	a, b := s.lp[k], s.lp[k+1]
	return s.li[a:b:b], s.lx[a:b:b]
}

// ucol returns the row indices and values of column k of U, without the
// diagonal.
func (s *SparseLU[T]) ucol(k int) ([]int32, []T) {
	a, b := s.up[k], s.up[k+1]
	return s.ui[a:b:b], s.ux[a:b:b]
}

// dotGather returns the sum of val[e]·w[idx[e]].
func dotGather[T Float](idx []int32, val, w []T) T {
	val = val[:len(idx)]
	var sum T
	for e, r := range idx {
		sum += val[e] * w[r]
	}
	return sum
}

// axpyScatter subtracts val[e]·a from x[idx[e]].
func axpyScatter[T Float](idx []int32, val, x []T, a T) {
	val = val[:len(idx)]
	for e, r := range idx {
		x[r] -= val[e] * a
	}
}
