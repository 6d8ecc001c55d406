//go:build !noasm

package optimisers

//go:generate sh -c "python3 gen/adam_amd64.py > adam_amd64.s"

import (
	"unsafe"

	"github.com/flatkit/flatkit/internal/cpu"
)

// Vector kernels for Adam's fused step (adam_amd64.s). They give the same
// bits as the Go loop: the same operations in the same order, without FMA.

const (
	simdNone = iota
	simdAVX2
	simdAVX512
)

// simd is the kernel set internal/cpu chooses for this machine; tests lower
// it to compare the kernels.
var simd = func() int {
	switch cpu.Best {
	case cpu.AVX512:
		return simdAVX512
	case cpu.AVX2:
		return simdAVX2
	}
	return simdNone
}()

// The kernels read the coefficients at fixed offsets.
const _ = uint(unsafe.Offsetof(adam{}.a)-16) + uint(16-unsafe.Offsetof(adam{}.a)) +
	uint(unsafe.Offsetof(adam{}.e)-20) + uint(20-unsafe.Offsetof(adam{}.e)) +
	uint(unsafe.Offsetof(adam{}.keep)-28) + uint(28-unsafe.Offsetof(adam{}.keep)) +
	uint(unsafe.Offsetof(adam{}.c2)-12) + uint(12-unsafe.Offsetof(adam{}.c2))

//go:noescape
func adamFuseAVX2(k *adam, θ, g, m, v []float32)

//go:noescape
func adamFuseAVX512(k *adam, θ, g, m, v []float32)

// adamFuseSIMD runs Adam's fused step over the longest prefix of θ a vector
// kernel handles and returns its length; g, m and v are at least as long
// as θ.
func adamFuseSIMD(k *adam, θ, g, m, v []float32) int {
	switch simd {
	case simdAVX512:
		n := len(θ) &^ 15
		if n > 0 {
			adamFuseAVX512(k, θ[:n], g[:n], m[:n], v[:n])
		}
		return n
	case simdAVX2:
		n := len(θ) &^ 7
		if n > 0 {
			adamFuseAVX2(k, θ[:n], g[:n], m[:n], v[:n])
		}
		return n
	}
	return 0
}
