// Package linalg is the linear algebra of the stiff ODE solvers: sparsity
// patterns, their column colouring, and the solvers for W = I − c·J in
// each structure of a Jacobian.
//
// A Pattern is the set of structurally non-zero entries of a matrix in
// compressed sparse row (CSR) form. Colour groups the columns of a pattern
// so that no two columns in a group share a row (Curtis, Powell and Reid).
// One directional derivative per group then gives every entry of a
// Jacobian: a few evaluations of F instead of n.
//
// The solvers are generic over the element type, float32 or float64:
//
//	BandLU     band LU with partial pivoting, as LAPACK's gbtrf, by rows
//	SparseLU   sparse LU with a fill-reducing ordering, whose symbolic
//	           analysis is reused across refactorisations of one pattern
//	GMRES      restarted GMRES on an operator, with a preconditioner
//	BlockLU    LU of block-diagonal matrices, a preconditioner for GMRES
//
// The package imports nothing from flatkit, so that any package can use
// it. Package ode chooses among the solvers from a problem's structure.
package linalg
