package flat

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
)

// Each kernel runs at three sizes: in L1 (256), in L2 (4096) and out of cache
// (1<<20 floats = 4 MiB per vector). Where gonum's blas32 has the same
// operation it runs beside ours as "gonum", on the same data, so
// `go test -bench Dot` shows the two next to each other:
//
//	BenchmarkDot/n=4096/flat
//	BenchmarkDot/n=4096/gonum
//
// SetBytes counts the float32s each call reads plus those it writes, so MB/s
// is memory traffic and comparable across kernels.
var benchSizes = []int{256, 4096, 1 << 20}

// benchImpl is one implementation of a kernel: setup builds its inputs for
// length n and returns the call to time.
type benchImpl struct {
	name  string
	setup func(n int) func()
}

// runBench runs every implementation at every size. floatsTouched is how many
// float32s per element a call reads and writes.
func runBench(b *testing.B, floatsTouched int, impls ...benchImpl) {
	b.Helper()
	for _, n := range benchSizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for _, im := range impls {
				b.Run(im.name, func(b *testing.B) {
					call := im.setup(n)
					b.SetBytes(int64(4 * floatsTouched * n))
					b.ReportAllocs()
					for b.Loop() {
						call()
					}
				})
			}
		})
	}
}

// benchVec returns n values in [0.5, 1.5): positive, so Sum and gonum's Asum
// agree, and far from subnormals, which would slow the kernels down.
func benchVec(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	x := make([]float32, n)
	for i := range x {
		x[i] = 0.5 + r.Float32()
	}
	return x
}

func vec32(x []float32) blas32.Vector { return blas32.Vector{N: len(x), Inc: 1, Data: x} }

// sink keeps results alive so the compiler cannot drop the calls.
var sink float32

func BenchmarkAxpy(b *testing.B) {
	// alpha alternates sign so y stays bounded however long the run.
	runBench(b, 3,
		benchImpl{"flat", func(n int) func() {
			x, y, alpha := benchVec(n, 1), benchVec(n, 2), float32(0.25)
			return func() { Axpy(alpha, x, y); alpha = -alpha }
		}},
		benchImpl{"gonum", func(n int) func() {
			x, y, alpha := vec32(benchVec(n, 1)), vec32(benchVec(n, 2)), float32(0.25)
			return func() { blas32.Axpy(alpha, x, y); alpha = -alpha }
		}},
	)
}

func BenchmarkDot(b *testing.B) {
	runBench(b, 2,
		benchImpl{"flat", func(n int) func() {
			x, y := benchVec(n, 1), benchVec(n, 2)
			return func() { sink = Dot(x, y) }
		}},
		benchImpl{"gonum", func(n int) func() {
			x, y := vec32(benchVec(n, 1)), vec32(benchVec(n, 2))
			return func() { sink = blas32.Dot(x, y) }
		}},
	)
}

func BenchmarkScale(b *testing.B) {
	// alpha alternates 2, 0.5: exact in binary, so x never drifts.
	runBench(b, 2,
		benchImpl{"flat", func(n int) func() {
			x, alpha := benchVec(n, 1), float32(2)
			return func() { Scale(alpha, x); alpha = 1 / alpha }
		}},
		benchImpl{"gonum", func(n int) func() {
			x, alpha := vec32(benchVec(n, 1)), float32(2)
			return func() { blas32.Scal(alpha, x); alpha = 1 / alpha }
		}},
	)
}

func BenchmarkNorm(b *testing.B) {
	runBench(b, 1,
		benchImpl{"flat", func(n int) func() {
			x := benchVec(n, 1)
			return func() { sink = Norm(x) }
		}},
		benchImpl{"gonum", func(n int) func() { // Nrm2
			x := vec32(benchVec(n, 1))
			return func() { sink = blas32.Nrm2(x) }
		}},
	)
}

func BenchmarkSum(b *testing.B) {
	// BLAS has no plain sum; Asum (Σ|x|) is the nearest, and on these
	// positive inputs the two agree.
	runBench(b, 1,
		benchImpl{"flat", func(n int) func() {
			x := benchVec(n, 1)
			return func() { sink = Sum(x) }
		}},
		benchImpl{"gonum", func(n int) func() { // Asum
			x := vec32(benchVec(n, 1))
			return func() { sink = blas32.Asum(x) }
		}},
	)
}

func BenchmarkFill(b *testing.B) {
	runBench(b, 1,
		benchImpl{"flat", func(n int) func() {
			x := benchVec(n, 1)
			return func() { Fill(x, 1.5) }
		}},
	)
}

func BenchmarkCopy(b *testing.B) {
	runBench(b, 2,
		benchImpl{"flat", func(n int) func() {
			dst, src := make([]float32, n), benchVec(n, 1)
			return func() { Copy(dst, src) }
		}},
		benchImpl{"gonum", func(n int) func() {
			dst, src := vec32(make([]float32, n)), vec32(benchVec(n, 1))
			return func() { blas32.Copy(src, dst) }
		}},
	)
}

func BenchmarkClone(b *testing.B) {
	// One allocation per call by design; the bytes count the copy.
	runBench(b, 2,
		benchImpl{"flat", func(n int) func() {
			x := benchVec(n, 1)
			return func() { sink += Clone(x)[n-1] }
		}},
	)
}
