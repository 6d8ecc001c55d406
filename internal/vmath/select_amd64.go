//go:build !noasm

package vmath

import "github.com/flatkit/flatkit/internal/cpu"

//go:generate sh -c "python3 gen/select_amd64.py > select_amd64.s"

// Assembly kernels of select_amd64.s, with the conventions of
// vmath_amd64.go. The AVX-512 kernels take any length, with a masked
// tail. The AVX2 kernels take a multiple of 8, the rest going to the Go
// kernels.

//go:noescape
func reluAVX512(dst, src []float32)

//go:noescape
func reluAVX2(dst, src []float32)

//go:noescape
func indicatorAVX512(dst, src []float32, lo, hi float32)

//go:noescape
func indicatorAVX2(dst, src []float32, lo, hi float32)

//go:noescape
func maskPositiveAVX512(dst, c, y []float32)

//go:noescape
func maskPositiveAVX2(dst, c, y []float32)

//go:noescape
func mulAVX512(dst, a, b []float32)

//go:noescape
func mulAVX2(dst, a, b []float32)

func relu(dst, src []float32) {
	dst = dst[:len(src)]
	switch isa {
	case cpu.AVX512:
		reluAVX512(dst, src)
	case cpu.AVX2:
		m := len(src) &^ 7
		reluAVX2(dst[:m], src[:m])
		reluGo(dst[m:], src[m:])
	default:
		reluGo(dst, src)
	}
}

func indicator(dst, src []float32, lo, hi float32) {
	dst = dst[:len(src)]
	switch isa {
	case cpu.AVX512:
		indicatorAVX512(dst, src, lo, hi)
	case cpu.AVX2:
		m := len(src) &^ 7
		indicatorAVX2(dst[:m], src[:m], lo, hi)
		indicatorGo(dst[m:], src[m:], lo, hi)
	default:
		indicatorGo(dst, src, lo, hi)
	}
}

func maskPositive(dst, c, y []float32) {
	dst, y = dst[:len(c)], y[:len(c)]
	switch isa {
	case cpu.AVX512:
		maskPositiveAVX512(dst, c, y)
	case cpu.AVX2:
		m := len(c) &^ 7
		maskPositiveAVX2(dst[:m], c[:m], y[:m])
		maskPositiveGo(dst[m:], c[m:], y[m:])
	default:
		maskPositiveGo(dst, c, y)
	}
}

func mul(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	switch isa {
	case cpu.AVX512:
		mulAVX512(dst, a, b)
	case cpu.AVX2:
		m := len(a) &^ 7
		mulAVX2(dst[:m], a[:m], b[:m])
		mulGo(dst[m:], a[m:], b[m:])
	default:
		mulGo(dst, a, b)
	}
}
