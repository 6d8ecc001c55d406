package flat

import (
	"math"
	"strconv"

	"gonum.org/v1/gonum/blas/gonum"
)

// Axpy and Dot use gonum's assembly kernels; the rest are pure Go, unrolled
// by four with independent accumulators so the loop-carried dependencies stay
// short. flatkit's own SIMD kernels will replace them behind the same
// signatures.

var blas gonum.Implementation

// Axpy computes y += alpha·x. It panics if len(x) != len(y). As in BLAS,
// alpha == 0 leaves y untouched, even where x holds NaN or Inf.
func Axpy(alpha float32, x, y []float32) {
	mustSameLen("Axpy", len(x), len(y))
	blas.Saxpy(len(x), alpha, x, 1, y, 1)
}

// Dot returns Σ x[i]·y[i]. It panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	mustSameLen("Dot", len(x), len(y))
	return blas.Sdot(len(x), x, 1, y, 1)
}

// Sum returns Σ x[i].
func Sum(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Norm returns the Euclidean norm of x. The squares are summed in float64, so
// the result neither overflows nor underflows for any finite float32 input
// whose norm is representable.
func Norm(x []float32) float32 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		a, b := float64(x[i]), float64(x[i+1])
		s0 += a * a
		s1 += b * b
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return float32(math.Sqrt(s0 + s1))
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) {
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x[i] *= alpha
		x[i+1] *= alpha
		x[i+2] *= alpha
		x[i+3] *= alpha
	}
	for ; i < len(x); i++ {
		x[i] *= alpha
	}
}

// Fill sets every element of x to v.
func Fill(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}

// Copy copies src into dst (Go's argument order). It panics if the lengths
// differ: a silent partial copy would hide a bug.
func Copy(dst, src []float32) {
	mustSameLen("Copy", len(dst), len(src))
	copy(dst, src)
}

// Clone returns a new slice with the same elements as x. Clone of nil is nil.
func Clone(x []float32) []float32 {
	if x == nil {
		return nil
	}
	return append(make([]float32, 0, len(x)), x...)
}

func mustSameLen(op string, a, b int) {
	if a != b {
		panic("flat: " + op + ": lengths " + strconv.Itoa(a) + " and " + strconv.Itoa(b) + " differ")
	}
}
