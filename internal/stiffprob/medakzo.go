package stiffprob

// Medakzo is MEDAKZO of the Test Set for IVP Solvers (Bari): the method
// of lines on a partial differential equation of medical akzo nobel
// research, the penetration of radio-labelled antibodies into tissue,
// with N grid points on ζ ∈ (0, 1], 2N states u_j, v_j interleaved
// (state 2j is u at ζ = (j+1)/N, 2j+1 is v there), k = 100, c = 4:
//
//	u' = β(ζ) ∂²u/∂ζ² + α(ζ) ∂u/∂ζ − k u v,  v' = −k u v,
//	α = 2(ζ−1)³/c², β = (ζ−1)⁴/c²,
//
// from u = 0, v = 1 on t ∈ [0, 20], with the boundary value u(0, t) = φ(t):
// 2 for t ≤ 5, then 0. The Jacobian is a band matrix with lower and upper
// bandwidths 2. The Test Set's problem has N = 200.
//
// F takes φ from p[0] when p is not empty, and from t otherwise.
// Segments passes it in p so that each segment sees one φ throughout, as
// the peer's restart at t = 5 does.
type Medakzo[T Float] struct{ N int }

const (
	medakzoK = 100.0
	medakzoC = 4.0
)

// Dim is the number of states, 2N.
func (m Medakzo[T]) Dim() int { return 2 * m.N }

// U0 returns a new initial state.
func (m Medakzo[T]) U0() []T {
	u := make([]T, 2*m.N)
	for j := 0; j < m.N; j++ {
		u[2*j], u[2*j+1] = 0, 1
	}
	return u
}

// Segments is the span [0, 20] in two segments, [0, 5] with φ = 2 and
// [5, 20] with φ = 0.
func (m Medakzo[T]) Segments() []Segment {
	return []Segment{{T0: 0, T1: 5, P: []float32{2}}, {T0: 5, T1: 20, P: []float32{0}}}
}

// Bandwidths returns the lower and upper bandwidths of the Jacobian, 2 and 2.
func (m Medakzo[T]) Bandwidths() (lower, upper int) { return 2, 2 }

// phi is the boundary value φ: p[0], or from t.
func (Medakzo[T]) phi(p []float32, t float64) T {
	if len(p) > 0 {
		return T(p[0])
	}
	if t <= 5 {
		return 2
	}
	return 0
}

// coeffs returns α(ζ_j) and β(ζ_j) at grid point j (1-based, as the Test
// Set's), and Δζ.
func (m Medakzo[T]) coeffs(j int) (alpha, beta, dz float64) {
	dz = 1.0 / float64(m.N)
	zeta := float64(j) * dz
	dum := (zeta - 1) * (zeta - 1) / medakzoC
	return 2 * (zeta - 1) * dum / medakzoC, dum * dum, dz
}

// F writes the right-hand side into du.
func (m Medakzo[T]) F(du, u []T, p []float32, t float64) {
	n := m.N
	y, f := u[:2*n], du[:2*n]
	phi, k := m.phi(p, t), T(medakzoK)
	for j := 1; j <= n; j++ {
		a, b, dz := m.coeffs(j)
		// The operations in the peer's order.
		alpha, beta, dz2, twoDz := T(a), T(b), T(dz*dz), T(2*dz)
		i := 2*j - 2 // the Test Set's y(2j−1)
		switch {
		case j == 1:
			f[0] = (phi-2*y[0]+y[2])*beta/dz2 + alpha*(y[2]-phi)/twoDz - k*y[0]*y[1]
			f[1] = -k * y[0] * y[1]
		case j == n:
			f[i] = -k * y[i] * y[i+1]
			f[i+1] = -k * y[i] * y[i+1]
		default:
			f[i] = (y[i-2]-2*y[i]+y[i+2])*beta/dz2 + alpha*(y[i+2]-y[i-2])/twoDz - k*y[i]*y[i+1]
			f[i+1] = -k * y[i+1] * y[i]
		}
	}
}

// entries sets the Jacobian's entries at u into s.
func (m Medakzo[T]) entries(s *sink[T], y []T) {
	n, k := m.N, T(medakzoK)
	for j := 1; j <= n; j++ {
		a, b, dz := m.coeffs(j)
		bdz2, adz2 := T(b/(dz*dz)), T(a/(2*dz))
		i := 2*j - 2
		s.set(i, i+1, -k*y[i])
		s.set(i+1, i, -k*y[i+1])
		s.set(i+1, i+1, -k*y[i])
		if j == n {
			s.set(i, i, -k*y[i+1])
			continue
		}
		s.set(i, i, -2*bdz2-k*y[i+1])
		s.set(i, i+2, bdz2+adz2)
		if j > 1 {
			s.set(i, i-2, bdz2-adz2)
		}
	}
}

// Jac writes the Jacobian, dense and row-major, into J (len ≥ 4N²).
func (m Medakzo[T]) Jac(J, u []T, _ []float32, _ float64) {
	s := denseSink(J, 2*m.N)
	m.entries(&s, u)
}

// JacBand writes the Jacobian in band storage into J (len ≥ 2N·5): row i
// holds J[i*5 + j−i+2] = ∂F_i/∂u_j for |j − i| ≤ 2.
func (m Medakzo[T]) JacBand(J, u []T, _ []float32, _ float64) {
	s := bandSink(J, 2*m.N, 2, 2)
	m.entries(&s, u)
}
