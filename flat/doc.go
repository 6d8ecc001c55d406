// Package flat holds flatkit's one buffer: a contiguous []float32 with every
// parameter of a model in it, the Tensor views that name parts of it, and the
// kernels that read and write it.
//
// A Tensor is a shape over a slice of the buffer; creating, reshaping or
// slicing one never copies. The kernels follow BLAS argument orders where
// BLAS has the operation: Axpy, Dot, Scale, Gemv, Gemm. Copy follows Go's
// order. Kernels panic on mismatched lengths or bad strides, as gonum's do:
// a mismatch is a bug in the caller, not bad input.
//
// Gemm, Gemv and the vector kernels run Go assembly on amd64, chosen at
// start from the CPU's features: AVX-512, else AVX2 with FMA (ISA says
// which). With the build tag noasm or on other architectures they run pure
// Go. The tests compare each against the other and against float64
// references. Gemm packs panels and runs a register-blocked micro-kernel,
// 12×32 with AVX-512 and 6×16 with AVX2. Large products split across
// goroutines, up to the SetMaxThreads limit; small ones stay on the
// caller's goroutine. Once warm, no kernel allocates.
//
// ParallelFor runs one elementwise pass over disjoint chunks on several
// goroutines, for the optimisers' fused loops.
package flat
