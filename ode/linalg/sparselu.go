package linalg

import (
	"fmt"
	"math"
	"sort"
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
// NewSparseLU analyses the pattern once: it adds the diagonal, and orders
// rows and columns symmetrically by approximate minimum degree (AMD) on
// the pattern of W + Wᵀ, which suits the structurally symmetric patterns
// of discretised PDEs and reaction networks better than a column
// ordering. There is no block triangular form: the Jacobians of stiff
// ODEs are mostly irreducible.
//
// The first factorisation is left-looking (Gilbert and Peierls): for each
// column, a depth-first search over the columns of L already computed
// finds the structure of the column, a sparse triangular solve its
// values, and the pivot is chosen by threshold partial pivoting that
// prefers the diagonal. Later factorisations of new values on the same
// pattern reuse the pivot order and the patterns of L and U and do only
// the arithmetic (KLU's refactorisation), falling back to a pivoting
// factorisation when a reused pivot is too small against its column.
//
// Internally the factorisation is of Wᵀ, whose compressed columns are the
// compressed rows of W: P·Qᵀ·Wᵀ·Q = L·U with L unit lower triangular.
// Solve and SolveTranspose use the transposed and the plain triangular
// solves. After the first factorisation, neither FactorShifted, Factor,
// Solve nor SolveTranspose allocates unless a fallback factorisation
// needs more room for L and U.
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
	work  []T
	flag  []int32
	stack []int32
	pstk  []int
	topo  []int32

	pnnz   int // entries of J's pattern
	sorter columnSorter[T]
	valid  bool // the last factorisation succeeded
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
	Factors  int // factorisations with pivoting (the first, and fallbacks)
	Refactor int // refactorisations reusing the pivot order
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
		stack: make([]int32, n), pstk: make([]int, n), topo: make([]int32, n),
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
	return s
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
// pattern given to NewSparseLU. The first call, and any call after a
// failed one, factors with threshold partial pivoting; later calls reuse
// the pivot order and fall back to pivoting when a reused pivot is too
// small. It returns −1, or the index (a row of W) whose elimination met a
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
	if s.valid && !s.repivot {
		if s.refactor(vals, scale, shift) {
			s.stats.Refactor++
			return -1
		}
		s.stats.Fallback++
	}
	s.stats.Factors++
	if k := s.pivotFactor(vals, scale, shift); k >= 0 {
		s.valid, s.repivot = false, false
		s.stats.Singular++
		return int(s.q[k])
	}
	s.valid, s.repivot = true, false
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

func abs[T Float](v T) T {
	if v < 0 {
		return -v
	}
	return v
}

// pivotFactor factors with threshold partial pivoting, building the
// patterns of L and U anew. It returns −1, or the column where no usable
// pivot was found; s.x is left clean either way.
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
		s.scatter(k, vals, scale, shift, s.arow, int32(k))
		// Sparse triangular solve with the columns of L in topological order.
		for _, r := range topo[top:] {
			j := pinv[r]
			if j < 0 {
				continue
			}
			xj := x[r]
			l0, l1 := s.lp[j], s.lp[j+1]
			li, lx := s.li[l0:l1], s.lx[l0:l1]
			lx = lx[:len(li)]
			for t, i := range li {
				x[i] -= lx[t] * xj
			}
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
		if ap := abs(pv); !(ap > 0) || math.IsInf(float64(ap), 0) {
			for _, r := range topo[top:] {
				x[r] = 0
			}
			return k
		}
		inv := 1 / pv
		for _, r := range topo[top:] {
			switch j := pinv[r]; {
			case j >= 0:
				s.ui = append(s.ui, j)
				s.ux = append(s.ux, x[r])
			case r != piv:
				s.li = append(s.li, r) // relabelled to pivot order below
				s.lx = append(s.lx, x[r]*inv)
			}
			x[r] = 0
		}
		pinv[piv] = int32(k)
		s.ud[k] = pv
		s.lp[k+1], s.up[k+1] = len(s.li), len(s.ui)
	}
	for t, r := range s.li {
		s.li[t] = pinv[r]
	}
	for k := 0; k < n; k++ {
		s.sortColumn(s.ui[s.up[k]:s.up[k+1]], s.ux[s.up[k]:s.up[k+1]])
		s.sortColumn(s.li[s.lp[k]:s.lp[k+1]], s.lx[s.lp[k]:s.lp[k+1]])
	}
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
			end := s.lp[j+1]
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

// sortColumn sorts the row indices of a column ascending, carrying the
// values along: insertion sort for short columns, sort.Sort otherwise.
func (s *SparseLU[T]) sortColumn(idx []int32, val []T) {
	val = val[:len(idx)]
	if len(idx) > 32 {
		s.sorter.idx, s.sorter.val = idx, val
		sort.Sort(&s.sorter)
		s.sorter.idx, s.sorter.val = nil, nil
		return
	}
	for a := 1; a < len(idx); a++ {
		i, v := idx[a], val[a]
		b := a
		for b > 0 && idx[b-1] > i {
			idx[b], val[b] = idx[b-1], val[b-1]
			b--
		}
		idx[b], val[b] = i, v
	}
}

// columnSorter sorts a column's row indices with its values.
type columnSorter[T Float] struct {
	idx []int32
	val []T
}

func (c *columnSorter[T]) Len() int           { return len(c.idx) }
func (c *columnSorter[T]) Less(a, b int) bool { return c.idx[a] < c.idx[b] }
func (c *columnSorter[T]) Swap(a, b int) {
	c.idx[a], c.idx[b] = c.idx[b], c.idx[a]
	c.val[a], c.val[b] = c.val[b], c.val[a]
}
