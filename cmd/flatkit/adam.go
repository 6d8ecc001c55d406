package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cpu"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// Scenario adam: one Adam update of 1 000 000 parameters held in one leaf,
// on 1 and 2 goroutines, beside a plain copy that moves the same bytes.
// Adam reads θ, g, m and v and writes θ, m and v: 7 × 4 MB over four 4 MB
// arrays. The copy baseline moves exactly that through four arrays of its
// own. Per 64 KB block it copies θ ← m, m ← v and v ← g with Go's copy,
// chunked across goroutines as the optimiser is. So it reads θ's cache
// lines for the stores, m, v and g, and writes θ, m and v. A second figure
// copies three arrays into three others and sums a fourth, 4 MB at a time.
// The byte counts are the same, but over seven arrays of 28 MB in all.
// memmove uses non-temporal stores for blocks over 1 MB, so this figure
// measures the path to memory rather than to cache. Peer: scenario "e" of
// ../shared/peers/torch_bench.py, case one_flat_1M: torch.optim.Adam on one
// flat tensor of 1 000 000 with p.grad set.

func init() {
	register(scenario{
		name:  "adam",
		about: "Adam on 1 000 000 params (one leaf), 1 and 2 goroutines, beside a copy of the same 7 x 4 MB",
		run:   runAdam,
	})
}

const (
	adamN     = 1_000_000
	copyBlock = 16 << 10 // floats per copy call in the in-place baseline: 64 KB
)

// copy4 is the baseline: the bytes Adam moves, through four arrays.
type copy4 struct {
	θ, g, m, v []float32
	fn         func(lo, hi int)
}

func newCopy4(rng *rand.Rand) *copy4 {
	c := &copy4{θ: make([]float32, adamN), g: make([]float32, adamN), m: make([]float32, adamN), v: make([]float32, adamN)}
	for _, x := range [][]float32{c.θ, c.g, c.m, c.v} {
		uniform(rng, x, 1)
	}
	c.fn = c.chunk
	return c
}

func (c *copy4) chunk(lo, hi int) {
	for b := lo; b < hi; b += copyBlock {
		e := min(b+copyBlock, hi)
		copy(c.θ[b:e], c.m[b:e])
		copy(c.m[b:e], c.v[b:e])
		copy(c.v[b:e], c.g[b:e])
	}
}

// copy7 is the second baseline: three arrays copied into three others, a
// fourth summed.
type copy7 struct {
	src  [4][]float32
	dst  [3][]float32
	sums [64]float32 // one per chunk start, so that chunks never share a write
	fn   func(lo, hi int)
}

func newCopy7(rng *rand.Rand) *copy7 {
	c := &copy7{}
	for k := range c.src {
		c.src[k] = make([]float32, adamN)
		uniform(rng, c.src[k], 1)
	}
	for k := range c.dst {
		c.dst[k] = make([]float32, adamN)
	}
	c.fn = c.chunk
	return c
}

func (c *copy7) chunk(lo, hi int) {
	copy(c.dst[0][lo:hi], c.src[0][lo:hi])
	copy(c.dst[1][lo:hi], c.src[1][lo:hi])
	copy(c.dst[2][lo:hi], c.src[2][lo:hi])
	c.sums[lo*len(c.sums)/adamN] += flat.Sum(c.src[3][lo:hi]) // the read-only fourth array
}

// parallel runs fn over [0, adamN) on `workers` goroutines, split as the
// optimiser splits its pass.
func parallel(workers int, fn func(lo, hi int)) {
	if workers <= 1 {
		fn(0, adamN)
		return
	}
	flat.ParallelFor(adamN, (adamN+workers-1)/workers, fn)
}

func runAdam(b *bencher) error {
	rng := rand.New(rand.NewPCG(3, 4))
	lay, err := layout.NewBuilder().Add("w", adamN).Build()
	if err != nil {
		return err
	}
	θ0 := make([]float32, adamN)
	g := make([]float32, adamN)
	for i := range θ0 {
		θ0[i] = float32(rng.NormFloat64())
		g[i] = float32(rng.NormFloat64()) * 1e-3 // as the peer: randn·1e-3
	}

	// The two goroutine counts must agree bit for bit: check on a few steps
	// before timing.
	var θs [2][]float32
	var opts [2]*optimisers.Optimiser
	for w := range opts {
		opt, err := optimisers.Setup(optimisers.Adam(1e-3), lay)
		if err != nil {
			return err
		}
		opt.SetWorkers(w + 1)
		opts[w], θs[w] = opt, slices.Clone(θ0)
		for range 3 {
			if err := opt.Update(θs[w], g); err != nil {
				return err
			}
		}
	}
	for i := range θs[0] {
		if math.Float32bits(θs[0][i]) != math.Float32bits(θs[1][i]) {
			return fmt.Errorf("adam: θ[%d] after 3 steps is %v on 1 goroutine, %v on 2, want equal bit for bit", i, θs[0][i], θs[1][i])
		}
	}

	c4, c7 := newCopy4(rng), newCopy7(rng)
	const bytes = 7 * 4 * adamN
	var firstErr error
	for w := range opts {
		opt, θ := opts[w], θs[w]
		workers := w + 1
		gor := "1 goroutine"
		if workers > 1 {
			gor = fmt.Sprintf("%d goroutines", workers)
		}
		sa := b.measure(func() {
			if err := opt.Update(θ, g); err != nil && firstErr == nil {
				firstErr = err
			}
		})
		b.emitNS("Adam 1M params, "+gor, sa, fmt.Sprintf("opt.Update on one leaf of %d floats: one fused pass (%s kernel) reading θ,g,m,v and writing θ,m,v; %.1f GB/s",
			adamN, kernel(), bytes/sa.median))
		sc := b.measure(func() { parallel(workers, c4.fn) })
		b.emitNS("copy 7 x 4 MB, "+gor, sc, fmt.Sprintf("θ←m, m←v, v←g in 64 KB blocks over four arrays of %d floats: Adam's reads, writes and footprint; %.1f GB/s", adamN, bytes/sc.median))
		b.emit(result{Case: "Adam / copy, " + gor, Unit: "x",
			Median: sa.median / sc.median, Min: sa.min / sc.min, Max: sa.max / sc.max, Allocs: sa.allocs,
			Note: "median/median (min/min, max/max) of the two figures above; allocs are Adam's"})
		s7 := b.measure(func() { parallel(workers, c7.fn) })
		b.emitNS("copy 3 arrays into 3 others + read 1, "+gor, s7, fmt.Sprintf("seven arrays of %d floats (28 MB), Go's copy 4 MB at a time (non-temporal stores): the same bytes to memory; %.1f GB/s", adamN, bytes/s7.median))
		if firstErr != nil {
			return firstErr
		}
	}
	return nil
}

// kernel names the vector kernel the optimiser's Adam uses here.
func kernel() string {
	switch cpu.Best {
	case cpu.AVX512:
		return "AVX-512"
	case cpu.AVX2:
		return "AVX2"
	}
	return "Go"
}
