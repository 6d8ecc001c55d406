package flat

import "strconv"

// The vector kernels. Each public function checks its arguments and hands the
// work to an unexported kernel: on amd64 (without the noasm build tag) that is
// an AVX-512 or AVX2+FMA assembly loop chosen once at start-up from the CPU's
// features (vec_amd64.go); elsewhere, and with -tags noasm, it is the pure-Go
// loop of the same name with a Go suffix (vec_purego.go).
//
// The assembly kernels use fused multiply-adds and several independent
// accumulators, so Axpy may round once where the Go loop rounds twice, and
// Dot and Sum may add in a different order: results agree with the pure-Go
// ones to within the usual floating-point error bounds, not bit for bit.
// Scale and Fill are exact either way, and Norm accumulates in float64 in
// both.

// Axpy computes y += alpha·x. It panics if x and y differ in length. As in BLAS,
// alpha == 0 leaves y untouched, even where x holds NaN or Inf.
func Axpy(alpha float32, x, y []float32) {
	mustSameLen("Axpy", len(x), len(y))
	if alpha == 0 || len(x) == 0 {
		return
	}
	axpy(alpha, x, y)
}

// Dot returns Σ x[i]·y[i]. It panics if x and y differ in length.
func Dot(x, y []float32) float32 {
	mustSameLen("Dot", len(x), len(y))
	if len(x) == 0 {
		return 0
	}
	return dot(x, y)
}

// Sum returns Σ x[i].
func Sum(x []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	return sum(x)
}

// Norm returns the Euclidean norm of x. Each element is widened to float64,
// and the squares are summed in float64; the assembly kernels convert eight
// or four lanes at a time and use float64 fused multiply-adds. So the
// result neither overflows nor underflows for any finite float32 input
// whose norm is representable. Only the final rounding to float32 is
// visible.
func Norm(x []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	return norm(x)
}

// Scale computes x *= alpha. Every product is rounded once, so the result is
// the same on every kernel set.
func Scale(alpha float32, x []float32) {
	if len(x) == 0 {
		return
	}
	scale(alpha, x)
}

// Fill sets every element of x to v.
func Fill(x []float32, v float32) {
	if len(x) == 0 {
		return
	}
	fill(x, v)
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
		panic("flat: " + op + ": lengths " + strconv.Itoa(a) + " and " + strconv.Itoa(b) + " differ, want equal lengths")
	}
}
