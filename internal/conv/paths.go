package conv

// Paths names the kernel each of Forward, Data and Filter runs for g, in
// the words of the package documentation:
//
//   - "block": the blocked AVX-512 kernels.
//   - "pointwise": 1×1 kernels by one GEMM over the channels.
//   - "small": the small-output tables.
//   - "smallgemm": small outputs by one GEMM over the batch.
//   - "wide": the direct tap kernels over wide planes.
//   - "rows": the per-row direct loops.
//   - "cols": the wide im2col and one GEMM per image; for strides above 1,
//     over phase planes.
//   - "tapgemm": one GEMM per kernel tap.
//   - "im2col": im2col or col2im and one GEMM.
//
// It restates the rules of Forward, Data and Filter, so that a profile can
// be read per layer. Keep the two in step.
func Paths(g *Geom) (forward, data, filter string) {
	wd, wide := wideOf(g)
	pd := phasedOf(g)
	direct := func() string {
		switch {
		case small(g):
			return "small"
		case wide:
			return "wide"
		}
		return "rows"
	}
	if usePointwise(g) {
		return "pointwise", "pointwise", "pointwise"
	}
	if useSmallGemm(g) {
		return "smallgemm", "smallgemm", "smallgemm"
	}
	gemm := UseGemm(g)
	switch {
	case useBlock(g) && !small(g):
		forward = "block"
	case gemm && wide && useCols(g, &wd):
		forward = "cols"
	case gemm && wide:
		forward = "tapgemm"
	case gemm:
		forward = "im2col"
	default:
		forward = direct()
	}
	// Data and Filter take the same GEMM and direct paths (GemmData,
	// GemmFilter); Data may take the block path ahead of them.
	switch {
	case gemm && wide:
		filter = "tapgemm"
	case gemm && useCols(g, &pd):
		filter = "cols"
	case gemm:
		filter = "im2col"
	default:
		filter = direct()
	}
	data = filter
	if wide && useBlockData(g) && !small(g) {
		data = "block"
	}
	return forward, data, filter
}
