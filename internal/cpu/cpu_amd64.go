//go:build !noasm

package cpu

import xcpu "golang.org/x/sys/cpu"

func detected() Features {
	return Features{AVX: xcpu.X86.HasAVX, AVX2: xcpu.X86.HasAVX2, FMA: xcpu.X86.HasFMA, AVX512F: xcpu.X86.HasAVX512F}
}
