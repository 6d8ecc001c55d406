package linalg

import (
	"math"
	"slices"
)

// findSupernodes sets snEnd: columns j..snEnd[j] of L form a supernode
// when each column's rows are the next column and that column's rows.
// Their rows below the supernode are then shared, and a refactorisation
// updates a column with several of them at once.
func (s *SparseLU[T]) findSupernodes() {
	n := s.n
	s.sn = s.sn[:0]
	if n == 0 {
		return
	}
	s.snEnd[n-1] = int32(n - 1)
	for j := n - 2; j >= 0; j-- {
		s.snEnd[j] = int32(j)
		a := s.li[s.lp[j]:s.lp[j+1]]
		b := s.li[s.lp[j+1]:s.lp[j+2]]
		if len(a) == len(b)+1 && a[0] == int32(j+1) && slices.Equal(a[1:], b) {
			s.snEnd[j] = s.snEnd[j+1]
		}
	}
	for j := 0; j < n; j = int(s.snEnd[j]) + 1 {
		s.sn = append(s.sn, int32(j))
	}
	s.sn = append(s.sn, int32(n))
}

// dotSupernode does the part of the backward solve with Lᵀ for the
// columns j..end of one supernode of L: w[t] −= L(:, t)ᵀ·w for t from end
// down to j. The rows below the supernode, shared, go four columns at a
// time.
func (s *SparseLU[T]) dotSupernode(w []T, j, end int) {
	rows := s.li[s.lp[end]:s.lp[end+1]]
	m := len(rows)
	shared := func(t int) []T {
		b := s.lp[t] + end - t
		return s.lx[b : b+m : b+m]
	}
	d := s.xs[:end-j+1]
	t := j
	for ; t+3 <= end; t += 4 {
		s0, s1, s2, s3 := shared(t), shared(t+1), shared(t+2), shared(t+3)
		var d0, d1, d2, d3 T
		for i, r := range rows {
			wr := w[r]
			d0 += s0[i] * wr
			d1 += s1[i] * wr
			d2 += s2[i] * wr
			d3 += s3[i] * wr
		}
		d[t-j], d[t-j+1], d[t-j+2], d[t-j+3] = d0, d1, d2, d3
	}
	for ; t <= end; t++ {
		sh := shared(t)
		var dt T
		for i, r := range rows {
			dt += sh[i] * w[r]
		}
		d[t-j] = dt
	}
	// The triangle inside the supernode, backward.
	for t := end; t >= j; t-- {
		in := s.lx[s.lp[t] : s.lp[t]+end-t]
		wr := w[t+1 : end+1]
		in = in[:len(wr)]
		sum := d[t-j]
		for i, v := range in {
			sum += v * wr[i]
		}
		w[t] -= sum
	}
}

// refactor redoes the arithmetic of the last pivoting factorisation with
// new values. It reports false, leaving s.x clean, when a pivot is zero,
// not finite, or smaller than PivotTolerance times the largest entry of
// its column of L.
//
// Column k of U is computed left-looking: x = column k of the matrix,
// then for each row j of U's column, ascending, x −= L(:, j)·x[j]. Runs
// of those rows that are columns of one supernode of L share their rows
// below it, and are applied four columns at a time.
func (s *SparseLU[T]) refactor(vals []T, scale, shift T) bool {
	x := s.x
	for k := 0; k < s.n; k++ {
		s.scatter(k, vals, scale, shift, s.atgt, s.pinv[k])
		ui, ux := s.ucol(k)
		ux = ux[:len(ui)]
		var sum T // of the column's entries: NaN if one is not finite
		for e := 0; e < len(ui); {
			j := int(ui[e])
			end := min(int(s.snEnd[j]), k-1)
			w := end - j + 1
			if w >= 4 && e+w <= len(ui) && int(ui[e+w-1]) == end {
				s.updateSupernode(x, j, end, ux[e:e+w])
				for _, v := range ux[e : e+w] {
					sum += v
				}
				e += w
				continue
			}
			xj := x[j]
			ux[e] = xj
			x[j] = 0
			li, lx := s.lcol(j)
			axpyScatter(li, lx, x, xj)
			sum += xj
			e++
		}
		piv := x[k]
		x[k] = 0
		li, lx := s.lcol(k)
		lx = lx[:len(li)]
		var big T
		for t, r := range li {
			v := x[r]
			x[r] = 0
			lx[t] = v
			big = max(big, abs(v))
		}
		sum += big
		ap := abs(piv)
		if !(ap > 0) || math.IsInf(float64(ap), 0) || ap < PivotTolerance*big || sum-sum != 0 {
			return false
		}
		inv := 1 / piv
		for t := range lx {
			lx[t] *= inv
		}
		s.ud[k] = piv
	}
	return true
}

// updateSupernode applies columns j..end of L, part of one supernode, to
// the dense column x (x −= L(:, j..end)·x[j..end], x[j..end] final
// first). With ux non-nil it moves x[j..end] to ux, clearing them.
// Column t of the run holds rows t+1..end first, then the rows of column
// end, which every column of the run shares. Columns go four at a time:
// the small triangle among them, then the rows below in the run (stored
// contiguously in x), then the shared rows.
func (s *SparseLU[T]) updateSupernode(x []T, j, end int, ux []T) {
	rows := s.li[s.lp[end]:s.lp[end+1]]
	m := len(rows)
	// below returns column t's values for the rows from..end of the run
	// and its shared values.
	below := func(t, from int) ([]T, []T) {
		b := s.lp[t] + end - t
		return s.lx[s.lp[t]+from-t-1 : b : b], s.lx[b : b+m : b+m]
	}
	t := j
	for ; t+3 <= end; t += 4 {
		// Triangle: rows t+1..t+3 from columns t..t+2.
		l0 := s.lx[s.lp[t]:]
		l1 := s.lx[s.lp[t+1]:]
		l2 := s.lx[s.lp[t+2]:]
		x0 := x[t]
		x1 := x[t+1] - l0[0]*x0
		x2 := x[t+2] - l0[1]*x0 - l1[0]*x1
		x3 := x[t+3] - l0[2]*x0 - l1[1]*x1 - l2[0]*x2
		if ux != nil {
			x[t], x[t+1], x[t+2], x[t+3] = 0, 0, 0, 0
			ux[t-j], ux[t-j+1], ux[t-j+2], ux[t-j+3] = x0, x1, x2, x3
		} else {
			x[t+1], x[t+2], x[t+3] = x1, x2, x3
		}
		// Rows t+4..end of the run.
		a0, s0 := below(t, t+4)
		a1, s1 := below(t+1, t+4)
		a2, s2 := below(t+2, t+4)
		a3, s3 := below(t+3, t+4)
		xr := x[t+4 : end+1]
		a0, a1, a2, a3 = a0[:len(xr)], a1[:len(xr)], a2[:len(xr)], a3[:len(xr)]
		for i := range xr {
			xr[i] -= a0[i]*x0 + a1[i]*x1 + a2[i]*x2 + a3[i]*x3
		}
		// The shared rows.
		for i, r := range rows {
			x[r] -= s0[i]*x0 + s1[i]*x1 + s2[i]*x2 + s3[i]*x3
		}
	}
	for ; t <= end; t++ {
		xt := x[t]
		if ux != nil {
			x[t] = 0
			ux[t-j] = xt
		}
		a, sh := below(t, t+1)
		xr := x[t+1 : end+1]
		a = a[:len(xr)]
		for i := range xr {
			xr[i] -= a[i] * xt
		}
		for i, r := range rows {
			x[r] -= sh[i] * xt
		}
	}
}
