package flat

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// withParallelLimit runs f with ParallelFor limited to limit goroutines.
func withParallelLimit(limit int, f func()) {
	defer SetMaxThreads(SetMaxThreads(limit))
	f()
}

// coverage runs ParallelFor(n, minChunk) with a fn that counts visits of
// every index and records the chunks, and checks that the chunks cover
// [0, n) exactly once, each non-empty and starting on a multiple of 16.
func coverage(t rapid.TB, n, minChunk int) (calls int) {
	t.Helper()
	visits := make([]int32, n)
	var mu sync.Mutex
	var chunks [][2]int
	ParallelFor(n, minChunk, func(lo, hi int) {
		mu.Lock()
		chunks = append(chunks, [2]int{lo, hi})
		mu.Unlock()
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&visits[i], 1)
		}
	})
	for i, v := range visits {
		if v != 1 {
			t.Fatalf("n=%d minChunk=%d: index %d visited %d times (chunks %v)", n, minChunk, i, v, chunks)
		}
	}
	for _, c := range chunks {
		if c[0] >= c[1] || c[0]%16 != 0 {
			t.Fatalf("n=%d minChunk=%d: bad chunk %v (chunks %v)", n, minChunk, c, chunks)
		}
	}
	return len(chunks)
}

func TestParallelForCoverage(t *testing.T) {
	tests := []struct {
		n, minChunk, limit int
		wantCalls          int // 0: don't check
	}{
		{0, 0, 0, 0},
		{1, 0, 0, 1},
		{DefaultMinChunk*2 - 1, 0, 2, 1}, // below the threshold: serial
		{DefaultMinChunk * 2, 0, 2, 2},
		{100, 10, 1, 1}, // limit 1: serial whatever the size
		{100, 10, 2, 2},
		{100, 10, 3, 3},
		{101, 50, 4, 2},
		{17, 1, 8, 0}, // chunks shorter than the 16-element alignment
		{1000, 1, 8, 8},
		{1 << 20, 0, 0, 0},
	}
	for _, tc := range tests {
		name := "n=" + strconv.Itoa(tc.n) + "/min=" + strconv.Itoa(tc.minChunk) + "/limit=" + strconv.Itoa(tc.limit)
		t.Run(name, func(t *testing.T) {
			withParallelLimit(tc.limit, func() {
				for range 20 { // workers may or may not be idle: run it a few times
					calls := coverage(t, tc.n, tc.minChunk)
					if tc.wantCalls != 0 && calls > tc.wantCalls {
						t.Fatalf("%d calls, want at most %d", calls, tc.wantCalls)
					}
					if tc.wantCalls == 1 && calls != 1 {
						t.Fatalf("%d calls, want 1 (serial)", calls)
					}
				}
			})
		})
	}
}

func TestParallelForRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 5000).Draw(rt, "n")
		minChunk := rapid.IntRange(-1, 600).Draw(rt, "minChunk")
		limit := rapid.IntRange(0, 5).Draw(rt, "limit")
		withParallelLimit(limit, func() { coverage(rt, n, minChunk) })
	})
}

// TestParallelForNested runs ParallelFor from inside fn and from several
// goroutines at once: it must neither deadlock nor miss an index.
func TestParallelForNested(t *testing.T) {
	withParallelLimit(4, func() {
		const outer, inner = 64, 512
		var total atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ParallelFor(outer, 1, func(lo, hi int) {
					for range hi - lo {
						ParallelFor(inner, 16, func(lo, hi int) { total.Add(int64(hi - lo)) })
					}
				})
			}()
		}
		wg.Wait()
		if got, want := total.Load(), int64(4*outer*inner); got != want {
			t.Fatalf("visited %d elements, want %d", got, want)
		}
	})
}

// adamPass is the optimisers' use case: one fused pass over parameters,
// gradients and two state vectors, built once so that calls do not allocate.
type adamPass struct {
	θ, g, m, v []float32
	step       func(lo, hi int)
}

func newAdamPass(n int) *adamPass {
	a := &adamPass{θ: benchVec(n, 1), g: benchVec(n, 2), m: make([]float32, n), v: make([]float32, n)}
	const lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
	a.step = func(lo, hi int) {
		θ, g, m, v := a.θ[lo:hi], a.g[lo:hi], a.m[lo:hi], a.v[lo:hi]
		g, m, v = g[:len(θ)], m[:len(θ)], v[:len(θ)]
		for i := range θ {
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			θ[i] -= lr * m[i] / (float32(math.Sqrt(float64(v[i]))) + eps)
		}
	}
	return a
}

// TestParallelForMatchesSerial checks that the split pass computes exactly
// what one serial pass does (elementwise work does not depend on the split).
func TestParallelForMatchesSerial(t *testing.T) {
	const n = 3*DefaultMinChunk + 123
	serial, par := newAdamPass(n), newAdamPass(n)
	for range 3 {
		withParallelLimit(1, func() { ParallelFor(n, 0, serial.step) })
		withParallelLimit(2, func() { ParallelFor(n, 0, par.step) })
	}
	sameBits(t, "θ", par.θ, serial.θ)
	sameBits(t, "v", par.v, serial.v)
}

// TestParallelForAllocs pins ParallelFor at zero allocations per call, in
// the serial case and, once its workers exist, in the parallel one.
func TestParallelForAllocs(t *testing.T) {
	small, big := newAdamPass(1000), newAdamPass(4*DefaultMinChunk)
	for _, limit := range []int{1, 2, 4} {
		withParallelLimit(limit, func() {
			if got := testing.AllocsPerRun(50, func() { ParallelFor(len(small.θ), 0, small.step) }); got != 0 {
				t.Errorf("limit %d, serial: %v allocations per call", limit, got)
			}
			ParallelFor(len(big.θ), 0, big.step) // start the workers
			if got := testing.AllocsPerRun(50, func() { ParallelFor(len(big.θ), 0, big.step) }); got != 0 {
				t.Errorf("limit %d, parallel: %v allocations per call", limit, got)
			}
		})
	}
}

// BenchmarkParallelFor times a fused Adam-style pass (four slices, three
// written) over 2^20 parameters with 1 and 2 goroutines, and a small pass
// below the threshold, which runs serially.
func BenchmarkParallelFor(b *testing.B) {
	for _, n := range []int{4096, 1 << 20} {
		a := newAdamPass(n)
		for _, threads := range []int{1, 2} {
			b.Run("n="+strconv.Itoa(n)+"/threads="+strconv.Itoa(threads), func(b *testing.B) {
				withParallelLimit(threads, func() {
					b.SetBytes(int64(4 * 7 * n)) // reads θ g m v, writes θ m v
					b.ReportAllocs()
					for b.Loop() {
						ParallelFor(n, 0, a.step)
					}
				})
			})
		}
	}
}
