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
//
// NewBruss1DParamsExtra adds parameters that F reads but that barely move
// the solution, to measure how a gradient's cost grows with their number:
// u_0' gains Bruss1DExtraScale·u_0·Σ_k p_{3+k}.
type Bruss1DParams[T Float] struct {
	*Bruss1D[T]
	h2    float64 // (N+1)²: c = α·h2 = p₃·h2/50
	extra int     // parameters after (A, B, 50α)
	es    float64 // their weight, Bruss1DExtraScale (tests make it larger)
}

// Bruss1DExtraScale is the weight of the extra parameters in F.
const Bruss1DExtraScale = 1e-12

// NewBruss1DParams returns the parametrised 1-D Brusselator on n grid
// points, n ≥ 1.
func NewBruss1DParams[T Float](n int) *Bruss1DParams[T] { return NewBruss1DParamsExtra[T](n, 0) }

// NewBruss1DParamsExtra returns it with extra ≥ 0 more parameters, all 1
// in P().
func NewBruss1DParamsExtra[T Float](n, extra int) *Bruss1DParams[T] {
	if extra < 0 {
		panic("stiffprob: NewBruss1DParamsExtra: want extra ≥ 0")
	}
	return &Bruss1DParams[T]{Bruss1D: NewBruss1D[T](n), h2: float64(n+1) * float64(n+1), extra: extra, es: Bruss1DExtraScale}
}

// P returns a new parameter vector (A, B, 50α) = (1, 3, 1), then the
// extra parameters, 1.
func (b *Bruss1DParams[T]) P() []float32 {
	p := make([]float32, 3+b.extra)
	p[0], p[1], p[2] = 1, 3, 1
	for k := 3; k < len(p); k++ {
		p[k] = 1
	}
	return p
}

// consts returns A, B and c = α (N+1)² of p.
func (b *Bruss1DParams[T]) consts(p []float32) (a, bb, c T) {
	return T(p[0]), T(p[1]), T(float64(p[2]) / 50 * b.h2)
}

// extraSum returns es·Σ_k p_{3+k}, ∂F_0/∂u_0's extra term.
func (b *Bruss1DParams[T]) extraSum(p []float32) T {
	var s float64
	for _, v := range p[3 : 3+b.extra] {
		s += float64(v)
	}
	return T(b.es * s)
}

// F writes the right-hand side into du.
func (b *Bruss1DParams[T]) F(du, u []T, p []float32, _ float64) {
	a, bb, c := b.consts(p)
	b.f(du, u, a, bb, c)
	if b.extra > 0 {
		du[0] += b.extraSum(p) * u[0]
	}
}

// entriesP sets the Jacobian's entries at u and p into s.
func (b *Bruss1DParams[T]) entriesP(s *sink[T], u []T, p []float32) {
	_, bb, c := b.consts(p)
	b.entries(s, u, bb, c)
	if b.extra > 0 {
		s.set(0, 0, 2*u[0]*u[1]-(bb+1)-2*c+b.extraSum(p))
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
	b.jacSparse(J, u, bb, c)
	if b.extra > 0 { // (0, 0) is the first entry of row 0
		J[0] += b.extraSum(p)
	}
}

// ParamJac writes ∂F/∂p, row-major (2N × len(p)), into Jp, as
// ode.Problem.ParamJac.
func (b *Bruss1DParams[T]) ParamJac(Jp, u []T, p []float32, _ float64) {
	n, np := b.N, 3+b.extra
	clear(Jp[:2*n*np])
	k := T(b.h2 / 50)
	for i := 0; i < n; i++ {
		ui, vi := u[2*i], u[2*i+1]
		ul, vl, ur, vr := b.neighbours(u, i)
		r, q := Jp[2*i*np:][:np], Jp[(2*i+1)*np:][:np]
		r[0], r[1], r[2] = 1, -ui, k*(ul-2*ui+ur)
		q[1], q[2] = ui, k*(vl-2*vi+vr)
	}
	for j := 3; j < np; j++ {
		Jp[j] = T(b.es) * u[0]
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
	if b.extra > 0 {
		jv[0] += b.extraSum(p) * v[0]
		if dp != nil {
			var s T
			for _, x := range dp[3 : 3+b.extra] {
				s += x
			}
			jv[0] += T(b.es) * u[0] * s
		}
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
	if b.extra > 0 {
		du[0] += b.extraSum(p) * w[0]
		if dp != nil {
			e := T(b.es) * u[0] * w[0]
			for k := 3; k < 3+b.extra; k++ {
				dp[k] += e
			}
		}
	}
}
