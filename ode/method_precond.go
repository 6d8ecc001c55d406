package ode

import (
	"github.com/flatkit/flatkit/ode/linalg"
)

// precSys is a preconditioner of GMRES: an approximation of J in its own
// storage, from coloured sweeps (colJac: JVPs when Problem.JVP is set,
// else differences of F), and the LU of P = I − c·J_P. It never uses
// Problem.Jac, whose storage is the problem's structure.
//
// BandPreconditioner keeps the band of the given bandwidths, with CVODE's
// band difference quotients (its CVBandPre) and a band LU.
// BlockDiagonalPreconditioner keeps the diagonal Block×Block blocks, with
// Block groups of columns (column j in group j mod Block) and a block LU.
// Entries of J outside the kept band or blocks are not dropped but summed
// into the kept entries of their row whose column shares their group, as
// with any colouring that ignores them: for a block-diagonal preconditioner
// of a reaction–diffusion system, the diffusion coupling of a species
// lands on its own diagonal entry.
type precSys[T Float] struct {
	cj   *colJac[T]
	vals []T
	lu   shiftedLU[T]
}

func newBandPrec[T Float](n, lower, upper int) *precSys[T] {
	lower, upper = min(lower, max(n-1, 0)), min(upper, max(n-1, 0))
	return &precSys[T]{
		cj:   bandColJac[T](n, lower, upper),
		vals: padded[T](n * (lower + upper + 1)),
		lu:   linalg.NewBandLU[T](n, lower, upper),
	}
}

// newBlockPrec is the block-diagonal preconditioner; block divides n. The
// blocks are stored one after another, each row-major, as linalg.BlockLU
// takes them. With full, the pattern of J when the structure gives one,
// the columns are grouped by its colouring, so that the blocks are exact;
// otherwise column j is in group j mod block.
func newBlockPrec[T Float](n, block int, full *linalg.Pattern) *precSys[T] {
	var e []linalg.Entry
	colours := make([]int, n)
	for i := 0; i < n; i++ {
		colours[i] = i % block
		b0 := i / block * block
		for j := b0; j < b0+block; j++ {
			if full == nil || full.Has(i, j) {
				e = append(e, linalg.Entry{Row: i, Col: j})
			}
		}
	}
	k := min(block, n)
	if full != nil {
		colours, k = linalg.Colour(full)
	}
	p, err := linalg.NewPattern(n, n, e)
	if err != nil {
		panic(err) // unreachable: the blocks are inside the matrix
	}
	pos := func(i, j int) int { return i/block*block*block + i%block*block + j%block }
	return &precSys[T]{
		cj:   newColJac[T](p, colours, k, pos),
		vals: padded[T](n * block),
		lu:   linalg.NewBlockLU[T](n, block),
	}
}

// jacobian evaluates the preconditioner's J at t and u, where f0 = F(u, t),
// counting one JacEval. It reports false, with fail set, when J is not
// finite.
func (p *precSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64, fail *lsFail) bool {
	it.stats.JacEvals++
	fail.userJac = false
	p.cj.eval(it, p.vals, t, u, f0, h)
	return finiteJac(p.vals, p.entry, fail)
}

// entry is the row and column of position k of vals, for the errors.
func (p *precSys[T]) entry(k int) (i, j int) {
	for j := 0; j < p.cj.n; j++ {
		for x := p.cj.colPtr[j]; x < p.cj.colPtr[j+1]; x++ {
			if p.cj.colPos[x] == k {
				return p.cj.colRow[x], j
			}
		}
	}
	return -1, -1
}
