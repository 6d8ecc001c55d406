package flat

import "github.com/flatkit/flatkit/internal/cpu"

// isaLevel is a set of kernels: pure Go, AVX2 with FMA, or AVX-512.
type isaLevel = cpu.Level

const (
	isaGo     = cpu.Generic
	isaAVX2   = cpu.AVX2
	isaAVX512 = cpu.AVX512
)

// vecISA is the kernel set the vector kernels and Gemv use. It is chosen
// once at start-up (detectISA), and only tests change it, to run every
// kernel set the machine supports.
var vecISA = detectISA()

// detectISA is the kernel set internal/cpu chooses for this machine.
func detectISA() isaLevel { return cpu.Best }

// ISA reports the kernel set that the vector kernels and Gemv run on this
// machine: "avx512", "avx2" or "go". "avx512" is AVX-512F, with AVX2 and
// FMA; "avx2" is AVX2 with FMA. "go" is pure Go: the noasm build tag, an
// architecture other than amd64, or a CPU without AVX2 and FMA. It is chosen once, at start-up, by
// internal/cpu's rule (golang.org/x/sys/cpu checks that the operating
// system saves the wide registers).
func ISA() string { return vecISA.String() }

// supportedISAs returns every kernel set this machine can run, narrowest
// first, for tests that compare them.
func supportedISAs() []isaLevel {
	var ls []isaLevel
	for l := isaGo; l <= detectISA(); l++ {
		ls = append(ls, l)
	}
	return ls
}
