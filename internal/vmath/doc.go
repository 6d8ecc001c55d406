// Package vmath holds vectorised float32 elementwise functions for ad's
// activation kernels: Tanh and Sigmoid over whole slices, and the exact
// Relu, MaskPositive, Indicator and Mul of a ReLU layer's passes and masks
// (select.go); and MaxPoolRows (pool.go), the windows of a 2-D max-pool
// that lie inside the plane, an AVX-512 kernel only (it reports whether it
// ran, and ad's own loop does the rest).
//
// Each function runs Go assembly on amd64, chosen once at start-up by
// internal/cpu's rule (AVX-512: sixteen lanes, with a
// masked load and store for the tail; else AVX2: eight lanes, with the tail
// in Go), and a pure-Go loop with the build tag noasm, on other architectures
// or on a CPU without AVX2 and FMA. Only package ad imports it (DESIGN.md, "The
// house").
//
// Every path computes the same float32 operations in the same order, each
// rounded once (the assembly uses separate multiplies and adds, not fused
// multiply-adds, and the scalar references convert explicitly so that no
// compiler fuses them), so Tanh and Sigmoid agree bit for bit with TanhScalar
// and SigmoidScalar on every kernel set and every architecture. NaN payloads
// are the one exception: a NaN input gives a NaN output, not necessarily the
// same NaN.
//
// Accuracy over every float32 input, in units in the last place of the
// float32 result: Tanh within 6.9 (3.44 × 2⁻²³ relative; Eigen's rational
// approximation, as ad used before), Sigmoid within 2.4 (an expf, with no
// cancellation for negative x). TanhScalar and SigmoidScalar say more.
package vmath
