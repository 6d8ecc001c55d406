// Package vmath holds vectorised float32 elementwise functions for ad's
// activation kernels. Tanh and Sigmoid work over whole slices. select.go
// holds the exact Relu, MaskPositive, Indicator and Mul of a ReLU layer's
// passes and masks. pool.go holds MaxPoolRows, the windows of a 2-D
// max-pool that lie inside the plane. It is an AVX-512 kernel only: it
// reports whether it ran, and ad's own loop does the rest.
//
// Each function runs Go assembly on amd64, chosen once at start-up by
// internal/cpu's rule. AVX-512 runs sixteen lanes, with a masked load and
// store for the tail. AVX2 runs eight lanes, with the tail in Go. A pure-Go
// loop runs with the build tag noasm, on other architectures, and on a CPU
// without AVX2 and FMA. Only package ad imports vmath, as DESIGN.md's
// "The house" says.
//
// Every path computes the same float32 operations in the same order, each
// rounded once. The assembly uses separate multiplies and adds, not fused
// multiply-adds. The scalar references convert explicitly, so that no
// compiler fuses them. So Tanh and Sigmoid agree bit for bit with
// TanhScalar and SigmoidScalar on every kernel set and every architecture.
// NaN payloads are the one exception: a NaN input gives a NaN output, not
// necessarily the same NaN.
//
// Accuracy is measured over every float32 input, in units in the last
// place of the float32 result. Tanh, Eigen's rational approximation, is
// within 6.9; Sigmoid, built on an expf, is within 2.4.
// TestTanhAccuracy and TestSigmoidAccuracy pin the bounds. TanhScalar and
// SigmoidScalar say more.
package vmath
