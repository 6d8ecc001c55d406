// Package flat holds flatkit's one buffer: a contiguous []float32 with every
// parameter of a model in it, the Tensor views that name parts of it, and the
// vector kernels that read and write it.
//
// A Tensor is a shape over a slice of the buffer; creating, reshaping or
// slicing one never copies. The kernels follow BLAS argument orders where BLAS
// has the operation (Axpy, Dot, Scale) and Go's order otherwise (Copy).
// Kernels panic on mismatched lengths, as gonum's do: a mismatch is a bug in
// the caller, not bad input.
package flat
