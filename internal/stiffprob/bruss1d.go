package stiffprob

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Bruss1D is the 1-D Brusselator of Hairer and Wanner II (section IV.1)
// on N interior grid points of [0, 1], with α = 1/50 and Dirichlet values
// u = 1, v = 3 at both ends:
//
//	u_i' = 1 + u_i² v_i − 4 u_i + c (u_{i−1} − 2 u_i + u_{i+1})
//	v_i' = 3 u_i − u_i² v_i + c (v_{i−1} − 2 v_i + v_{i+1}),  c = α (N+1)²
//
// from u(x, 0) = 1 + sin(2πx), v(x, 0) = 3 on t ∈ [0, 10]. The 2N
// states interleave u and v: state 2i is u_i and 2i+1 is v_i, so the
// Jacobian is a band matrix with lower and upper bandwidths 2. Make one
// with NewBruss1D; its methods may be called concurrently.
type Bruss1D[T Float] struct {
	N       int
	c       float64
	pattern *linalg.Pattern
}

// NewBruss1D returns the 1-D Brusselator on n grid points, n ≥ 1.
func NewBruss1D[T Float](n int) *Bruss1D[T] {
	if n < 1 {
		panic("stiffprob: NewBruss1D: want n ≥ 1 grid points")
	}
	b := &Bruss1D[T]{N: n, c: (1.0 / 50) * float64(n+1) * float64(n+1)}
	var e []linalg.Entry
	for i := 0; i < n; i++ {
		r, s := 2*i, 2*i+1
		e = append(e, linalg.Entry{Row: r, Col: r}, linalg.Entry{Row: r, Col: s},
			linalg.Entry{Row: s, Col: r}, linalg.Entry{Row: s, Col: s})
		if i > 0 {
			e = append(e, linalg.Entry{Row: r, Col: r - 2}, linalg.Entry{Row: s, Col: s - 2})
		}
		if i < n-1 {
			e = append(e, linalg.Entry{Row: r, Col: r + 2}, linalg.Entry{Row: s, Col: s + 2})
		}
	}
	p, err := linalg.NewPattern(2*n, 2*n, e)
	if err != nil {
		panic(err) // unreachable: every entry is inside the matrix
	}
	b.pattern = p
	return b
}

// Dim is the number of states, 2N.
func (b *Bruss1D[T]) Dim() int { return 2 * b.N }

// U0 returns a new initial state.
func (b *Bruss1D[T]) U0() []T {
	u := make([]T, 2*b.N)
	for i := 0; i < b.N; i++ {
		x := (float64(i) + 1) / float64(b.N+1)
		u[2*i], u[2*i+1] = T(1+math.Sin(2*math.Pi*x)), 3
	}
	return u
}

// Segments is the span [0, 10] in one segment.
func (b *Bruss1D[T]) Segments() []Segment { return []Segment{{T0: 0, T1: 10}} }

// Bandwidths returns the lower and upper bandwidths of the Jacobian, 2 and 2.
func (b *Bruss1D[T]) Bandwidths() (lower, upper int) { return 2, 2 }

// Pattern is the Jacobian's sparsity pattern, 8N − 4 entries; JacSparse
// writes its values. The pattern is shared: do not modify it.
func (b *Bruss1D[T]) Pattern() *linalg.Pattern { return b.pattern }

// F writes the right-hand side into du.
func (b *Bruss1D[T]) F(du, u []T, _ []float32, _ float64) { b.f(du, u, 1, 3, T(b.c)) }

// f is F with the constants A, B and c = α (N+1)² given: Bruss1D's and
// Bruss1DParams' right-hand side, so that both do the same operations.
func (b *Bruss1D[T]) f(du, u []T, a, bb, c T) {
	n := b.N
	u, du = u[:2*n], du[:2*n]
	for i := 0; i < n; i++ {
		ui, vi := u[2*i], u[2*i+1]
		ul, vl, ur, vr := b.neighbours(u, i)
		du[2*i] = a + ui*ui*vi - (bb+1)*ui + c*(ul-2*ui+ur)
		du[2*i+1] = bb*ui - ui*ui*vi + c*(vl-2*vi+vr)
	}
}

// neighbours returns u and v at grid points i−1 and i+1, the boundary
// values outside.
func (b *Bruss1D[T]) neighbours(u []T, i int) (ul, vl, ur, vr T) {
	ul, vl, ur, vr = 1, 3, 1, 3
	if i > 0 {
		ul, vl = u[2*i-2], u[2*i-1]
	}
	if i < b.N-1 {
		ur, vr = u[2*i+2], u[2*i+3]
	}
	return ul, vl, ur, vr
}

// entries sets the Jacobian's entries at u into s, with the constants B
// and c = α (N+1)² given.
func (b *Bruss1D[T]) entries(s *sink[T], u []T, bb, c T) {
	for i := 0; i < b.N; i++ {
		ui, vi := u[2*i], u[2*i+1]
		r, q := 2*i, 2*i+1
		s.set(r, r, 2*ui*vi-(bb+1)-2*c)
		s.set(r, q, ui*ui)
		s.set(q, r, bb-2*ui*vi)
		s.set(q, q, -ui*ui-2*c)
		if i > 0 {
			s.set(r, r-2, c)
			s.set(q, q-2, c)
		}
		if i < b.N-1 {
			s.set(r, r+2, c)
			s.set(q, q+2, c)
		}
	}
}

// Jac writes the Jacobian, dense and row-major, into J (len ≥ 4N²).
func (b *Bruss1D[T]) Jac(J, u []T, _ []float32, _ float64) {
	s := denseSink(J, 2*b.N)
	b.entries(&s, u, 3, T(b.c))
}

// JacBand writes the Jacobian in band storage into J (len ≥ 2N·5): row i
// holds J[i*5 + j−i+2] = ∂F_i/∂u_j for |j − i| ≤ 2.
func (b *Bruss1D[T]) JacBand(J, u []T, _ []float32, _ float64) {
	s := bandSink(J, 2*b.N, 2, 2)
	b.entries(&s, u, 3, T(b.c))
}

// JacSparse writes the values of Pattern's entries, in CSR order, into J
// (len ≥ Pattern().NNZ()).
func (b *Bruss1D[T]) JacSparse(J, u []T, _ []float32, _ float64) { b.jacSparse(J, u, 3, T(b.c)) }

// jacSparse is JacSparse with the constants B and c given.
func (b *Bruss1D[T]) jacSparse(J, u []T, bb, c T) {
	k := 0
	for i := 0; i < b.N; i++ {
		ui, vi := u[2*i], u[2*i+1]
		// row 2i: columns 2i−2, 2i, 2i+1, 2i+2
		if i > 0 {
			J[k] = c
			k++
		}
		J[k], J[k+1] = 2*ui*vi-(bb+1)-2*c, ui*ui
		k += 2
		if i < b.N-1 {
			J[k] = c
			k++
		}
		// row 2i+1: columns 2i−1, 2i, 2i+1, 2i+3
		if i > 0 {
			J[k] = c
			k++
		}
		J[k], J[k+1] = bb-2*ui*vi, -ui*ui-2*c
		k += 2
		if i < b.N-1 {
			J[k] = c
			k++
		}
	}
}
