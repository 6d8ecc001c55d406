package linalg

import "fmt"

// BlockLU factors and solves block-diagonal matrices: n/block dense
// blocks of block×block entries on the diagonal, zero elsewhere. It is
// the block-diagonal preconditioner of GMRES, for example the coupling of
// the species at each grid point of a reaction-diffusion system, where the
// blocks are the diagonal blocks of J with the diffusion left out.
//
// Each block is factored by LU with partial pivoting, the pivots'
// reciprocals kept on the diagonal. Factoring allocates nothing, and
// neither do the solves.
type BlockLU[T Float] struct {
	n, bs int
	lu    []T   // the factors of the blocks, one after another, row-major
	piv   []int // the row swaps of each block, local indices
	scale []T   // a magnitude per row of the block in factorisation
}

// NewBlockLU returns the workspace for n×n matrices of n/block diagonal
// blocks. It panics unless block ≥ 1 divides n.
func NewBlockLU[T Float](n, block int) *BlockLU[T] {
	if block < 1 || n < 0 || n%block != 0 {
		panic(fmt.Sprintf("linalg: NewBlockLU(%d, %d): want block ≥ 1 dividing n ≥ 0", n, block))
	}
	return &BlockLU[T]{
		n: n, bs: block,
		lu:    make([]T, n*block),
		piv:   make([]int, n),
		scale: make([]T, block),
	}
}

// Len is the order n of the matrix.
func (b *BlockLU[T]) Len() int { return b.n }

// Block is the order of each diagonal block.
func (b *BlockLU[T]) Block() int { return b.bs }

// FactorShifted factors I − c·J_k for each diagonal block J_k of J. J
// holds the n/block blocks one after another, each row-major, n·block
// values in all; it is not modified.
//
// It returns −1 on success, or the global column of the first pivot that
// is zero, not finite, or below 4ε·max(1, max_j |c·J_ij|) of its row i,
// the rule of the ODE solvers' dense LU. A row cancelled to rounding
// noise so counts as singular, instead of giving a solution amplified by
// 1/ε. After a failure the factors must not be used to solve.
//
// It panics if len(J) ≠ n·block.
func (b *BlockLU[T]) FactorShifted(J []T, c T) int {
	bs := b.bs
	if len(J) != b.n*bs {
		panic(fmt.Sprintf("linalg: BlockLU.FactorShifted: len(J) = %d, want n·block = %d", len(J), b.n*bs))
	}
	for k0 := 0; k0 < b.n; k0 += bs {
		a := b.lu[k0*bs : (k0+bs)*bs]
		jb := J[k0*bs : (k0+bs)*bs]
		for i := 0; i < bs; i++ {
			row := a[i*bs : (i+1)*bs]
			s := T(1)
			for j, v := range jb[i*bs : (i+1)*bs] {
				v *= -c
				row[j] = v
				if av := abs(v); av > s {
					s = av
				}
			}
			row[i]++
			b.scale[i] = s
		}
		if k := LUFactor(a, bs, b.piv[k0:k0+bs], b.scale); k >= 0 {
			return k0 + k
		}
	}
	return -1
}

// Solve overwrites x with the solution of M·x = x, M the matrix last
// factored. It panics if len(x) ≠ n.
func (b *BlockLU[T]) Solve(x []T) {
	if len(x) != b.n {
		panic(fmt.Sprintf("linalg: BlockLU.Solve: len(x) = %d, want %d", len(x), b.n))
	}
	bs := b.bs
	switch bs {
	case 1:
		for i, d := range b.lu[:len(x)] {
			x[i] *= d
		}
		return
	case 2:
		b.solve2(x)
		return
	}
	for k0 := 0; k0 < b.n; k0 += bs {
		LUSolve(b.lu[k0*bs:(k0+bs)*bs], bs, b.piv[k0:k0+bs], x[k0:k0+bs])
	}
}

// SolveTo writes dst = M⁻¹·r, M the matrix last factored: the signature
// of a GMRES preconditioner. dst may be r. It panics if len(dst) or len(r)
// is not n.
func (b *BlockLU[T]) SolveTo(dst, r []T) {
	if len(r) != b.n {
		panic(fmt.Sprintf("linalg: BlockLU.SolveTo: len(r) = %d, want %d", len(r), b.n))
	}
	copy(dst, r)
	b.Solve(dst)
}

// solve2 is Solve for 2×2 blocks, the common case of two species.
func (b *BlockLU[T]) solve2(x []T) {
	lu, piv := b.lu, b.piv
	for k0 := 0; k0+1 < len(x); k0 += 2 {
		a := lu[2*k0 : 2*k0+4 : 2*k0+4]
		x0, x1 := x[k0], x[k0+1]
		if piv[k0] != 0 {
			x0, x1 = x1, x0
		}
		x1 -= a[2] * x0
		x1 *= a[3]
		x[k0] = (x0 - a[1]*x1) * a[0]
		x[k0+1] = x1
	}
}

// SolveTranspose overwrites x with the solution of Mᵀ·x = x, M the matrix
// last factored. It panics if len(x) ≠ n.
func (b *BlockLU[T]) SolveTranspose(x []T) {
	if len(x) != b.n {
		panic(fmt.Sprintf("linalg: BlockLU.SolveTranspose: len(x) = %d, want %d", len(x), b.n))
	}
	bs := b.bs
	for k0 := 0; k0 < b.n; k0 += bs {
		LUSolveTranspose(b.lu[k0*bs:(k0+bs)*bs], bs, b.piv[k0:k0+bs], x[k0:k0+bs])
	}
}
