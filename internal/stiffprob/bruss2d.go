package stiffprob

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Bruss2D is the 2-D Brusselator of the SciML tutorial and
// SciMLBenchmarks on the N×N grid of [0, 1]², periodic (the 5-point
// Laplacian wraps around), with A = 3.4, B = 1, α = 10/Δx², Δx = 1/(N−1):
//
//	u' = α ∇²u + B + u²v − (A+1) u + f(x, y, t)
//	v' = α ∇²v + A u − u²v
//
// where f = 5 in the disc (x−0.3)² + (y−0.6)² ≤ 0.1² from t = 1.1 on,
// and 0 elsewhere. It starts from u = 22 (y(1−y))^{3/2}, v = 27
// (x(1−x))^{3/2} and runs on t ∈ [0, 11.5]. The 2N² states are Julia's
// column-major u[i, j, k]: state i + j·N + k·N² (0-based) is u (k = 0) or
// v (k = 1) at x = i/(N−1), y = j/(N−1). Make one with NewBruss2D; its
// methods may be called concurrently.
//
// F takes whether the forcing acts from p[0] (0: off, else on) when p is
// not empty, and from t otherwise. Segments passes it in p so that the
// segment before t = 1.1 never sees the forcing: the step that lands on
// its T1 evaluates F at t = 1.1 itself, and with the forcing taken from t
// it would add the forcing over that last step. CVODE does the same: its
// step onto a stop time rounds t_n onto it, so the peer, whose F takes
// the forcing from t ≥ 1.1, evaluates F forced at t = 1.1 before its
// restart there, and takes more steps in [0, 1.1] than BDF on these
// segments (TestBDFSegmentsLikeCVODE in ode has the counts).
type Bruss2D[T Float] struct {
	N        int
	alpha    float64
	xy       []float64 // grid coordinates i/(N−1)
	disc     []bool    // the forcing's disc, by grid point i + j·N
	pattern  *linalg.Pattern
	diag     []int32 // per row: the position in the CSR values of (row, row)
	coupling []int32 // per row: of (row, the other species at the point)
}

// Bruss2D's constants.
const (
	bruss2DA      = 3.4
	bruss2DB      = 1.0
	bruss2DTForce = 1.1 // the forcing starts here
)

// NewBruss2D returns the 2-D Brusselator on the n×n grid, n ≥ 3.
func NewBruss2D[T Float](n int) *Bruss2D[T] {
	if n < 3 {
		panic("stiffprob: NewBruss2D: want n ≥ 3 grid points a side")
	}
	dx := 1.0 / float64(n-1)
	b := &Bruss2D[T]{N: n, alpha: 10.0 / (dx * dx), xy: make([]float64, n), disc: make([]bool, n*n)}
	for i := range b.xy {
		b.xy[i] = float64(i) / float64(n-1)
	}
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			x, y := b.xy[i], b.xy[j]
			b.disc[i+j*n] = (x-0.3)*(x-0.3)+(y-0.6)*(y-0.6) <= 0.01
		}
	}
	nn, dim := n*n, 2*n*n
	e := make([]linalg.Entry, 0, 6*dim)
	for row := 0; row < dim; row++ {
		k, i, j := row/nn, row%nn%n, row%nn/n
		for _, col := range b.neighbours(i, j, k) {
			e = append(e, linalg.Entry{Row: row, Col: col})
		}
		e = append(e, linalg.Entry{Row: row, Col: row}, linalg.Entry{Row: row, Col: i + j*n + (1-k)*nn})
	}
	p, err := linalg.NewPattern(dim, dim, e)
	if err != nil {
		panic(err) // unreachable: every entry is inside the matrix
	}
	b.pattern = p
	b.diag, b.coupling = make([]int32, dim), make([]int32, dim)
	for row := 0; row < dim; row++ {
		other := row + nn
		if row >= nn {
			other = row - nn
		}
		b.diag[row], b.coupling[row] = int32(p.Index(row, row)), int32(p.Index(row, other))
	}
	return b
}

// neighbours returns the states of species k at the four grid neighbours
// of (i, j), wrapping around.
func (b *Bruss2D[T]) neighbours(i, j, k int) [4]int {
	n := b.N
	ip, im, jp, jm := wrap(i+1, n), wrap(i-1, n), wrap(j+1, n), wrap(j-1, n)
	o := k * n * n
	return [4]int{im + j*n + o, ip + j*n + o, i + jp*n + o, i + jm*n + o}
}

// wrap maps a grid index one off the grid back onto it, periodically.
func wrap(a, n int) int {
	switch {
	case a == n:
		return 0
	case a < 0:
		return n - 1
	}
	return a
}

// Dim is the number of states, 2N².
func (b *Bruss2D[T]) Dim() int { return 2 * b.N * b.N }

// U0 returns a new initial state.
func (b *Bruss2D[T]) U0() []T {
	n := b.N
	u := make([]T, 2*n*n)
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			x, y := b.xy[i], b.xy[j]
			u[i+j*n] = T(22 * pow15(y*(1-y)))
			u[i+j*n+n*n] = T(27 * pow15(x*(1-x)))
		}
	}
	return u
}

// Segments is the span [0, 11.5] in two segments, split where the
// forcing starts at t = 1.1, as the peer restarts there: [0, 1.1]
// unforced and [1.1, 11.5] forced, passed in P.
func (b *Bruss2D[T]) Segments() []Segment {
	return []Segment{{T0: 0, T1: bruss2DTForce, P: []float32{0}}, {T0: bruss2DTForce, T1: 11.5, P: []float32{1}}}
}

// Pattern is the Jacobian's sparsity pattern, 6 entries a row; JacSparse
// writes its values. The pattern is shared: do not modify it.
func (b *Bruss2D[T]) Pattern() *linalg.Pattern { return b.pattern }

// Forced reports whether the forcing acts on grid point (i, j) at t,
// without parameters.
func (b *Bruss2D[T]) Forced(i, j int, t float64) bool {
	return forcingOn(nil, t) && b.disc[i+j*b.N]
}

// forcingOn reports whether the forcing acts: p[0] ≠ 0, or t ≥ 1.1
// without parameters.
func forcingOn(p []float32, t float64) bool {
	if len(p) > 0 {
		return p[0] != 0
	}
	return t >= bruss2DTForce
}

// F writes the right-hand side into du.
func (b *Bruss2D[T]) F(du, u []T, p []float32, t float64) {
	n, nn := b.N, b.N*b.N
	al, A, B := T(b.alpha), T(bruss2DA), T(bruss2DB)
	us, vs := u[:nn], u[nn:2*nn]
	dus, dvs := du[:nn], du[nn:2*nn]
	forcing := forcingOn(p, t)
	for j := 0; j < n; j++ {
		jp, jm := wrap(j+1, n)*n, wrap(j-1, n)*n
		jn := j * n
		for i := 0; i < n; i++ {
			ip, im := wrap(i+1, n), wrap(i-1, n)
			q := i + jn
			ui, vi := us[q], vs[q]
			var f T
			if forcing && b.disc[q] {
				f = 5
			}
			dus[q] = al*(us[im+jn]+us[ip+jn]+us[i+jp]+us[i+jm]-4*ui) + B + ui*ui*vi - (A+1)*ui + f
			dvs[q] = al*(vs[im+jn]+vs[ip+jn]+vs[i+jp]+vs[i+jm]-4*vi) + A*ui - ui*ui*vi
		}
	}
}

// entries sets the Jacobian's entries at u into s.
func (b *Bruss2D[T]) entries(s *sink[T], u []T) {
	n, nn := b.N, b.N*b.N
	al, A := T(b.alpha), T(bruss2DA)
	for row := 0; row < 2*nn; row++ {
		k, q := row/nn, row%nn
		ui, vi := u[q], u[q+nn]
		for _, col := range b.neighbours(q%n, q/n, k) {
			s.set(row, col, al)
		}
		if k == 0 {
			s.set(row, row, -4*al+2*ui*vi-(A+1))
			s.set(row, q+nn, ui*ui)
		} else {
			s.set(row, row, -4*al-ui*ui)
			s.set(row, q, A-2*ui*vi)
		}
	}
}

// Jac writes the Jacobian, dense and row-major, into J (len ≥ (2N²)²):
// for tests at small N.
func (b *Bruss2D[T]) Jac(J, u []T, _ []float32, _ float64) {
	s := denseSink(J, b.Dim())
	b.entries(&s, u)
}

// JacSparse writes the values of Pattern's entries, in CSR order, into J
// (len ≥ Pattern().NNZ()).
func (b *Bruss2D[T]) JacSparse(J, u []T, _ []float32, _ float64) {
	nn := b.N * b.N
	al, A := T(b.alpha), T(bruss2DA)
	J = J[:6*2*nn]
	for k := range J {
		J[k] = al
	}
	for q := 0; q < nn; q++ {
		ui, vi := u[q], u[q+nn]
		r, s := q, q+nn
		J[b.diag[r]], J[b.coupling[r]] = -4*al+2*ui*vi-(A+1), ui*ui
		J[b.diag[s]], J[b.coupling[s]] = -4*al-ui*ui, A-2*ui*vi
	}
}

// pow15 is z^{3/2} for z ≥ 0, rounded correctly but in rare ties, as C's
// and Julia's pow give it; math.Pow(z, 1.5) can be an ulp off, and the
// Laplacian's α = 10/Δx² magnifies the difference in the published
// values of F. It corrects z·√z by the rounding errors of the square
// root and of the product, each found exactly with a fused multiply-add.
func pow15(z float64) float64 {
	if z <= 0 {
		return 0
	}
	s := math.Sqrt(z)
	e := math.FMA(-s, s, z) // z − s², exact
	p := z * s
	pe := math.FMA(z, s, -p) // z·s − p, exact
	return p + (pe + z*e/(2*s))
}
