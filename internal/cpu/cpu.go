// Package cpu decides, once and by one rule, which SIMD kernel set this
// machine runs: flat, internal/vmath, internal/conv, optimisers and ode all read
// Best instead of asking golang.org/x/sys/cpu themselves.
//
// The rule (Features.Level): AVX512 needs AVX-512F, AVX2, FMA and AVX;
// AVX2 needs AVX2, FMA and AVX; otherwise Generic. Each level includes the
// one below because the wide kernels lean on the narrower ones (flat's
// AVX-512 GEMM hands narrow products to its AVX2 kernel), and FMA is part
// of the AVX2 level because flat's AVX2 kernels need it. No x86 CPU ships
// AVX2 without FMA or AVX-512F without AVX2, so on real hardware the kernels
// that use no FMA (vmath, Adam) lose nothing. x/sys/cpu reports the wide
// features only where the operating system saves their registers.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package of the module may use it.
package cpu

// Level is a set of vector kernels, ordered: a wider level may use every
// instruction of the narrower ones.
type Level uint8

const (
	// Generic is the pure-Go kernels: the noasm build tag, an architecture
	// other than amd64, or a CPU without AVX2 and FMA.
	Generic Level = iota
	// AVX2 is the AVX2 kernels; flat's also use FMA.
	AVX2
	// AVX512 is the AVX-512F kernels.
	AVX512
)

// String returns "go", "avx2" or "avx512" (what flat.ISA reports).
func (l Level) String() string {
	switch l {
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return "go"
}

// Features are the CPU facts the rule reads.
type Features struct {
	AVX, AVX2, FMA, AVX512F bool
}

// Level returns the widest kernel set f supports.
func (f Features) Level() Level {
	switch {
	case !f.AVX || !f.AVX2 || !f.FMA:
		return Generic
	case f.AVX512F:
		return AVX512
	}
	return AVX2
}

// Best is the kernel set this machine runs: Features.Level of its CPU, or
// Generic under the noasm build tag and off amd64. Tests of the kernels
// lower their own copies of it, never this.
var Best = detected().Level()

// HasAVX reports AVX (without AVX2), which flat's GEMM packing routines
// need: they run on every CPU with AVX, whatever Best is.
var HasAVX = detected().AVX
