//go:build !noasm

package vmath

import "github.com/flatkit/flatkit/internal/cpu"

//go:generate sh -c "python3 gen/vmath_amd64.py > vmath_amd64.s"

// Assembly kernels of vmath_amd64.s. They read len(src) elements of src and
// write as many to dst, whose length the callers have checked. The AVX-512
// kernels take any length, finishing with a masked load and store; the AVX2
// kernels take a multiple of 8 and leave the rest to the Go kernels.

//go:noescape
func tanhAVX512(dst, src []float32)

//go:noescape
func tanhAVX2(dst, src []float32)

//go:noescape
func sigmoidAVX512(dst, src []float32)

//go:noescape
func sigmoidAVX2(dst, src []float32)

func tanh(dst, src []float32) {
	dst = dst[:len(src)]
	switch isa {
	case cpu.AVX512:
		tanhAVX512(dst, src)
	case cpu.AVX2:
		m := len(src) &^ 7
		tanhAVX2(dst[:m], src[:m])
		tanhGo(dst[m:], src[m:])
	default:
		tanhGo(dst, src)
	}
}

func sigmoid(dst, src []float32) {
	dst = dst[:len(src)]
	switch isa {
	case cpu.AVX512:
		sigmoidAVX512(dst, src)
	case cpu.AVX2:
		m := len(src) &^ 7
		sigmoidAVX2(dst[:m], src[:m])
		sigmoidGo(dst[m:], src[m:])
	default:
		sigmoidGo(dst, src)
	}
}
