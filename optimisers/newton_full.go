package optimisers

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// Newton is gonum's optimize.Newton, a line-search Newton method on the
// full Hessian, for Minimize: for few parameters, where forming and
// factorising the Hessian costs less than NewtonCG's products. Pass it to
// Minimize:
//
//	res, err := optimisers.Minimize(fg, θ, &optimisers.Newton{Hv: hv}, nil)
//
// Each iteration solves (H + τI)d = −g by Cholesky, with τ raised from 0
// until H + τI is positive definite, and searches along d. The Hessian
// comes from Hessian, or, when that is nil, from len(θ) products of Hv
// with the unit vectors, symmetrised as HessianFromHv does. An error of
// either, or a non-finite entry, ends the run with an error; failed
// evaluations of the objective are handled as for LBFGS (see Minimize).
//
// Settings.HessEvaluations counts Hessians, not products.
type Newton struct {
	// Hessian writes the Hessian of the objective at θ into h, of side
	// len(θ). Hessian must not keep θ or h.
	Hessian func(θ []float32, h *mat.SymDense) error
	// Hv is the Hessian-vector product NewtonCG takes; it is used when
	// Hessian is nil.
	Hv func(θ, v, hv []float32) error
	// Increase is the factor by which τ grows; zero means 5, gonum's
	// default. It must be above 1.
	Increase float64
	// Linesearcher is gonum's; nil means gonum's default for Newton,
	// optimize.Bisection. Minimize wraps it to back off from failed points.
	Linesearcher optimize.Linesearcher

	ownLoop // the optimize.Method side: Minimize runs gonum's Newton in its place
}

// gonum validates m and returns the gonum method Minimize runs and the
// Hessian of n parameters it evaluates, with its scratch allocated once.
func (m *Newton) gonum(n int) (*optimize.Newton, func(θ []float32, h *mat.SymDense) error, error) {
	switch {
	case m.Hessian == nil && m.Hv == nil:
		return nil, nil, errorf("Minimize: Newton has neither Hessian nor Hv, want one")
	case m.Increase != 0 && !(m.Increase > 1):
		return nil, nil, errorf("Minimize: Newton.Increase = %v, want > 1 (0 means 5)", m.Increase)
	}
	g := &optimize.Newton{Increase: m.Increase, Linesearcher: m.Linesearcher}
	if m.Hessian != nil {
		return g, m.Hessian, nil
	}
	s := newHvScratch(n)
	return g, func(θ []float32, h *mat.SymDense) error {
		_, err := s.hessian(θ, m.Hv, h)
		return err
	}, nil
}

// hvScratch holds the buffers that build a Hessian from products.
type hvScratch struct {
	full   []float64
	e, col []float32
	x      []float32
}

func newHvScratch(n int) *hvScratch {
	return &hvScratch{full: make([]float64, n*n), e: make([]float32, n), col: make([]float32, n), x: make([]float32, n)}
}

// hessian writes into h the symmetrised Hessian at θ from one product of
// hv per unit vector, and returns the asymmetry before (HessianFromHv).
func (s *hvScratch) hessian(θ []float32, hv func(θ, v, hv []float32) error, h *mat.SymDense) (float64, error) {
	n := len(θ)
	full, e, col, x := s.full, s.e, s.col, s.x
	for j := range n {
		copy(x, θ) // hv may not keep or change θ, but guard the caller's
		e[j] = 1
		err := hv(x, e, col)
		e[j] = 0
		if err != nil {
			return 0, errorf("HessianFromHv: product %d of %d: %w", j+1, n, err)
		}
		for i, v := range col {
			full[i*n+j] = float64(v)
		}
	}
	big, asym := 0.0, 0.0
	for i := range n {
		for j := i; j < n; j++ {
			a, b := full[i*n+j], full[j*n+i]
			big = math.Max(big, math.Max(math.Abs(a), math.Abs(b)))
			asym = math.Max(asym, math.Abs(a-b))
			h.SetSym(i, j, (a+b)/2)
		}
	}
	if big > 0 {
		asym /= big
	}
	return asym, nil
}
