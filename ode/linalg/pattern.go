package linalg

import (
	"fmt"
	"slices"
)

// Float is the element type of the solvers: float32, float64 or a type
// defined on one of them.
type Float interface{ ~float32 | ~float64 }

// Pattern is the sparsity pattern of a Rows×Cols matrix in compressed
// sparse row form. The column indices of row i are
// ColIdx[RowPtr[i]:RowPtr[i+1]], strictly ascending. Values that follow a
// pattern are stored in the same order: entry k of a value slice belongs
// to row i with RowPtr[i] ≤ k < RowPtr[i+1] and column ColIdx[k].
//
// A Pattern is not modified by the functions of this package, so one
// value may be shared by any number of solvers and goroutines.
type Pattern struct {
	Rows, Cols int
	RowPtr     []int // len Rows+1, RowPtr[0] = 0
	ColIdx     []int // len RowPtr[Rows]
}

// Entry is a position (Row, Col) of a matrix.
type Entry struct{ Row, Col int }

// NewPattern builds the pattern of a rows×cols matrix from its non-zero
// positions, in any order. Repeated positions count once. A position
// outside the matrix is an error naming it.
func NewPattern(rows, cols int, entries []Entry) (*Pattern, error) {
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("linalg: NewPattern: %d×%d matrix, want non-negative dimensions", rows, cols)
	}
	count := make([]int, rows+1)
	for _, e := range entries {
		if e.Row < 0 || e.Row >= rows || e.Col < 0 || e.Col >= cols {
			return nil, fmt.Errorf("linalg: NewPattern: entry (%d, %d) is outside the %d×%d matrix", e.Row, e.Col, rows, cols)
		}
		count[e.Row+1]++
	}
	for i := 0; i < rows; i++ {
		count[i+1] += count[i]
	}
	col := make([]int, len(entries))
	next := slices.Clone(count[:rows])
	for _, e := range entries {
		col[next[e.Row]] = e.Col
		next[e.Row]++
	}
	// Sort each row and drop repeats, compacting in place.
	p := &Pattern{Rows: rows, Cols: cols, RowPtr: make([]int, rows+1)}
	k := 0
	for i := 0; i < rows; i++ {
		row := col[count[i]:count[i+1]]
		slices.Sort(row)
		for j, c := range row {
			if j > 0 && c == row[j-1] {
				continue
			}
			col[k] = c
			k++
		}
		p.RowPtr[i+1] = k
	}
	p.ColIdx = slices.Clip(col[:k])
	return p, nil
}

// BandPattern is the pattern of an n×n band matrix with lower bandwidth
// lower and upper bandwidth upper: entry (i, j) is present when
// −lower ≤ j − i ≤ upper.
func BandPattern(n, lower, upper int) *Pattern {
	var e []Entry
	for i := 0; i < n; i++ {
		for j := max(0, i-lower); j <= min(n-1, i+upper); j++ {
			e = append(e, Entry{i, j})
		}
	}
	p, err := NewPattern(n, n, e)
	if err != nil {
		panic(err) // unreachable: every entry is inside the matrix
	}
	return p
}

// NNZ is the number of entries of the pattern.
func (p *Pattern) NNZ() int { return p.RowPtr[p.Rows] }

// Row returns the column indices of row i, a view into ColIdx.
func (p *Pattern) Row(i int) []int { return p.ColIdx[p.RowPtr[i]:p.RowPtr[i+1]] }

// Index returns the position of entry (i, j) in ColIdx and in value
// slices that follow the pattern, or −1 when the pattern lacks it.
func (p *Pattern) Index(i, j int) int {
	if i < 0 || i >= p.Rows {
		return -1
	}
	lo, hi := p.RowPtr[i], p.RowPtr[i+1]
	k, ok := slices.BinarySearch(p.ColIdx[lo:hi], j)
	if !ok {
		return -1
	}
	return lo + k
}

// Has reports whether the pattern has entry (i, j).
func (p *Pattern) Has(i, j int) bool { return p.Index(i, j) >= 0 }

// Bandwidths returns the lower and upper bandwidths of the pattern: the
// largest i − j and j − i over its entries, each at least 0.
func (p *Pattern) Bandwidths() (lower, upper int) {
	for i := 0; i < p.Rows; i++ {
		for _, j := range p.Row(i) {
			lower, upper = max(lower, i-j), max(upper, j-i)
		}
	}
	return lower, upper
}

// Validate checks that p is a well-formed pattern: RowPtr has Rows+1
// non-decreasing offsets from 0 to len(ColIdx), and each row's columns
// are in [0, Cols) and strictly ascending. The error names the first
// offending row.
func (p *Pattern) Validate() error {
	if p == nil {
		return fmt.Errorf("linalg: the pattern is nil, want a *Pattern")
	}
	if p.Rows < 0 || p.Cols < 0 {
		return fmt.Errorf("linalg: pattern of %d×%d, want non-negative dimensions", p.Rows, p.Cols)
	}
	if len(p.RowPtr) != p.Rows+1 {
		return fmt.Errorf("linalg: pattern has len(RowPtr) = %d, want Rows+1 = %d", len(p.RowPtr), p.Rows+1)
	}
	if p.RowPtr[0] != 0 || p.RowPtr[p.Rows] != len(p.ColIdx) {
		return fmt.Errorf("linalg: pattern's RowPtr runs from %d to %d, want 0 to len(ColIdx) = %d", p.RowPtr[0], p.RowPtr[p.Rows], len(p.ColIdx))
	}
	for i := 0; i < p.Rows; i++ {
		if p.RowPtr[i+1] < p.RowPtr[i] {
			return fmt.Errorf("linalg: pattern's RowPtr decreases at row %d (%d then %d), want non-decreasing offsets", i, p.RowPtr[i], p.RowPtr[i+1])
		}
		prev := -1
		for _, j := range p.Row(i) {
			if j < 0 || j >= p.Cols {
				return fmt.Errorf("linalg: pattern's row %d has column %d, want one in [0, %d)", i, j, p.Cols)
			}
			if j <= prev {
				return fmt.Errorf("linalg: pattern's row %d has columns %d then %d, want them strictly ascending", i, prev, j)
			}
			prev = j
		}
	}
	return nil
}

// Transpose returns the pattern of the transposed matrix, with the
// position in p of each of its entries: entry k of the result is entry
// perm[k] of p.
func (p *Pattern) Transpose() (t *Pattern, perm []int) {
	t = &Pattern{Rows: p.Cols, Cols: p.Rows, RowPtr: make([]int, p.Cols+1), ColIdx: make([]int, p.NNZ())}
	perm = make([]int, p.NNZ())
	for _, j := range p.ColIdx {
		t.RowPtr[j+1]++
	}
	for j := 0; j < p.Cols; j++ {
		t.RowPtr[j+1] += t.RowPtr[j]
	}
	next := slices.Clone(t.RowPtr[:p.Cols])
	for i := 0; i < p.Rows; i++ {
		for k := p.RowPtr[i]; k < p.RowPtr[i+1]; k++ {
			j := p.ColIdx[k]
			t.ColIdx[next[j]] = i
			perm[next[j]] = k
			next[j]++
		}
	}
	return t, perm
}
