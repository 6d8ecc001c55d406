package ode

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Structure is the sparsity structure of a problem's Jacobian ∂F/∂u, set
// in Problem.JacStructure. The stiff methods keep J, and solve with
// W = I − c·J, in that structure: DenseJacobian, BandJacobian,
// SparseJacobian or MatrixFreeJacobian. A nil structure is DenseJacobian.
//
// Problem.Jac, when given, writes J in the structure's storage:
//
//	DenseJacobian       row-major n×n: J[i*n+j] = ∂F_i/∂u_j
//	BandJacobian        by rows, Lower+Upper+1 entries each:
//	            J[i*(Lower+Upper+1) + j−i+Lower] = ∂F_i/∂u_j for −Lower ≤ j−i ≤ Upper
//	            (the entries outside the matrix, j < 0 or j ≥ n, must be left 0)
//	SparseJacobian      the values of Pattern's entries, in its CSR order
//	MatrixFreeJacobian  Jac is not used; J·v comes from Problem.JVP or a difference
//	            quotient of F
//
// Without Jac, J comes from Problem.JVP when it is set, exact, and else
// from forward differences of F, with CVODE's increments. A band or
// sparse J takes one product per group of structurally orthogonal
// columns (Curtis, Powell and Reid; linalg.Colour): Lower+Upper+1 for a
// band, whatever n, instead of n.
//
// An entry of J outside the declared structure is an error, not a wrong
// J, when the sweeps can see it: each checks that F changes only in the
// rows its group of columns has entries in, so a dependency in any other
// row ends the solve with Retcode Failed naming the entry. A dependency in
// a row that has another entry in the same group is invisible to the
// sweeps, and so is any entry a user Jac leaves out: CheckStructure probes
// every column and finds them all, and ProbePattern finds the pattern of
// a plain Go F.
//
// Problem.Jac's band storage is checked at every evaluation: a non-zero
// written outside the matrix ends the solve with an error naming its row
// and column, since it means the storage was misread. A SparseJacobian's
// pattern must be valid and n×n: NewIntegrator says what is wrong.
//
// Gradient reads Jac in the structure's storage too: ForwardSensitivity
// and InterpolatingAdjoint solve in the structure (the adjoint in its
// transpose); the other methods expand J into the n×n matrix (see
// Gradient).
type Structure interface {
	String() string
	structure()
}

// DenseJacobian is a Jacobian with no structure: n×n entries.
type DenseJacobian struct{}

// BandJacobian is a band Jacobian: ∂F_i/∂u_j = 0 unless −Lower ≤ j−i ≤ Upper.
type BandJacobian struct{ Lower, Upper int }

// SparseJacobian is a Jacobian whose non-zero entries are those of Pattern, an
// n×n linalg.Pattern.
type SparseJacobian struct{ Pattern *linalg.Pattern }

// MatrixFreeJacobian is a Jacobian that is never formed: the linear systems are
// solved by GMRES on products J·v.
type MatrixFreeJacobian struct{}

func (DenseJacobian) structure()      {}
func (BandJacobian) structure()       {}
func (SparseJacobian) structure()     {}
func (MatrixFreeJacobian) structure() {}

func (DenseJacobian) String() string { return "dense" }
func (b BandJacobian) String() string {
	return fmt.Sprintf("band(lower %d, upper %d)", b.Lower, b.Upper)
}
func (MatrixFreeJacobian) String() string { return "matrix-free" }
func (s SparseJacobian) String() string {
	if s.Pattern == nil {
		return "sparse(nil pattern)"
	}
	return fmt.Sprintf("sparse(%d entries)", s.Pattern.NNZ())
}

// LinearSolver is how a stiff method solves with W = I − c·J: DenseLU,
// BandLU, SparseLU or GMRES. It is a setting of the stiff methods; nil
// chooses from the problem's structure: DenseLU for DenseJacobian, BandLU for
// BandJacobian, SparseLU for SparseJacobian and GMRES for MatrixFreeJacobian.
//
// The other pairs that make sense are allowed too: DenseLU over a band or
// sparse J (filled into a dense W), SparseLU over a band J (its pattern),
// BandLU over a sparse J (the band of the pattern's bandwidths), and GMRES
// over any structure. BandLU or SparseLU over a dense J, and a direct
// solver over a matrix-free one, are errors at NewIntegrator.
type LinearSolver interface {
	String() string
	linearSolver()
}

// DenseLU factors W by a dense LU with partial pivoting. It needs a DenseJacobian
// structure or one it can be filled from (BandJacobian, SparseJacobian).
type DenseLU struct{}

// BandLU factors W by a band LU with partial pivoting, in O(n·l·(l+u))
// for lower and upper bandwidths l and u. It needs a BandJacobian structure.
type BandLU struct{}

// SparseLU factors W by a sparse LU with a fill-reducing ordering. The
// symbolic analysis of the pattern is done once and reused by every
// refactorisation, as KLU does. It needs a SparseJacobian structure.
type SparseLU struct{}

// GMRES solves with W by restarted GMRES on products J·v, from
// Problem.JVP or a difference quotient of F (CVODE's, one evaluation of F
// per product), with any structure. Its tolerance is the weighted RMS
// norm of the preconditioned residual, with the error test's weights: the
// stiff method sets it (BDF from its Newton tolerance, as CVODE; a
// Rosenbrock method well below 1). A solve that does not converge
// rejects the step, which is retried smaller, where W is closer to I; the
// solve ends with an error naming the residual when that keeps failing.
// Stats counts LinearIters and LinearFails.
//
// A Rosenbrock method has no Newton iteration to correct an inexact
// solve, so without a preconditioner close to W (BandPreconditioner when
// J is banded) give it restarts (MaxRestarts), or most steps fail.
type GMRES struct {
	// Restart is the number of Krylov vectors kept before a restart;
	// 0 means 5, CVODE's default.
	Restart int
	// MaxRestarts is the number of restarts before the solve counts as
	// not converged; 0 means none.
	MaxRestarts int
	// Precond is the preconditioner; nil means none.
	Precond Preconditioner
}

func (DenseLU) linearSolver()  {}
func (BandLU) linearSolver()   {}
func (SparseLU) linearSolver() {}
func (GMRES) linearSolver()    {}

func (DenseLU) String() string  { return "dense LU" }
func (BandLU) String() string   { return "band LU" }
func (SparseLU) String() string { return "sparse LU" }
func (GMRES) String() string    { return "GMRES" }

// Preconditioner is GMRES's preconditioner P ≈ W, applied on the left as
// P⁻¹. It is set up whenever the stiff method updates its Jacobian or
// c, and applied once per GMRES iteration.
type Preconditioner interface {
	String() string
	preconditioner()
}

// BandPreconditioner is CVODE's band preconditioner (CVBandPre): a band
// approximation of J with these bandwidths, from Lower+Upper+1 coloured
// difference quotients of F (JVPs when Problem.JVP is set), and the band
// LU of I − c·J_band. Entries of J outside the band are not dropped but
// added into band entries of their row, as CVODE's are. Bandwidths above
// n−1 are reduced to n−1.
type BandPreconditioner struct{ Lower, Upper int }

// BlockDiagonalPreconditioner keeps the diagonal blocks of J, Block×Block
// each (for example the species at each grid point), and factors
// I − c·J_block block by block. Block must divide n.
//
// The blocks come from coloured differences of F (JVPs when Problem.JVP
// is set). With a band or sparse structure the columns are grouped by the
// colouring of its pattern, and the blocks are exact. Matrix-free, Block
// groups suffice (column j in group j mod Block), but then the coupling of
// a component to the same component of other blocks is added into the
// block's diagonal: for a reaction–diffusion system, the diffusion of a
// species cancels out of its diagonal entry and the blocks hold the
// reaction alone.
type BlockDiagonalPreconditioner struct{ Block int }

func (BandPreconditioner) preconditioner()          {}
func (BlockDiagonalPreconditioner) preconditioner() {}

func (b BandPreconditioner) String() string {
	return fmt.Sprintf("band preconditioner(lower %d, upper %d)", b.Lower, b.Upper)
}
func (b BlockDiagonalPreconditioner) String() string {
	return fmt.Sprintf("block-diagonal preconditioner(block %d)", b.Block)
}

// checkStructure checks s for a problem of dimension n: bandwidths are
// non-negative, a sparse pattern is valid and n×n.
func checkStructure(s Structure, n int) error {
	switch s := s.(type) {
	case BandJacobian:
		if s.Lower < 0 || s.Upper < 0 {
			return errorf("BandJacobian{Lower: %d, Upper: %d}: want non-negative bandwidths", s.Lower, s.Upper)
		}
	case SparseJacobian:
		if s.Pattern == nil {
			return errorf("SparseJacobian has a nil Pattern, want the n×n pattern of ∂F/∂u (n = %d)", n)
		}
		if err := s.Pattern.Validate(); err != nil {
			return errorf("SparseJacobian: %v", err)
		}
		if s.Pattern.Rows != n || s.Pattern.Cols != n {
			return errorf("SparseJacobian's pattern is %d×%d, want %d×%d (the state's dimension)", s.Pattern.Rows, s.Pattern.Cols, n, n)
		}
	}
	return nil
}

// checkSolver checks the settings of ls for a problem of dimension n.
func checkSolver(ls LinearSolver, n int) error {
	g, ok := ls.(GMRES)
	if !ok {
		return nil
	}
	if g.Restart < 0 || g.MaxRestarts < 0 {
		return errorf("GMRES{Restart: %d, MaxRestarts: %d}: want non-negative values", g.Restart, g.MaxRestarts)
	}
	switch p := g.Precond.(type) {
	case BandPreconditioner:
		if p.Lower < 0 || p.Upper < 0 {
			return errorf("BandPreconditioner{Lower: %d, Upper: %d}: want non-negative bandwidths", p.Lower, p.Upper)
		}
	case BlockDiagonalPreconditioner:
		if p.Block < 1 || n%p.Block != 0 {
			return errorf("BlockDiagonalPreconditioner{Block: %d}: want a block size that divides the dimension %d", p.Block, n)
		}
	}
	return nil
}

// sameStructure reports whether a and b are the same structure, so that
// an integrator built for one can solve a problem with the other. nil is
// DenseJacobian; sparse patterns are compared by their entries.
func sameStructure(a, b Structure) bool {
	if a == nil {
		a = DenseJacobian{}
	}
	if b == nil {
		b = DenseJacobian{}
	}
	sa, ok1 := a.(SparseJacobian)
	sb, ok2 := b.(SparseJacobian)
	if ok1 || ok2 {
		if !ok1 || !ok2 {
			return false
		}
		pa, pb := sa.Pattern, sb.Pattern
		return pa == pb || pa != nil && pb != nil && pa.Rows == pb.Rows && pa.Cols == pb.Cols &&
			slices.Equal(pa.RowPtr, pb.RowPtr) && slices.Equal(pa.ColIdx, pb.ColIdx)
	}
	return a == b
}
