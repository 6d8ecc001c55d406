package ode

import "github.com/flatkit/flatkit/ode/linalg"

// denseJac reads Problem.Jac, written in the storage of the problem's
// JacStructure, as the row-major n×n matrix that the gradient code's
// dense systems work with (BacksolveAdjoint's, a dense
// ForwardSensitivity's, the rows of the sensitivities' right-hand side;
// the structured ones are in sens_adjoint_struct.go and
// sens_forward_struct.go). A band
// Jac is expanded by linalg.BandToDense, a sparse one scattered from its
// CSR values; both cost a buffer of their storage besides the n×n matrix.
// A matrix-free structure's Jac is not used, as Structure says: the
// Jacobian then comes from the products, as without Jac.
type denseJac[T Float] struct {
	jac func(J, u []T, p []float32, t float64) // nil: no Jac to read
	s   Structure
	n   int
	buf []T // the band's or the pattern's storage
}

// usesJac reports whether prob's Jac is to be read: it is set and the
// structure is not matrix-free.
func usesJac[T Float](prob *Problem[T]) bool {
	_, free := prob.JacStructure.(MatrixFreeJacobian)
	return prob.Jac != nil && !free
}

// set prepares d for prob; the buffer is kept when it is large enough.
func (d *denseJac[T]) set(prob *Problem[T]) error {
	n := len(prob.U0)
	d.jac, d.s, d.n = nil, prob.JacStructure, n
	if !usesJac(prob) {
		return nil
	}
	size := 0
	if d.s != nil {
		if err := checkStructure(d.s, n); err != nil {
			return errorf("Gradient: %v", err)
		}
		switch s := d.s.(type) {
		case BandJacobian:
			size = n * (s.Lower + s.Upper + 1)
		case SparseJacobian:
			size = s.Pattern.NNZ()
		}
	}
	if cap(d.buf) < size {
		d.buf = make([]T, size)
	}
	d.buf = d.buf[:size]
	d.jac = prob.Jac
	return nil
}

// ok reports whether there is a Jac to read.
func (d *denseJac[T]) ok() bool { return d.jac != nil }

// eval writes J = ∂F/∂u at u, p and t, n×n row-major, from Problem.Jac.
func (d *denseJac[T]) eval(J, u []T, p []float32, t float64) {
	switch s := d.s.(type) {
	case BandJacobian:
		clear(d.buf) // the corners outside the matrix stay 0
		d.jac(d.buf, u, p, t)
		linalg.BandToDense(J, d.n, s.Lower, s.Upper, d.buf)
	case SparseJacobian:
		clear(d.buf)
		d.jac(d.buf, u, p, t)
		n, pat := d.n, s.Pattern
		J = J[:n*n]
		clear(J)
		for i := 0; i < n; i++ {
			row := J[i*n : (i+1)*n]
			for k := pat.RowPtr[i]; k < pat.RowPtr[i+1]; k++ {
				row[pat.ColIdx[k]] = d.buf[k]
			}
		}
	default:
		d.jac(J, u, p, t)
	}
}
