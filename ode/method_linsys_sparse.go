package ode

import "github.com/flatkit/flatkit/ode/linalg"

// newSparseLU is linalg's sparse LU of pattern p, the SparseLU solver: its
// ordering and symbolic analysis are done here, once per integrator, and
// reused by every factorisation.
func newSparseLU[T Float](p *linalg.Pattern) (shiftedLU[T], error) {
	lu, err := linalg.NewSparseLU[T](p)
	if err != nil {
		return nil, err
	}
	return lu, nil
}
