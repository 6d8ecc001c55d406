package ode

import "github.com/flatkit/flatkit/ode/linalg"

// rosDiscTab is a Rosenbrock step in the one form the discrete adjoint
// differentiates. With W = I − hγJ, J = ∂F/∂u at the step's start (t, u),
// and T the forward difference in t that stands for ∂F/∂t there
// (jacEval.timeDerivative),
//
//	W g_i = α_i h F(Y_i, t + c_i h) + Σ_{j<i} β_ij g_j + δ_i h² T,
//	Y_i = u + Σ_{j<i} a_ij g_j,  Y_0 = u,
//	u_new = u + Σ_i m_i g_i,
//
// and the dense output at t + θh is
//
//	(1−θ)u + θ u_new + Σ_i w_i(θ) g_i,  w_i(θ) = Σ_{p=1}^{4} P[p−1][i] θ^p.
//
// Rodas5P's tableau (rosTableau, Hairer–Wanner's form without products
// with J) has α_i = γ, β_ij = γC_ij, δ_i = γd_i. Rosenbrock23 (ros23), in
// terms of its k1, k2: g_1 = h·k1, g_2 = h·(k2 − k1).
type rosDiscTab struct {
	s     int
	gamma float64
	a     [][]float64 // a[i] has i entries
	beta  [][]float64 // beta[i] has i entries
	alpha []float64
	c     []float64
	delta []float64
	m     []float64
	dense [4][]float64
}

// rosDiscOf returns the tableau of the Rosenbrock method m, or nil when m
// is not one.
func rosDiscOf(m Method) *rosDiscTab {
	switch methodValue(m).(type) {
	case Rodas5PMethod:
		return rodas5pDisc
	case Rosenbrock23Method:
		return ros23Disc
	}
	return nil
}

var (
	rodas5pDisc = rosDiscFromTableau(rodas5pTab)
	ros23Disc   = ros23DiscTab()
)

func rosDiscFromTableau(tb *rosTableau) *rosDiscTab {
	s := len(tb.c)
	d := &rosDiscTab{s: s, gamma: tb.gamma, a: tb.a, c: tb.c, m: tb.m,
		beta: make([][]float64, s), alpha: make([]float64, s), delta: make([]float64, s)}
	for i := range s {
		d.alpha[i] = tb.gamma
		d.delta[i] = tb.gamma * tb.d[i]
		d.beta[i] = make([]float64, i)
		for j, v := range tb.C[i] {
			d.beta[i][j] = tb.gamma * v
		}
	}
	// θ(1−θ)(K1 + θK2 + θ²K3) in powers of θ.
	h0, h1, h2 := tb.h[0], tb.h[1], tb.h[2]
	for p := range d.dense {
		d.dense[p] = make([]float64, s)
	}
	for j := range s {
		d.dense[0][j] = h0[j]
		d.dense[1][j] = h1[j] - h0[j]
		d.dense[2][j] = h2[j] - h1[j]
		d.dense[3][j] = -h2[j]
	}
	return d
}

// ros23DiscTab is ros23 in rosDiscTab's form: W g_1 = hF_0 + h²d·T,
// W g_2 = hF(u + g_1/2, t + h/2) − g_1, u_new = u + g_1 + g_2, and its
// interpolant u + θg_1 + θ(θ−2d)/(1−2d)·g_2.
func ros23DiscTab() *rosDiscTab {
	d := r23D
	q := 1 / (1 - 2*d)
	return &rosDiscTab{s: 2, gamma: d,
		a:     [][]float64{{}, {0.5}},
		beta:  [][]float64{{}, {-1}},
		alpha: []float64{1, 1},
		c:     []float64{0, 0.5},
		delta: []float64{d, 0},
		m:     []float64{1, 1},
		dense: [4][]float64{{0, -q}, {0, q}, {0, 0}, {0, 0}},
	}
}

// denseWeights writes w_i(θ) into w.
func (d *rosDiscTab) denseWeights(w []float64, θ float64) {
	for i := range w {
		w[i] = ((d.dense[3][i]*θ+d.dense[2][i])*θ+d.dense[1][i])*θ*θ + d.dense[0][i]*θ
	}
}

// transposeSolver solves with the transpose of a factored matrix.
type transposeSolver[T Float] interface{ SolveTranspose(b []T) }

// SolveTranspose overwrites b with W⁻ᵀb.
func (d *denseFill[T]) SolveTranspose(b []T) { linalg.LUSolveTranspose(d.W, d.n, d.piv, b) }

// SolveTranspose overwrites b with W⁻ᵀb, by the inner solver's own
// transposed solve.
func (g *gatherLU[T]) SolveTranspose(b []T) { g.lu.(transposeSolver[T]).SolveTranspose(b) }

var (
	_ transposeSolver[float64] = (*denseFill[float64])(nil)
	_ transposeSolver[float64] = (*gatherLU[float64])(nil)
	_ transposeSolver[float64] = (*linalg.BandLU[float64])(nil)
	_ transposeSolver[float64] = (*linalg.SparseLU[float64])(nil)
)

// transposedSolve returns the solve with Wᵀ from the factorisation that
// ls's solves use, or nil when ls solves iteratively.
func transposedSolve[T Float](ls linSys[T]) func(b []T) {
	switch s := ls.(type) {
	case *denseSys[T]:
		w := &s.w
		return func(b []T) { linalg.LUSolveTranspose(w.W, w.n, w.piv, b) }
	case *structSys[T]:
		if t, ok := s.lu.(transposeSolver[T]); ok {
			return t.SolveTranspose
		}
	}
	return nil
}
