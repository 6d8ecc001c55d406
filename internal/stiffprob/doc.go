// Package stiffprob holds the large stiff test problems of issue 27, as
// ../shared/peers/cvode_stiff_bench.c defines them, written once for
// every place that solves them: ode's tests, the stiff bench scenario of
// cmd/flatkit and the examples.
//
//	Bruss1D   Hairer-Wanner II's 1-D Brusselator, 2N interleaved states, band 2
//	Bruss2D   the SciML tutorial's 2-D Brusselator on the N×N periodic grid
//	Pollu     the Test Set's POLLU, 20 species
//	Medakzo   the Test Set's MEDAKZO, 2N states, band 2, φ from 2 to 0 at t = 5
//
// Each problem is a plain value with methods whose signatures are those
// of ode.Problem's fields, F(du, u, p, t) and the Jacobians Jac(J, u, p,
// t) in the storage of each ode.Structure: Jac dense row-major, JacBand
// by rows with Lower+Upper+1 entries each, JacSparse the values of
// Pattern in CSR order. Segments gives the span and the restarts of the
// peer; a solve runs them one after the other, each from the state the
// last left.
//
// The package imports only ode/linalg, never ode, so that ode's internal
// tests can use it.
package stiffprob

// Float is ode.Float, repeated here so that ode may import this package.
type Float interface{ ~float32 | ~float64 }

// Segment is one stretch of a solve: from T0 to T1 with parameters P. The
// peer restarts its integrator (CVodeReInit) at each new segment, so the
// method's history does not reach across a discontinuity of F.
type Segment struct {
	T0, T1 float64
	P      []float32
}
