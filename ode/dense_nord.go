package ode

// A stepper may store its dense output in a form of its own rather than
// as the polynomial in θ that dense writes: BDF keeps each step's
// Nordsieck array, which costs a copy per step where the conversion to
// powers of θ costs O(q²) operations per component. The interpolant is
// then evaluated only where it is read (as CVODE's CVodeGetDky does),
// and a step of order q keeps q+1 vectors instead of degree()+1.

// nordDenser is a stepper that stores its dense output as a polynomial
// in σ = (θ − 1)·r: appendDense appends the accepted step's coefficients
// to c and says where they are.
type nordDenser[T Float] interface {
	appendDense(it *Integrator[T], c []T) ([]T, nordStep)
}

// nordStep locates one step's dense output in the nordDenser form:
//
//	u(tPrev + θh) ≈ Σ_{j=0…q} σ^j c[off+j·n : off+(j+1)·n],  σ = (θ − 1)·r.
type nordStep struct {
	off, q int
	r      float64
}

// nordInto evaluates the step s of the stored coefficients c at θ.
func nordInto[T Float](dst, c []T, s nordStep, n int, θ float64) {
	hornerInto(dst, c[s.off:], s.q, n, T((θ-1)*s.r))
}
