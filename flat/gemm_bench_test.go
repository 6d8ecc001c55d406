package flat

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// BenchmarkGemm times square products C = A·B at 64³, 256³ and 1024³ on one
// and two goroutines, flatkit beside gonum's blas32 on the same data, and
// reports GFLOP/s (2·n³ per call):
//
//	BenchmarkGemm/n=256/threads=1/flat
//	BenchmarkGemm/n=256/threads=1/gonum
//
// Both run with GOMAXPROCS set to the thread count (gonum splits large
// products over GOMAXPROCS goroutines); flatkit also gets SetMaxThreads.
// BenchmarkGemmKernels runs each micro-kernel this CPU offers, single-threaded.
func BenchmarkGemm(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		x, y, z := gemmBenchData(n)
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for _, threads := range []int{1, 2} {
				b.Run("threads="+strconv.Itoa(threads), func(b *testing.B) {
					b.Run("flat", func(b *testing.B) {
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
						defer SetMaxThreads(SetMaxThreads(threads))
						runGemmBench(b, n, func() { Gemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n) })
					})
					b.Run("gonum", func(b *testing.B) {
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
						ga := blas32.General{Rows: n, Cols: n, Stride: n, Data: x}
						gb := blas32.General{Rows: n, Cols: n, Stride: n, Data: y}
						gc := blas32.General{Rows: n, Cols: n, Stride: n, Data: z}
						runGemmBench(b, n, func() { blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0, gc) })
					})
				})
			}
		})
	}
}

// BenchmarkGemmKernels runs Gemm on one goroutine with each kernel this CPU
// offers (the pure-Go one included), square sizes, all four transposes at
// 256³.
func BenchmarkGemmKernels(b *testing.B) {
	defer SetMaxThreads(SetMaxThreads(1))
	for _, n := range []int{64, 256, 1024} {
		x, y, z := gemmBenchData(n)
		for _, ker := range gemmKernels {
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				if n != 256 && (tr[0] || tr[1]) {
					continue
				}
				name := "n=" + strconv.Itoa(n) + "/" + ker.name + "/" + gemmTransName(tr[0], tr[1])
				b.Run(name, func(b *testing.B) {
					withKernel(ker, func() {
						runGemmBench(b, n, func() { Gemm(tr[0], tr[1], n, n, n, 1, x, n, y, n, 0, z, n) })
					})
				})
			}
		}
	}
}

func gemmTransName(tA, tB bool) string {
	s := []byte("NN")
	if tA {
		s[0] = 'T'
	}
	if tB {
		s[1] = 'T'
	}
	return string(s)
}

func gemmBenchData(n int) (x, y, z []float32) {
	r := rand.New(rand.NewPCG(uint64(n), 9))
	x, y, z = make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
		y[i] = float32(r.Float64()*2 - 1)
	}
	return x, y, z
}

// runGemmBench runs call b.N times after a warm-up call and reports GFLOP/s
// for an n³ product.
func runGemmBench(b *testing.B, n int, call func()) {
	call()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/s/1e9, "GFLOP/s")
	}
}
