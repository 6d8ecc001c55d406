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
		u0, u1 := s.up[k], s.up[k+1]
		ui, ux := s.ui[u0:u1], s.ux[u0:u1]
		ux = ux[:len(ui)]
		sum := w[k]
		for e, j := range ui {
			sum -= ux[e] * w[j]
		}
		w[k] = sum / s.ud[k]
	}
	// Lᵀ is unit upper triangular: backward, by supernodes.
	for b := len(s.sn) - 2; b >= 0; b-- {
		j, end := int(s.sn[b]), int(s.sn[b+1])-1
		if end-j >= 3 {
			s.dotSupernode(w, j, end)
			continue
		}
		for k := end; k >= j; k-- {
			l0, l1 := s.lp[k], s.lp[k+1]
			li, lx := s.li[l0:l1], s.lx[l0:l1]
			lx = lx[:len(li)]
			sum := w[k]
			for e, r := range li {
				sum -= lx[e] * w[r]
			}
			w[k] = sum
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
			l0, l1 := s.lp[k], s.lp[k+1]
			li, lx := s.li[l0:l1], s.lx[l0:l1]
			lx = lx[:len(li)]
			wk := w[k]
			for e, r := range li {
				w[r] -= lx[e] * wk
			}
		}
	}
	for k := s.n - 1; k >= 0; k-- {
		u0, u1 := s.up[k], s.up[k+1]
		ui, ux := s.ui[u0:u1], s.ux[u0:u1]
		ux = ux[:len(ui)]
		wk := w[k] / s.ud[k]
		w[k] = wk
		for e, j := range ui {
			w[j] -= ux[e] * wk
		}
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
