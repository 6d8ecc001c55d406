package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/peak"
)

// Scenario gemm: flat.Gemm at 64³, 256³ and 1024³ with 1 and 2 goroutines,
// gonum's blas32.Gemm beside each, flat.Gemv at 256×256 (both transposes)
// beside blas32.Gemv, and the core's FMA peak measured in the same run by
// internal/peak.FMA, so that GFLOP/s can be read as a percentage of it.
// Peer: cmd/flatkit/peers/torch_matmul.py (torch.matmul, one thread).

func init() {
	register(scenario{
		name:  "gemm",
		about: "Gemm 64³/256³/1024³ GFLOP/s (1, 2 goroutines) and Gemv 256×256 µs beside gonum blas32; FMA peak and % of it",
		run:   runGemm,
	})
}

var (
	gemmSizes   = []int{64, 256, 1024}
	gemmThreads = []int{1, 2}
	sinkGemm    float32
)

// peakIters is the length of one timed peak.FMA call, short enough to
// repeat in a batch.
const peakIters = 1 << 16

// gemmTol is the largest relative difference from gonum that the Gemm and
// Gemv checks accept.
const gemmTol = 1e-5

func runGemm(b *bencher) error {
	isa := flat.ISA()
	// The FMA peak of one core, widest registers first.
	peaks := []struct {
		name string
		f    func(int) int
	}{{isa, peak.FMA}, {"avx2", peak.FMAAVX2}}
	var peak float64 // GFLOP/s of one core with the widest registers
	for i, p := range peaks {
		if i > 0 && p.name == isa {
			continue // an AVX2-only machine: the first figure was AVX2 already
		}
		flops := p.f(peakIters)
		if flops == 0 {
			b.emit(result{Case: "FMA peak " + p.name, Unit: "GFLOP/s",
				Note: "unavailable: no assembly (noasm build, another architecture, or no AVX2+FMA)"})
			continue
		}
		s := b.measure(func() { p.f(peakIters) })
		g := gflops(float64(flops), s)
		g.Case = "FMA peak " + p.name + ", 1 core"
		g.Note = fmt.Sprintf("peak.FMA: %d flops per call of independent VFMADD231PS (%s)", flops, p.name)
		b.emit(g)
		if i == 0 {
			peak = g.Median
		}
	}

	maxProcs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(maxProcs)
	defer flat.SetMaxThreads(flat.SetMaxThreads(0))

	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range gemmSizes {
		a, bm, c := randMat(rng, n*n), randMat(rng, n*n), make([]float32, n*n)
		c2 := make([]float32, n*n)
		ga := blas32.General{Rows: n, Cols: n, Stride: n, Data: a}
		gb := blas32.General{Rows: n, Cols: n, Stride: n, Data: bm}
		gc := blas32.General{Rows: n, Cols: n, Stride: n, Data: c2}
		// Check flat against gonum once per size.
		flat.Gemm(false, false, n, n, n, 1, a, n, bm, n, 0, c, n)
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0, gc)
		if d := relDiff(c, c2); d > gemmTol {
			return fmt.Errorf("Gemm %d³: flat and gonum differ, relative difference %.3g, want ≤ %g", n, d, gemmTol)
		}
		flops := 2 * float64(n) * float64(n) * float64(n)
		for _, t := range gemmThreads {
			// Both libraries get the same conditions: GOMAXPROCS = t
			// (gonum splits by it) and flat.SetMaxThreads(t).
			runtime.GOMAXPROCS(t)
			flat.SetMaxThreads(t)
			name := fmt.Sprintf("%d³, %d goroutine", n, t)
			if t > 1 {
				name += "s"
			}
			sf := b.measure(func() {
				flat.Gemm(false, false, n, n, n, 1, a, n, bm, n, 0, c, n)
				sinkGemm += c[0]
			})
			gf := gflops(flops, sf)
			gf.Case = "Gemm " + name
			gf.Note = fmt.Sprintf("flat.Gemm C = A·B, row-major, %s kernels; GOMAXPROCS=%d, SetMaxThreads(%d)", isa, t, t)
			b.emit(gf)
			sg := b.measure(func() {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0, gc)
				sinkGemm += c2[0]
			})
			gg := gflops(flops, sg)
			gg.Case = "gonum Gemm " + name
			gg.Note = fmt.Sprintf("gonum blas32.Gemm, same data; GOMAXPROCS=%d", t)
			b.emit(gg)
			b.emit(ratio("Gemm "+name+" / gonum", gf, gg, "flat GFLOP/s ÷ gonum GFLOP/s"))
			if peak > 0 {
				b.emit(result{Case: "Gemm " + name + " % of peak", Unit: "%",
					Median: 100 * gf.Median / (peak * float64(t)), Min: 100 * gf.Min / (peak * float64(t)),
					Max: 100 * gf.Max / (peak * float64(t)), Allocs: gf.Allocs,
					Note: fmt.Sprintf("flat.Gemm GFLOP/s ÷ (%d × the %s FMA peak of one core measured above, median)", t, isa)})
			}
		}
		runtime.GOMAXPROCS(maxProcs)
		flat.SetMaxThreads(0)
	}

	// GEMV 256×256, y = A·x and y = Aᵀ·x, one goroutine (neither splits).
	const gn = 256
	a, x := randMat(rng, gn*gn), randMat(rng, gn)
	y, y2 := make([]float32, gn), make([]float32, gn)
	ga := blas32.General{Rows: gn, Cols: gn, Stride: gn, Data: a}
	for _, tA := range []bool{false, true} {
		tr, gt := "", blas.NoTrans
		if tA {
			tr, gt = "ᵀ", blas.Trans
		}
		gx, gy := blas32.Vector{N: gn, Inc: 1, Data: x}, blas32.Vector{N: gn, Inc: 1, Data: y2}
		flat.Gemv(tA, gn, gn, 1, a, gn, x, 0, y)
		blas32.Gemv(gt, 1, ga, gx, 0, gy)
		if d := relDiff(y, y2); d > gemmTol {
			return fmt.Errorf("Gemv 256×256%s: flat and gonum differ, relative difference %.3g, want ≤ %g", tr, d, gemmTol)
		}
		sf := b.measure(func() {
			flat.Gemv(tA, gn, gn, 1, a, gn, x, 0, y)
			sinkGemm += y[0]
		})
		name := "Gemv 256×256 y = A" + tr + "·x"
		emitUS(b, name, sf, nil, fmt.Sprintf("flat.Gemv, %s kernels; A is 256 KiB (in L2)", isa))
		sg := b.measure(func() {
			blas32.Gemv(gt, 1, ga, gx, 0, gy)
			sinkGemm += y2[0]
		})
		emitUS(b, "gonum "+name, sg, nil, "gonum blas32.Gemv, same data")
		b.emit(result{Case: name + " gonum / flat", Unit: "x",
			Median: sg.median / sf.median, Min: sg.min / sf.min, Max: sg.max / sf.max, Allocs: sf.allocs,
			Note: "gonum time ÷ flat time (how many times faster flat is): median/median (min/min, max/max)"})
	}
	return nil
}

// gflops turns a time per call into GFLOP/s: the median of the rates is the
// rate of the median time, the slowest batch gives the minimum.
func gflops(flops float64, s stats) result {
	return result{Median: flops / s.median, Min: flops / s.max, Max: flops / s.min, Unit: "GFLOP/s",
		Allocs: s.allocs, Samples: s.samples, Inner: s.inner}
}

// ratio is a ÷ b of two rate figures: median/median, min/min, max/max.
func ratio(name string, a, b result, note string) result {
	return result{Case: name, Unit: "x", Median: a.Median / b.Median, Min: a.Min / b.Min, Max: a.Max / b.Max,
		Allocs: a.Allocs, Note: note}
}

// randMat returns n values uniform in [-1, 1).
func randMat(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	return x
}
