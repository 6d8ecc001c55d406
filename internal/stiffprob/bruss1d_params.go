package stiffprob

// Bruss1DParams is Bruss1D with its constants read from the parameters,
// for gradients with respect to them (issue 28's problem):
//
//	u_i' = A + u_i² v_i − (B+1) u_i + α (N+1)² (u_{i−1} − 2 u_i + u_{i+1})
//	v_i' = B u_i − u_i² v_i + α (N+1)² (v_{i−1} − 2 v_i + v_{i+1})
//
// with p = (A, B, 50α), so that Bruss1D's α = 1/50 is exact in float32:
// at P(), p = (1, 3, 1), it is Bruss1D to rounding, and dG/dα is
// 50·dG/dp₃. The states, boundary values, initial state and span are
// Bruss1D's, as ../shared/peers' and cmd/flatkit/peers/cvodes_bruss_sens.c's.
// Besides F and the Jacobians it has the derivative products JVP and VJP
// of ode.Problem. Make one with NewBruss1DParams; its methods may be
// called concurrently.
type Bruss1DParams[T Float] struct {
	*Bruss1D[T]
	h2 float64 // (N+1)²: c = α·h2 = p₃·h2/50
}

// NewBruss1DParams returns the parametrised 1-D Brusselator on n grid
// points, n ≥ 1.
func NewBruss1DParams[T Float](n int) *Bruss1DParams[T] {
	return &Bruss1DParams[T]{Bruss1D: NewBruss1D[T](n), h2: float64(n+1) * float64(n+1)}
}

// P returns a new parameter vector (A, B, 50α) = (1, 3, 1).
func (b *Bruss1DParams[T]) P() []float32 { return []float32{1, 3, 1} }

// consts returns A, B and c = α (N+1)² of p.
func (b *Bruss1DParams[T]) consts(p []float32) (a, bb, c T) {
	return T(p[0]), T(p[1]), T(float64(p[2]) / 50 * b.h2)
}

// F writes the right-hand side into du.
func (b *Bruss1DParams[T]) F(du, u []T, p []float32, _ float64) {
	n := b.N
	a, bb, c := b.consts(p)
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
func (b *Bruss1DParams[T]) neighbours(u []T, i int) (ul, vl, ur, vr T) {
	ul, vl, ur, vr = 1, 3, 1, 3
	if i > 0 {
		ul, vl = u[2*i-2], u[2*i-1]
	}
	if i < b.N-1 {
		ur, vr = u[2*i+2], u[2*i+3]
	}
	return ul, vl, ur, vr
}

// entriesP sets the Jacobian's entries at u and p into s.
func (b *Bruss1DParams[T]) entriesP(s *sink[T], u []T, p []float32) {
	_, bb, c := b.consts(p)
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
func (b *Bruss1DParams[T]) Jac(J, u []T, p []float32, _ float64) {
	s := denseSink(J, 2*b.N)
	b.entriesP(&s, u, p)
}

// JacBand writes the Jacobian in band storage into J (len ≥ 2N·5), as
// Bruss1D.JacBand.
func (b *Bruss1DParams[T]) JacBand(J, u []T, p []float32, _ float64) {
	s := bandSink(J, 2*b.N, 2, 2)
	b.entriesP(&s, u, p)
}

// JacSparse writes the values of Pattern's entries, in CSR order, into J,
// as Bruss1D.JacSparse (the pattern is Bruss1D's).
func (b *Bruss1DParams[T]) JacSparse(J, u []T, p []float32, _ float64) {
	_, bb, c := b.consts(p)
	k := 0
	put := func(v T) { J[k] = v; k++ }
	for i := 0; i < b.N; i++ {
		ui, vi := u[2*i], u[2*i+1]
		// row 2i: columns 2i−2, 2i, 2i+1, 2i+2
		if i > 0 {
			put(c)
		}
		put(2*ui*vi - (bb + 1) - 2*c)
		put(ui * ui)
		if i < b.N-1 {
			put(c)
		}
		// row 2i+1: columns 2i−1, 2i, 2i+1, 2i+3
		if i > 0 {
			put(c)
		}
		put(bb - 2*ui*vi)
		put(-ui*ui - 2*c)
		if i < b.N-1 {
			put(c)
		}
	}
}

// JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp; dp may be nil.
func (b *Bruss1DParams[T]) JVP(jv, u, v []T, p []float32, dp []T, _ float64) {
	n := b.N
	_, bb, c := b.consts(p)
	for i := 0; i < n; i++ {
		ui, vi := u[2*i], u[2*i+1]
		su, sv := v[2*i], v[2*i+1]
		var sul, svl, sur, svr T
		if i > 0 {
			sul, svl = v[2*i-2], v[2*i-1]
		}
		if i < n-1 {
			sur, svr = v[2*i+2], v[2*i+3]
		}
		du := (2*ui*vi-(bb+1))*su + ui*ui*sv + c*(sul-2*su+sur)
		dv := (bb-2*ui*vi)*su - ui*ui*sv + c*(svl-2*sv+svr)
		if dp != nil {
			ul, vl, ur, vr := b.neighbours(u, i)
			k := T(b.h2 / 50)
			du += dp[0] - ui*dp[1] + k*(ul-2*ui+ur)*dp[2]
			dv += ui*dp[1] + k*(vl-2*vi+vr)*dp[2]
		}
		jv[2*i], jv[2*i+1] = du, dv
	}
}

// VJP adds wᵀ·∂F/∂u into du and, when dp is not nil, wᵀ·∂F/∂p into dp.
func (b *Bruss1DParams[T]) VJP(du, dp, w, u []T, p []float32, _ float64) {
	n := b.N
	_, bb, c := b.consts(p)
	k := T(b.h2 / 50)
	var qa, qb, qc T
	for i := 0; i < n; i++ {
		ui, vi := u[2*i], u[2*i+1]
		wu, wv := w[2*i], w[2*i+1]
		var wul, wvl, wur, wvr T
		if i > 0 {
			wul, wvl = w[2*i-2], w[2*i-1]
		}
		if i < n-1 {
			wur, wvr = w[2*i+2], w[2*i+3]
		}
		// column 2i of J, then column 2i+1, against w
		du[2*i] += (2*ui*vi-(bb+1)-2*c)*wu + (bb-2*ui*vi)*wv + c*(wul+wur)
		du[2*i+1] += ui*ui*wu + (-ui*ui-2*c)*wv + c*(wvl+wvr)
		if dp != nil {
			ul, vl, ur, vr := b.neighbours(u, i)
			qa += wu
			qb += ui * (wv - wu)
			qc += k * (wu*(ul-2*ui+ur) + wv*(vl-2*vi+vr))
		}
	}
	if dp != nil {
		dp[0] += qa
		dp[1] += qb
		dp[2] += qc
	}
}
