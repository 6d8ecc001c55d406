package flat

// PeakFMALoop is a benchmarking aid: it runs iters iterations of an
// assembly loop of independent fused multiply-adds on the widest vector
// registers the CPU offers (the kernel set ISA reports) and returns the
// floating-point operations it performed, iters·regs·lanes·2: with AVX-512,
// sixteen ZMM accumulators of 16 float32 lanes (512 flops per iteration);
// with AVX2, twelve YMM accumulators of 8 lanes (192). Sixteen (twelve)
// independent chains cover the FMA latency (4 cycles) times the number of
// FMA pipes (2) with room to spare, so flops divided by the elapsed time is
// the core's float32 FMA peak, the ceiling Gemm is measured against. It
// returns 0, doing nothing, where there is no assembly (the noasm build tag,
// other architectures, CPUs without AVX2 and FMA).
func PeakFMALoop(iters int) (flops int) {
	if iters <= 0 {
		return 0
	}
	return peakFMA(vecISA, iters)
}

// PeakFMALoopAVX2 is PeakFMALoop restricted to 256-bit registers (twelve YMM
// accumulators, 192 flops per iteration), so that an AVX-512 machine can
// report both peaks. It returns 0 where AVX2 with FMA is not available.
func PeakFMALoopAVX2(iters int) (flops int) {
	if iters <= 0 || vecISA < isaAVX2 {
		return 0
	}
	return peakFMA(isaAVX2, iters)
}
