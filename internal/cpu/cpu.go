// Package cpu names the SIMD kernel sets flatkit's assembly comes in, so
// that flat, internal/vmath, internal/conv and optimisers speak of them the
// same way.
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
