package peak

import "github.com/flatkit/flatkit/internal/cpu"

// FMA runs iters iterations of an assembly loop of independent fused
// multiply-adds and returns the floating-point operations it performed. It
// uses the widest vector registers of the kernel set cpu.Best: with
// AVX-512, sixteen ZMM accumulators of 16 float32 lanes, 512 flops per
// iteration; with AVX2, twelve YMM accumulators of 8 lanes, 192 flops.
// That many independent chains cover the FMA latency times the number of
// FMA pipes with room to spare. So flops divided by the elapsed time is
// the core's float32 FMA peak, the ceiling flat.Gemm is measured against.
//
// FMA returns 0, doing nothing, where there is no assembly: the noasm
// build tag, another architecture, or a CPU without AVX2 and FMA.
func FMA(iters int) (flops int) {
	if iters <= 0 {
		return 0
	}
	return peakFMA(cpu.Best, iters)
}

// FMAAVX2 is FMA restricted to 256-bit registers, twelve YMM accumulators
// and 192 flops per iteration, so that an AVX-512 machine can report both
// peaks. It returns 0 where AVX2 with FMA is not available.
func FMAAVX2(iters int) (flops int) {
	if iters <= 0 || cpu.Best < cpu.AVX2 {
		return 0
	}
	return peakFMA(cpu.AVX2, iters)
}
