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

// String returns "go", "avx2" or "avx512", as flat.ISA reports it.
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

// HasAVX reports AVX, with or without AVX2. flat's GEMM packing routines
// need it: they run on every CPU with AVX, whatever Best is.
var HasAVX = detected().AVX
