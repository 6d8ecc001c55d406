package ode

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// The 1-D Brusselator of Hairer and Wanner II (section IV.10): N grid
// points x_i = i/(N+1), i = 1…N, and 2N states interleaved as
// y[2(i−1)] = u_i, y[2(i−1)+1] = v_i, with
//
//	u_i' = 1 + u_i²v_i − 4u_i + α(u_{i−1} − 2u_i + u_{i+1})
//	v_i' = 3u_i − u_i²v_i + α(v_{i−1} − 2v_i + v_{i+1})
//
// α = (N+1)²/50, boundary values u = 1, v = 3, and u(0) = 1 + sin(2πx_i),
// v(0) = 3 on t ∈ [0, 10]. Its Jacobian is banded with bandwidths 2 and 2.
type linsysBruss struct {
	N     int
	alpha float64
}

func newLinsysBruss(N int) linsysBruss { return linsysBruss{N: N, alpha: float64((N+1)*(N+1)) / 50} }

// at returns u_i and v_i for i in 0…N+1, with the boundary values.
func (b linsysBruss) at(y []float64, i int) (u, v float64) {
	if i == 0 || i == b.N+1 {
		return 1, 3
	}
	return y[2*(i-1)], y[2*(i-1)+1]
}

func (b linsysBruss) f(du, y []float64, _ []float32, _ float64) {
	a := b.alpha
	for i := 1; i <= b.N; i++ {
		ul, vl := b.at(y, i-1)
		u, v := b.at(y, i)
		ur, vr := b.at(y, i+1)
		uuv := u * u * v
		du[2*(i-1)] = 1 + uuv - 4*u + a*(ul-2*u+ur)
		du[2*(i-1)+1] = 3*u - uuv + a*(vl-2*v+vr)
	}
}

// entries calls set(row, col, value) for every structural non-zero of J.
func (b linsysBruss) entries(y []float64, set func(i, j int, v float64)) {
	a := b.alpha
	n := 2 * b.N
	for i := 1; i <= b.N; i++ {
		u, v := b.at(y, i)
		r := 2 * (i - 1)
		set(r, r, 2*u*v-4-2*a)
		set(r, r+1, u*u)
		set(r+1, r, 3-2*u*v)
		set(r+1, r+1, -u*u-2*a)
		if r >= 2 {
			set(r, r-2, a)
			set(r+1, r-1, a)
		}
		if r+2 < n {
			set(r, r+2, a)
			set(r+1, r+3, a)
		}
	}
}

// jacDense writes the analytic Jacobian, row-major.
func (b linsysBruss) jacDense(J, y []float64, _ []float32, _ float64) {
	n := 2 * b.N
	clear(J[:n*n])
	b.entries(y, func(i, j int, v float64) { J[i*n+j] = v })
}

// jacBand writes it in the band storage of BandJacobian{2, 2}.
func (b linsysBruss) jacBand(J, y []float64, _ []float32, _ float64) {
	clear(J)
	b.entries(y, func(i, j int, v float64) { J[bandPos(i, j, 2, 2)] = v })
}

// pattern is the exact pattern of J: 6 entries in most rows.
func (b linsysBruss) pattern() *linalg.Pattern {
	var e []linalg.Entry
	b.entries(make([]float64, 2*b.N), func(i, j int, _ float64) { e = append(e, linalg.Entry{Row: i, Col: j}) })
	p, err := linalg.NewPattern(2*b.N, 2*b.N, e)
	if err != nil {
		panic(err)
	}
	return p
}

// jacSparse writes it in the CSR order of pattern p.
func (b linsysBruss) jacSparse(p *linalg.Pattern) func(J, y []float64, _ []float32, _ float64) {
	return func(J, y []float64, _ []float32, _ float64) {
		b.entries(y, func(i, j int, v float64) { J[p.Index(i, j)] = v })
	}
}

// jvp is the exact product J·w, the parameter part ignored.
func (b linsysBruss) jvp(jv, y, w []float64, _ []float32, _ []float64, _ float64) {
	a := b.alpha
	for i := 1; i <= b.N; i++ {
		u, v := b.at(y, i)
		r := 2 * (i - 1)
		wu, wv := w[r], w[r+1]
		var wul, wvl, wur, wvr float64
		if i > 1 {
			wul, wvl = w[r-2], w[r-1]
		}
		if i < b.N {
			wur, wvr = w[r+2], w[r+3]
		}
		jv[r] = (2*u*v-4-2*a)*wu + u*u*wv + a*(wul+wur)
		jv[r+1] = (3-2*u*v)*wu + (-u*u-2*a)*wv + a*(wvl+wvr)
	}
}

func (b linsysBruss) u0() []float64 {
	y := make([]float64, 2*b.N)
	for i := 1; i <= b.N; i++ {
		x := float64(i) / float64(b.N+1)
		y[2*(i-1)] = 1 + math.Sin(2*math.Pi*x)
		y[2*(i-1)+1] = 3
	}
	return y
}

func (b linsysBruss) problem() Problem[float64] {
	return Problem[float64]{F: b.f, U0: b.u0(), T1: 10}
}
