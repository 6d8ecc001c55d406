package ode

import (
	"errors"

	"github.com/flatkit/flatkit/ode/linalg"
)

// newSparseLU is linalg's sparse LU of pattern p, the SparseLU solver.
func newSparseLU[T Float](p *linalg.Pattern) (shiftedLU[T], error) {
	return nil, errors.New("the sparse LU is not merged yet") // TODO(seam): linalg.NewSparseLU once h27-sparse lands
}
