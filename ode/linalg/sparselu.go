package linalg

import (
	"fmt"
	"math"
	"slices"
)

// PivotTolerance is the threshold of SparseLU's partial pivoting: the
// diagonal entry is kept as the pivot while its magnitude is at least
// PivotTolerance times the largest in its column, and a refactorisation
// falls back to pivoting when a reused pivot drops below that fraction of
// its column. KLU's default is 1e-3, which allows element growth of up to
// a thousand a step; 0.1 (UMFPACK's) keeps the solves within a few digits
// of a dense partial-pivoting solve at little cost in fill on the
// diagonally strong matrices I − c·J of stiff solvers.
const PivotTolerance = 0.1

// SparseLU is a sparse LU factorisation of W = I − c·J (or of J itself)
// for a fixed sparsity pattern of J, in the manner of KLU.
//
// NewSparseLU analyses the pattern once: it adds the diagonal, orders
// rows and columns symmetrically by approximate minimum degree (AMD) on
// the pattern of W + Wᵀ, which suits the structurally symmetric patterns
// of discretised PDEs and reaction networks better than a column
// ordering, and finds the patterns of L and U for diagonal pivots. There
// is no block triangular form: the Jacobians of stiff ODEs are mostly
// irreducible.
//
// A factorisation reuses a pivot order and the patterns of L and U and
// does only the arithmetic (KLU's refactorisation), left-looking, with
// the columns of a supernode of L applied together. The first one reuses
// the diagonal pivots of the analysis. When a reused pivot is zero, not
// finite, or below PivotTolerance times the largest entry of its column
// of L, it falls back to a pivoting factorisation: left-looking (Gilbert
// and Peierls), each column's structure found by a depth-first search
// over the columns of L already computed (pruned symmetrically, as KLU
// does), its values by a sparse triangular solve, and its pivot by
// threshold partial pivoting that prefers the diagonal. Its pivot order
// and patterns are then the ones reused. Accepting the diagonal pivots of
// the analysis gives the same factors a pivoting factorisation would.
//
// Internally the factorisation is of Wᵀ, whose compressed columns are the
// compressed rows of W: P·Qᵀ·Wᵀ·Q = L·U with L unit lower triangular.
// Solve and SolveTranspose use the transposed and the plain triangular
// solves. Neither FactorShifted, Factor, Solve nor SolveTranspose
// allocates unless a pivoting factorisation needs more room for L and U
// than the analysis or an earlier one did.
//
// A SparseLU is not safe for concurrent use.
type SparseLU[T Float] struct {
	n int
	// q[k] is the row of W (column of Wᵀ) factored k-th; qinv its inverse.
	q, qinv []int32

	// The entries of Wᵀ by factored column k: acol[k]:acol[k+1] index
	// arow (row of Qᵀ·Wᵀ·Q), asrc (position in J's values) and atgt (row
	// in pivot order, set by each pivoting factorisation). The diagonal of
	// column k is row k; dsrc[k] is its position in J's values or −1.
	acol       []int
	arow, asrc []int32
	atgt       []int32
	dsrc       []int32

	// L (unit diagonal not stored) and U (diagonal in ud) by columns, row
	// indices in pivot order, each column ascending.
	lp, up []int
	li, ui []int32
	lx, ux []T
	ud     []T

	pinv   []int32 // row of Qᵀ·Wᵀ·Q → pivot position
	rowmap []int32 // row of Wᵀ → pivot position: pinv[qinv[i]]

	x     []T     // dense column, all zero between columns
	xs    []T     // a supernode's part of a column
	snEnd []int32 // last column of the supernode of L column j
	sn    []int32 // first columns of the supernodes, then n
	work  []T
	flag  []int32
	stack []int32
	pstk  []int
	lend  []int // end of the part of L's column searched, after pruning
	topo  []int32

	pnnz int // entries of J's pattern
	// Scratch of sortColumns: a transposed factor.
	tp    []int
	ti    []int32
	tx    []T
	valid bool // the last factorisation succeeded: solves may use it
	// pattern: the patterns of L and U and the pivot order can be reused.
	pattern bool
	// repivot asks the next factorisation to pivot anew.
	repivot bool
	stats   SparseLUStats
}

// SparseLUStats are the counters of a SparseLU.
type SparseLUStats struct {
	N        int // order of W
	NNZ      int // entries of W's pattern, the diagonal included
	NNZL     int // entries of L below the diagonal
	NNZU     int // entries of U, the diagonal included
	Factors  int // factorisations choosing pivots (after a fallback or Reset)
	Refactor int // factorisations reusing a pivot order, the first included
	Fallback int // refactorisations abandoned for a pivoting factorisation
	Singular int // factorisations that met a zero or non-finite pivot
	Flops    int // multiply-adds of one refactorisation
}

// NewSparseLU analyses the n×n pattern p of J for factorisations of
// W = I − c·J: it adds the diagonal when p lacks it and computes the AMD
// ordering. The values later given to Factor and FactorShifted follow p's
// order. A pattern that is malformed or not square is an error.
func NewSparseLU[T Float](p *Pattern) (*SparseLU[T], error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("linalg: NewSparseLU: %w", err)
	}
	if p.Rows != p.Cols {
		return nil, fmt.Errorf("linalg: NewSparseLU: pattern of %d×%d, want a square one", p.Rows, p.Cols)
	}
	perm, err := AMD(p)
	if err != nil {
		return nil, fmt.Errorf("linalg: NewSparseLU: %w", err)
	}
	return newSparseLUOrdered[T](p, perm), nil
}

// newSparseLUOrdered is NewSparseLU with the ordering perm given: row and
// column perm[k] of W are eliminated k-th.
func newSparseLUOrdered[T Float](p *Pattern, perm []int) *SparseLU[T] {
	n := p.Rows
	s := &SparseLU[T]{
		n: n, q: make([]int32, n), qinv: make([]int32, n),
		acol: make([]int, n+1), dsrc: make([]int32, n),
		lp: make([]int, n+1), up: make([]int, n+1), ud: make([]T, n),
		pinv: make([]int32, n), rowmap: make([]int32, n),
		x: make([]T, n), xs: make([]T, n), snEnd: make([]int32, n),
		work: make([]T, n), flag: make([]int32, n),
		stack: make([]int32, n), pstk: make([]int, n), lend: make([]int, n), topo: make([]int32, n),
	}
	for k, i := range perm {
		s.q[k], s.qinv[i] = int32(i), int32(k)
	}
	// Column k of Qᵀ·Wᵀ·Q is row q[k] of W, its rows the permuted columns.
	nnz := p.NNZ()
	s.arow = make([]int32, 0, nnz)
	s.asrc = make([]int32, 0, nnz)
	for k := 0; k < n; k++ {
		i := int(s.q[k])
		s.dsrc[k] = -1
		for e := p.RowPtr[i]; e < p.RowPtr[i+1]; e++ {
			j := p.ColIdx[e]
			if j == i {
				s.dsrc[k] = int32(e)
				continue
			}
			s.arow = append(s.arow, s.qinv[j])
			s.asrc = append(s.asrc, int32(e))
		}
		s.acol[k+1] = len(s.arow)
	}
	s.atgt = make([]int32, len(s.arow))
	s.pnnz = nnz
	s.stats.N, s.stats.NNZ = n, len(s.arow)+n
	// The patterns of L and U for the diagonal pivots, so that the first
	// factorisation is a refactorisation when they are acceptable.
	s.pivotFactor(nil, 0, 0)
	s.pattern = true
	return s
}

// Clone returns a SparseLU for the same pattern that shares s's analysis
// (the ordering and the map from J's values), with its own copy of the
// factors and the pivot order: for one solver per goroutine without
// repeating the analysis. The clone's counters start from zero.
func (s *SparseLU[T]) Clone() *SparseLU[T] {
	n := s.n
	c := &SparseLU[T]{
		n: n, q: s.q, qinv: s.qinv, acol: s.acol, arow: s.arow, asrc: s.asrc, dsrc: s.dsrc,
		atgt: slices.Clone(s.atgt),
		lp:   slices.Clone(s.lp), up: slices.Clone(s.up),
		li: slices.Clone(s.li), ui: slices.Clone(s.ui),
		lx: slices.Clone(s.lx), ux: slices.Clone(s.ux), ud: slices.Clone(s.ud),
		pinv: slices.Clone(s.pinv), rowmap: slices.Clone(s.rowmap),
		snEnd: slices.Clone(s.snEnd), sn: slices.Clone(s.sn), lend: slices.Clone(s.lend),
		x: make([]T, n), xs: make([]T, n), work: make([]T, n), flag: make([]int32, n),
		stack: make([]int32, n), pstk: make([]int, n), topo: make([]int32, n),
		pnnz: s.pnnz, valid: s.valid, pattern: s.pattern, repivot: s.repivot,
	}
	c.stats = SparseLUStats{N: n, NNZ: s.stats.NNZ, NNZL: s.stats.NNZL, NNZU: s.stats.NNZU, Flops: s.stats.Flops}
	return c
}

// Stats returns the counters of the factorisations so far and the sizes
// of the factors.
func (s *SparseLU[T]) Stats() SparseLUStats { return s.stats }

// Order returns the AMD ordering: the k-th row and column of W eliminated
// is Order()[k]. The slice is s's own and must not be modified.
func (s *SparseLU[T]) Order() []int32 { return s.q }

// Reset makes the next factorisation choose its pivots anew rather than
// reuse the last pivot order.
func (s *SparseLU[T]) Reset() { s.repivot = true }

// FactorShifted factors W = I − c·J, J's values in the order of the
// pattern given to NewSparseLU. It reuses the last pivot order (at first
// the diagonal) and falls back to threshold partial pivoting when a
// reused pivot is too small, and after a failed call or Reset. It
// returns −1, or the index (a row of W) whose elimination met a
// zero or non-finite pivot: W is then singular to working precision and
// s cannot solve until a later factorisation succeeds.
func (s *SparseLU[T]) FactorShifted(vals []T, c T) int {
	return s.factor(vals, -c, 1)
}

// Factor factors J itself (a diagonal missing from the pattern is 0), as
// FactorShifted does W.
func (s *SparseLU[T]) Factor(vals []T) int {
	return s.factor(vals, 1, 0)
}

// factor factors shift·I + scale·J.
func (s *SparseLU[T]) factor(vals []T, scale, shift T) int {
	if len(vals) != s.pnnz {
		panic(fmt.Sprintf("linalg: SparseLU: %d values, want the pattern's %d", len(vals), s.pnnz))
	}
	if s.pattern && !s.repivot {
		if s.refactor(vals, scale, shift) {
			s.valid = true
			s.stats.Refactor++
			return -1
		}
		s.stats.Fallback++
	}
	s.stats.Factors++
	s.repivot = false
	if k := s.pivotFactor(vals, scale, shift); k >= 0 {
		s.valid, s.pattern = false, false
		s.stats.Singular++
		return int(s.q[k])
	}
	s.valid, s.pattern = true, true
	return -1
}

// scatter writes column k of shift·I + scale·J (transposed and permuted)
// into s.x at the rows rows[e] gives.
func (s *SparseLU[T]) scatter(k int, vals []T, scale, shift T, rows []int32, diag int32) {
	x := s.x
	a, b := s.acol[k], s.acol[k+1]
	src := s.asrc[a:b]
	rows = rows[a:b:b]
	rows = rows[:len(src)]
	for e, r := range rows {
		x[r] = scale * vals[src[e]]
	}
	d := shift
	if ds := s.dsrc[k]; ds >= 0 {
		d += scale * vals[ds]
	}
	x[diag] = d
}

// pivotFactor factors with threshold partial pivoting, building the
// patterns of L and U anew. It returns −1, or the column where no usable
// pivot was found; s.x is left clean either way. With vals nil it builds
// the patterns for the diagonal pivots alone, with zero values.
func (s *SparseLU[T]) pivotFactor(vals []T, scale, shift T) int {
	n := s.n
	x, pinv, flag, topo := s.x, s.pinv, s.flag, s.topo
	for i := range pinv {
		pinv[i], flag[i] = -1, -1
	}
	s.li, s.lx = s.li[:0], s.lx[:0]
	s.ui, s.ux = s.ui[:0], s.ux[:0]
	for k := 0; k < n; k++ {
		// Structure of column k: the rows reachable in the graph of L from
		// the column's entries, in topological order in topo[top:].
		top := n
		for _, r := range s.arow[s.acol[k]:s.acol[k+1]] {
			if flag[r] != int32(k) {
				top = s.reach(r, int32(k), top)
			}
		}
		if flag[k] != int32(k) {
			top = s.reach(int32(k), int32(k), top)
		}
		if vals == nil {
			s.storeColumn(k, top, int32(k), 0)
			s.prune(k, int32(k))
			continue
		}
		s.scatter(k, vals, scale, shift, s.arow, int32(k))
		// Sparse triangular solve with the columns of L in topological order.
		for _, r := range topo[top:] {
			j := pinv[r]
			if j < 0 {
				continue
			}
			li, lx := s.lcol(int(j))
			axpyScatter(li, lx, x, x[r])
		}
		// A column with a non-finite entry has no usable pivot.
		var sum T
		for _, r := range topo[top:] {
			sum += x[r]
		}
		// Threshold partial pivoting among the rows not yet pivotal.
		piv, big := int32(-1), T(0)
		for _, r := range topo[top:] {
			if pinv[r] < 0 {
				if a := abs(x[r]); a > big || piv < 0 {
					piv, big = r, a
				}
			}
		}
		if pinv[k] < 0 && abs(x[k]) >= PivotTolerance*big {
			piv = int32(k)
		}
		var pv T
		if piv >= 0 {
			pv = x[piv]
		}
		if ap := abs(pv); !(ap > 0) || math.IsInf(float64(ap), 0) || sum-sum != 0 {
			for _, r := range topo[top:] {
				x[r] = 0
			}
			return k
		}
		s.storeColumn(k, top, piv, pv)
		s.prune(k, piv)
	}
	for t, r := range s.li {
		s.li[t] = pinv[r]
	}
	s.sortColumns(s.lp, s.li, s.lx)
	s.sortColumns(s.up, s.ui, s.ux)
	for e, r := range s.arow {
		s.atgt[e] = pinv[r]
	}
	for i := 0; i < n; i++ {
		s.rowmap[i] = pinv[s.qinv[i]]
	}
	s.findSupernodes()
	s.stats.NNZL, s.stats.NNZU = len(s.li), len(s.ui)+n
	flops := 0
	for k := 0; k < n; k++ {
		for _, j := range s.ui[s.up[k]:s.up[k+1]] {
			flops += s.lp[j+1] - s.lp[j]
		}
		flops += s.lp[k+1] - s.lp[k]
	}
	s.stats.Flops = flops
	return -1
}

// storeColumn appends column k, in s.x at the rows s.topo[top:], to L
// and U with the pivot row piv of value pv, and clears s.x.
func (s *SparseLU[T]) storeColumn(k, top int, piv int32, pv T) {
	x, pinv := s.x, s.pinv
	var inv T
	if pv != 0 {
		inv = 1 / pv
	}
	m := s.n - top
	s.li, s.lx = grow(s.li, m), grow(s.lx, m)
	s.ui, s.ux = grow(s.ui, m), grow(s.ux, m)
	for _, r := range s.topo[top:] {
		switch j := pinv[r]; {
		case j >= 0:
			s.ui = append(s.ui, j)
			s.ux = append(s.ux, x[r])
		case r != piv:
			s.li = append(s.li, r) // relabelled to pivot order at the end
			s.lx = append(s.lx, x[r]*inv)
		}
		x[r] = 0
	}
	pinv[piv] = int32(k)
	s.ud[k] = pv
	s.lp[k+1], s.up[k+1] = len(s.li), len(s.ui)
	s.lend[k] = s.lp[k+1]
}

// prune shortens the searched part of the columns of L that column k
// depends on (symmetric pruning, Eisenstat and Liu, as KLU does): when
// U(j, k) and L(piv, j) are both non-zero, every row of L(:, j) not yet
// pivotal is in L(:, k) too, so a search reaching j reaches them through
// row piv and column k. Column j's rows are reordered, pivotal ones first,
// and the search stops there.
func (s *SparseLU[T]) prune(k int, piv int32) {
	pinv := s.pinv
	for _, j := range s.ui[s.up[k]:s.up[k+1]] {
		l0, l1 := s.lp[j], s.lp[j+1]
		if s.lend[j] != l1 {
			continue // pruned already
		}
		li := s.li[l0:l1]
		found := false
		for _, r := range li {
			if r == piv {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		lx := s.lx[l0:l1]
		head, tail := 0, len(li)
		for head < tail {
			if pinv[li[head]] >= 0 {
				head++
				continue
			}
			tail--
			li[head], li[tail] = li[tail], li[head]
			lx[head], lx[tail] = lx[tail], lx[head]
		}
		s.lend[j] = l0 + head
	}
}

// reach runs a depth-first search from row r in the graph of the columns
// of L computed so far (row r leads to column pinv[r] when r is pivotal),
// marking rows with flag k and pushing each finished row onto topo below
// top. It returns the new top.
func (s *SparseLU[T]) reach(r, k int32, top int) int {
	stack, pstk, flag, pinv := s.stack, s.pstk, s.flag, s.pinv
	h := 0
	stack[0] = r
	flag[r] = k
	if j := pinv[r]; j >= 0 {
		pstk[0] = s.lp[j]
	}
	for h >= 0 {
		r := stack[h]
		j := pinv[r]
		done := true
		if j >= 0 {
			end := s.lend[j]
			for t := pstk[h]; t < end; t++ {
				c := s.li[t]
				if flag[c] == k {
					continue
				}
				pstk[h] = t + 1
				h++
				stack[h] = c
				flag[c] = k
				if jc := pinv[c]; jc >= 0 {
					pstk[h] = s.lp[jc]
				}
				done = false
				break
			}
		}
		if done {
			h--
			top--
			s.topo[top] = r
		}
	}
	return top
}

// sortColumns sorts the row indices of each column of a compressed
// column matrix ascending, carrying the values along, by transposing it
// twice (counting sorts) through s's scratch.
func (s *SparseLU[T]) sortColumns(cp []int, ci []int32, cx []T) {
	n, nnz := s.n, len(ci)
	s.tp = grow(s.tp[:0], n+1)[:n+1]
	s.ti = grow(s.ti[:0], nnz)[:nnz]
	s.tx = grow(s.tx[:0], nnz)[:nnz]
	tp, ti, tx, next := s.tp, s.ti, s.tx, s.pstk
	// Rows: count, offsets, then fill by columns in order.
	clear(tp)
	for _, r := range ci {
		tp[r+1]++
	}
	for i := 0; i < n; i++ {
		tp[i+1] += tp[i]
	}
	copy(next, tp[:n])
	for k := 0; k < n; k++ {
		for e := cp[k]; e < cp[k+1]; e++ {
			r := ci[e]
			ti[next[r]], tx[next[r]] = int32(k), cx[e]
			next[r]++
		}
	}
	// Back to columns, rows now ascending in each.
	copy(next, cp[:n])
	for r := 0; r < n; r++ {
		for e := tp[r]; e < tp[r+1]; e++ {
			k := ti[e]
			ci[next[k]], cx[next[k]] = int32(r), tx[e]
			next[k]++
		}
	}
}

// grow returns s with room for m more elements, doubling its capacity
// when it must grow so that a factorisation's appends copy little.
func grow[E any](s []E, m int) []E {
	if len(s)+m <= cap(s) {
		return s
	}
	t := make([]E, len(s), max(2*cap(s), len(s)+m))
	copy(t, s)
	return t
}
