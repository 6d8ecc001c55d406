package flat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/bitwise"
)

// gemmCase is one Gemm call: the shape, the transposes, the scalars and the
// operands as stored, with leading dimensions that may exceed the widths.
type gemmCase struct {
	tA, tB        bool
	m, n, k       int
	alpha, beta   float32
	a, b, c       []float32
	lda, ldb, ldc int
}

func (g *gemmCase) String() string {
	return fmt.Sprintf("tA=%t tB=%t m=%d n=%d k=%d alpha=%g beta=%g lda=%d ldb=%d ldc=%d",
		g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.beta, g.lda, g.ldb, g.ldc)
}

// gemmPad marks the elements of a, b and c outside the matrices; Gemm must
// leave them alone.
const gemmPad = float32(-12345.5)

// newGemmCase fills a case with values in [-1, 1) from r. extra adds to each
// leading dimension; nanC fills C with NaN (meaningful with beta == 0).
func newGemmCase(r *rand.Rand, tA, tB bool, m, n, k, extra int, alpha, beta float32, nanC bool) *gemmCase {
	g := &gemmCase{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := stored(tA, m, k)
	br, bc := stored(tB, k, n)
	g.lda, g.ldb, g.ldc = max(1, ac+extra), max(1, bc+extra), max(1, n+extra)
	fill := func(rows, cols, ld int, nan bool) []float32 {
		s := make([]float32, rows*ld)
		for i := range s {
			s[i] = gemmPad
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				v := float32(r.Float64()*2 - 1)
				if nan {
					v = float32(math.NaN())
				}
				s[i*ld+j] = v
			}
		}
		return s
	}
	g.a = fill(ar, ac, g.lda, false)
	g.b = fill(br, bc, g.ldb, false)
	g.c = fill(m, n, g.ldc, nanC)
	return g
}

func (g *gemmCase) opA(i, p int) float64 {
	if g.tA {
		return float64(g.a[p*g.lda+i])
	}
	return float64(g.a[i*g.lda+p])
}

func (g *gemmCase) opB(p, j int) float64 {
	if g.tB {
		return float64(g.b[j*g.ldb+p])
	}
	return float64(g.b[p*g.ldb+j])
}

// run calls Gemm on a copy of C and returns it.
func (g *gemmCase) run() []float32 {
	c := append([]float32(nil), g.c...)
	Gemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
	return c
}

// check compares got (the C that Gemm produced) with a float64 reference.
// The error allowed for element (i, j) is (k+4)·2⁻²⁴·(|alpha|·Σ|a||b| +
// |beta||c|): k roundings in the sum, and a few for alpha, beta and the
// final addition. Elements outside the matrix must be untouched.
func (g *gemmCase) check(t errorer, got []float32) {
	t.Helper()
	const u = 0x1p-24
	bad := 0
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			var s, mag float64
			if g.alpha != 0 {
				for p := 0; p < g.k; p++ {
					x, y := g.opA(i, p), g.opB(p, j)
					s += x * y
					mag += math.Abs(x * y)
				}
			}
			alpha, beta := float64(g.alpha), float64(g.beta)
			want := alpha * s
			bound := math.Abs(alpha) * mag
			if g.beta != 0 {
				cij := float64(g.c[i*g.ldc+j])
				want += beta * cij
				bound += math.Abs(beta * cij)
			}
			tol := float64(g.k+4)*u*bound + 0x1p-140
			v := float64(got[i*g.ldc+j])
			if !(math.Abs(v-want) <= tol) {
				if bad < 5 {
					t.Errorf("%v: C[%d,%d] = %g, want %g ± %g", g, i, j, v, want, tol)
				}
				bad++
			}
		}
	}
	for idx, v := range got {
		i, j := idx/g.ldc, idx%g.ldc
		if (i >= g.m || j >= g.n) && v != g.c[idx] && !(v != v && g.c[idx] != g.c[idx]) {
			t.Errorf("%v: element %d (row %d, column %d) outside C changed from %g to %g", g, idx, i, j, g.c[idx], v)
			return
		}
	}
	if bad > 5 {
		t.Errorf("%v: %d elements wrong in all", g, bad)
	}
}

// errorer is what check needs of *testing.T and *rapid.T.
type errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

// withKernel runs f with Gemm using ker and restores the default after.
// A nil ker means the default dispatch, narrow kernels included.
func withKernel(ker *gemmKernel, f func()) {
	if ker == nil {
		f()
		return
	}
	old := gemmKern
	gemmKern, gemmNarrow = ker, false
	defer func() { gemmKern, gemmNarrow = old, true }()
	f()
}

// smallBlocking returns a copy of ker whose cache blocks hold only a few
// micro-panels, so small products cross every block boundary of the jc, pc
// and ic loops.
func smallBlocking(ker *gemmKernel) *gemmKernel {
	k := *ker
	k.name += "-small"
	k.kc, k.mc, k.nc = 5, 2*k.mr, 2*k.nr
	return &k
}

// allKernels is every kernel this CPU runs and both pure-Go ones.
func allKernels() []*gemmKernel {
	ks := append([]*gemmKernel(nil), gemmKernels...)
	for _, k := range []*gemmKernel{&gemmGo4x4, &gemmGo2x4} {
		if k != gemmGo {
			ks = append(ks, k)
		}
	}
	return ks
}

// testKernels is allKernels, and each with tiny blocking.
func testKernels() []*gemmKernel {
	var ks []*gemmKernel
	for _, k := range allKernels() {
		ks = append(ks, k, smallBlocking(k))
	}
	return ks
}

func TestGemmKernelsAvailable(t *testing.T) {
	var names []string
	for _, k := range gemmKernels {
		names = append(names, k.name)
	}
	t.Logf("kernels: %s (Gemm uses %s)", strings.Join(names, ", "), gemmKern.name)
	if gemmKern != gemmKernels[0] {
		t.Errorf("Gemm uses %s, want the first of %v", gemmKern.name, names)
	}
	if gemmKernels[len(gemmKernels)-1] != gemmGo {
		t.Errorf("the pure-Go kernel is not on the list %v", names)
	}
	for _, k := range allKernels() {
		if k.mr*k.nr > len(gemmWorkspace{}.tile) || k.mc%k.mr != 0 || k.nc%k.nr != 0 {
			t.Errorf("kernel %s: mr×nr = %d×%d, mc = %d, nc = %d do not fit the workspace", k.name, k.mr, k.nr, k.mc, k.nc)
		}
	}
}

// gemmSizes are dimensions around the register blocks (4, 6, 12, 16, 32) and
// cache blocks (kc = 256, mc = 128, 144, 240).
var gemmSizes = []int{1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49,
	63, 64, 65, 127, 128, 129, 143, 144, 145, 239, 240, 241, 255, 256, 257, 299, 300}

// TestGemmRapid draws shapes in 1..300 (a third from gemmSizes, a third
// spread evenly, a third from rapid's small-leaning ranges),
// transposes, strides, scalars and the kernel (nil: Gemm's own choice), and
// checks against float64.
func TestGemmRapid(t *testing.T) {
	kernels := append(testKernels(), nil)
	even := rapid.Map(rapid.Uint32(), func(u uint32) int { return 1 + int(u%300) })
	dim := rapid.OneOf(rapid.IntRange(1, 300), rapid.SampledFrom(gemmSizes), even)
	scalars := []float32{1, 0, -0.5, 2.5}
	// Five rounds of rapid's default 100 checks: the shapes are cheap.
	for range 5 {
		rapid.Check(t, gemmRapidCheck(kernels, dim, scalars))
	}
}

func gemmRapidCheck(kernels []*gemmKernel, dim *rapid.Generator[int], scalars []float32) func(*rapid.T) {
	return func(rt *rapid.T) {
		ker := rapid.SampledFrom(kernels).Draw(rt, "kernel")
		if ker != nil {
			rt.Log("kernel ", ker.name)
		}
		m, n, k := dim.Draw(rt, "m"), dim.Draw(rt, "n"), dim.Draw(rt, "k")
		// Keep the float64 reference cheap: large shapes only now and then.
		if m*n*k > 4_000_000 && rapid.IntRange(0, 3).Draw(rt, "big") != 0 {
			k = 1 + k%40
		}
		tA, tB := rapid.Bool().Draw(rt, "tA"), rapid.Bool().Draw(rt, "tB")
		extra := rapid.SampledFrom([]int{0, 0, 1, 3, 17}).Draw(rt, "extra")
		alpha := rapid.SampledFrom(scalars).Draw(rt, "alpha")
		beta := rapid.SampledFrom(scalars).Draw(rt, "beta")
		nanC := beta == 0 && rapid.Bool().Draw(rt, "nanC")
		seed := rapid.Uint64().Draw(rt, "seed")
		g := newGemmCase(rand.New(rand.NewPCG(seed, 4)), tA, tB, m, n, k, extra, alpha, beta, nanC)
		var got []float32
		withKernel(ker, func() { got = g.run() })
		g.check(rt, got)
	}
}

// TestGemmSweep runs every kernel over every transpose and a grid of small
// shapes around the register blocks, with strides wider than the matrices.
func TestGemmSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 24, 31, 32, 33, 37}
	for _, ker := range testKernels() {
		withKernel(ker, func() {
			for _, m := range sizes {
				for _, n := range sizes {
					k := 1 + (m*7+n*3)%40
					for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
						g := newGemmCase(r, tr[0], tr[1], m, n, k, (m+n)%3, 2.5, -0.5, false)
						g.check(t, g.run())
					}
				}
			}
		})
	}
}

// TestGemmScalars covers BLAS's special cases: beta == 0 ignores NaN in C,
// alpha == 0 skips the product (NaN in A and B stays out), k == 0 only
// scales C, and m == 0 or n == 0 touches nothing.
func TestGemmScalars(t *testing.T) {
	nan := float32(math.NaN())
	for _, ker := range allKernels() {
		withKernel(ker, func() {
			r := rand.New(rand.NewPCG(3, 4))
			for _, size := range [][3]int{{1, 1, 1}, {5, 7, 3}, {13, 33, 17}, {40, 70, 300}} {
				m, n, k := size[0], size[1], size[2]
				for _, alpha := range []float32{1, -0.5, 2.5} {
					g := newGemmCase(r, false, true, m, n, k, 2, alpha, 0, true)
					g.check(t, g.run())
				}
				// alpha == 0: C = beta·C, even with NaN in A and B.
				for _, beta := range []float32{0, 1, -0.5} {
					g := newGemmCase(r, true, false, m, n, k, 1, 0, beta, beta == 0)
					for i := range g.a {
						g.a[i] = nan
					}
					for i := range g.b {
						g.b[i] = nan
					}
					got := g.run()
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							want := beta * g.c[i*g.ldc+j]
							if beta == 0 {
								want = 0
							}
							if got[i*g.ldc+j] != want {
								t.Fatalf("%s alpha = 0, beta = %g: C[%d,%d] = %g, want %g", ker.name, beta, i, j, got[i*g.ldc+j], want)
							}
						}
					}
				}
			}
		})
	}
	// k == 0: C = beta·C, and A and B may be empty.
	c := []float32{nan, nan, 0, nan, nan, 0}
	Gemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 3)
	if want := []float32{0, 0, 0, 0, 0, 0}; !bitwise.Equal(c, want) {
		t.Errorf("k = 0, beta = 0: C = %v, want %v", c, want)
	}
	c = []float32{1, 2, 7, 3, 4, 7}
	Gemm(true, true, 2, 2, 0, 1, nil, 2, nil, 1, 2, c, 3)
	if want := []float32{2, 4, 7, 6, 8, 7}; !bitwise.Equal(c, want) {
		t.Errorf("k = 0, beta = 2: C = %v, want %v", c, want)
	}
	// m == 0 or n == 0: nothing is read or written.
	Gemm(false, false, 0, 3, 2, 1, nil, 2, []float32{1, 2, 3, 4, 5, 6}, 3, 0, nil, 3)
	Gemm(false, false, 3, 0, 2, 1, []float32{1, 2, 3, 4, 5, 6}, 2, nil, 1, 0, nil, 1)
}

// TestGemmParallelBitwise checks that splitting a product over goroutines
// gives exactly the serial result, for every kernel and several counts,
// and that GemmSerial does too.
func TestGemmParallelBitwise(t *testing.T) {
	defer SetMaxThreads(SetMaxThreads(1))
	// Split products this small, and into up to 7 blocks.
	defer func(p, q int) { gemmParallelMin, gemmPerThreadMin = p, q }(gemmParallelMin, gemmPerThreadMin)
	gemmParallelMin, gemmPerThreadMin = 1<<16, 1<<12
	r := rand.New(rand.NewPCG(5, 6))
	// Tall, wide (column chunks), long and square; m = 2 with tA runs the
	// packed path, not the vector one.
	shapes := [][3]int{{300, 257, 130}, {37, 700, 90}, {513, 29, 200}, {256, 256, 256}, {13, 2000, 100}, {2, 3000, 400}}
	for _, ker := range testKernels() {
		withKernel(ker, func() {
			for si, s := range shapes {
				tA, tB := si%2 == 1, si/2%2 == 1
				g := newGemmCase(r, tA, tB, s[0], s[1], s[2], 1, 1.5, 0.5, false)
				SetMaxThreads(1)
				serial := g.run()
				if si == 0 {
					g.check(t, serial)
				}
				for _, threads := range []int{2, 3, 4, 7} {
					SetMaxThreads(threads)
					if got := g.run(); !bitwise.Equal(got, serial) {
						t.Errorf("%s %v: %d goroutines differ from one", ker.name, g, threads)
					}
					// GemmSerial ignores the setting and gives the same bits.
					c := append([]float32(nil), g.c...)
					GemmSerial(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
					if !bitwise.Equal(c, serial) {
						t.Errorf("%s %v: GemmSerial with %d goroutines allowed differs from Gemm on one", ker.name, g, threads)
					}
				}
			}
		})
	}
}

// TestGemmConcurrent runs products of several sizes from several goroutines
// at once, so callers share the worker goroutines and the workspace list;
// each must get its serial result.
func TestGemmConcurrent(t *testing.T) {
	defer SetMaxThreads(SetMaxThreads(1))
	defer func(p, q int) { gemmParallelMin, gemmPerThreadMin = p, q }(gemmParallelMin, gemmPerThreadMin)
	gemmParallelMin, gemmPerThreadMin = 1<<16, 1<<12
	r := rand.New(rand.NewPCG(13, 14))
	var cases []*gemmCase
	var want [][]float32
	for _, s := range [][3]int{{200, 190, 180}, {5, 7, 9}, {64, 300, 120}, {1, 40, 30}, {150, 150, 150}, {33, 1, 70}} {
		g := newGemmCase(r, s[0]%2 == 0, s[1]%2 == 0, s[0], s[1], s[2], 1, 1, -0.5, false)
		cases = append(cases, g)
		want = append(want, g.run())
	}
	SetMaxThreads(2)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 3; rep++ {
				for i, g := range cases {
					if got := g.run(); !bitwise.Equal(got, want[i]) {
						errs <- g.String()
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: concurrent result differs from the serial one", e)
	}
}

func TestGemmGrid(t *testing.T) {
	for _, tc := range []struct{ threads, mt, nt, tm, tn int }{
		{2, 100, 100, 2, 1}, {2, 1, 40, 1, 2}, {2, 40, 1, 2, 1}, {4, 50, 50, 2, 2},
		{1, 50, 50, 1, 1}, {2, 1, 1, 1, 1}, {8, 100, 2, 4, 2},
	} {
		tm, tn := gemmGrid(tc.threads, tc.mt, tc.nt, 12, 32)
		if tm*tn > tc.threads || tm > tc.mt || tn > tc.nt {
			t.Errorf("gemmGrid(%d, %d, %d) = %d×%d, too many blocks", tc.threads, tc.mt, tc.nt, tm, tn)
		}
		if tm*tn != tc.tm*tc.tn {
			t.Errorf("gemmGrid(%d, %d, %d) = %d×%d, want %d×%d", tc.threads, tc.mt, tc.nt, tm, tn, tc.tm, tc.tn)
		}
	}
}

func TestGemmAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, ker := range gemmKernels {
		withKernel(ker, func() {
			for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {300, 200, 280}, {130, 140, 150}} {
				for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
					for _, threads := range []int{1, 2} {
						g := newGemmCase(r, tr[0], tr[1], s[0], s[1], s[2], 0, 1, 0.5, false)
						old := SetMaxThreads(threads)
						allocs := testing.AllocsPerRun(3, func() {
							Gemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc)
						})
						SetMaxThreads(old)
						if allocs != 0 {
							t.Errorf("%s %v, %d goroutines: %v allocations per call, want 0", ker.name, g, threads, allocs)
						}
					}
				}
			}
		})
	}
}

func TestGemmPanics(t *testing.T) {
	a := make([]float32, 12) // 3×4
	b := make([]float32, 20) // 4×5
	c := make([]float32, 15) // 3×5
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { Gemm(false, false, -1, 5, 4, 1, a, 4, b, 5, 0, c, 5) }, "negative dimension: m = -1, n = 5, k = 4, want each ≥ 0"},
		{"negative k", func() { Gemm(false, false, 3, 5, -4, 1, a, 4, b, 5, 0, c, 5) }, "negative dimension: m = 3, n = 5, k = -4, want each ≥ 0"},
		{"lda", func() { Gemm(false, false, 3, 5, 4, 1, a, 3, b, 5, 0, c, 5) }, "lda = 3, want ≥ 4"},
		{"lda tA", func() { Gemm(true, false, 3, 5, 4, 1, a, 2, b, 5, 0, c, 5) }, "lda = 2, want ≥ 3"},
		{"ldb", func() { Gemm(false, false, 3, 5, 4, 1, a, 4, b, 4, 0, c, 5) }, "ldb = 4, want ≥ 5"},
		{"ldb tB", func() { Gemm(false, true, 3, 5, 4, 1, a, 4, b, 3, 0, c, 5) }, "ldb = 3, want ≥ 4"},
		{"ldc", func() { Gemm(false, false, 3, 5, 4, 1, a, 4, b, 5, 0, c, 4) }, "ldc = 4, want ≥ 5"},
		{"ldc zero", func() { Gemm(false, false, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 0) }, "ldc = 0, want ≥ 1"},
		{"short a", func() { Gemm(false, false, 3, 5, 4, 1, a[:11], 4, b, 5, 0, c, 5) }, "len(a) = 11, want ≥ 12"},
		{"short a stride", func() { Gemm(false, false, 3, 5, 4, 1, a, 5, b, 5, 0, c, 5) }, "len(a) = 12, want ≥ 14"},
		{"short b", func() { Gemm(false, false, 3, 5, 4, 1, a, 4, b[:19], 5, 0, c, 5) }, "len(b) = 19, want ≥ 20"},
		{"short b tB", func() { Gemm(false, true, 3, 5, 4, 1, a, 4, b[:19], 4, 0, c, 5) }, "len(b) = 19, want ≥ 20"},
		{"short c", func() { Gemm(false, false, 3, 5, 4, 1, a, 4, b, 5, 0, c[:14], 5) }, "len(c) = 14, want ≥ 15"},
		{"short c beta 0 alpha 0", func() { Gemm(false, false, 3, 5, 4, 0, a, 4, b, 5, 0, c[:14], 5) }, "len(c) = 14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "flat: Gemm: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("panic %v, want a flat: Gemm panic containing %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

func TestSetMaxThreads(t *testing.T) {
	orig := SetMaxThreads(3)
	defer SetMaxThreads(orig)
	if got := SetMaxThreads(-2); got != 3 {
		t.Errorf("SetMaxThreads returned %d, want 3", got)
	}
	if got := SetMaxThreads(0); got != 0 {
		t.Errorf("after SetMaxThreads(-2), the setting is %d, want 0 (the default)", got)
	}
}

// TestGemmThreadsAsDocumented checks the thresholds SetMaxThreads's doc
// states: below 2²³ multiply-adds a product stays on one goroutine, and
// each goroutine gets at least 2²² of them.
func TestGemmThreadsAsDocumented(t *testing.T) {
	defer SetMaxThreads(SetMaxThreads(16))
	for _, c := range []struct{ m, n, k, want int }{
		{128, 128, 128, 1},
		{256, 128, 255, 1}, // just under 2²³
		{256, 256, 128, 2}, // 2²³
		{256, 256, 256, 4},
		{1024, 1024, 1024, 16},
	} {
		if got := gemmThreads(c.m, c.n, c.k); got != c.want {
			t.Errorf("gemmThreads(%d, %d, %d) = %d, want %d", c.m, c.n, c.k, got, c.want)
		}
	}
}

// TestGemmNarrowBitwise checks that a kernel and its narrow kernel give
// bitwise the same C, which lets Gemm choose between them by shape alone.
func TestGemmNarrowBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, ker := range gemmKernels {
		if ker.narrow == nil {
			continue
		}
		for _, s := range [][3]int{{16, 16, 16}, {13, 70, 300}, {100, 33, 257}, {1, 1, 1}, {64, 8, 5}} {
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				g := newGemmCase(r, tr[0], tr[1], s[0], s[1], s[2], 2, -0.5, 2.5, false)
				var wide, narrow []float32
				withKernel(ker, func() { wide = g.run() })
				withKernel(ker.narrow, func() { narrow = g.run() })
				if !bitwise.Equal(wide, narrow) {
					t.Errorf("%v: %s and %s differ", g, ker.name, ker.narrow.name)
				}
			}
		}
	}
}

// TestGemmPackHelpers compares copyRows and transpose4 (assembly where the
// build has it) with their Go versions, on every length up to 40.
func TestGemmPackHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	src := make([]float32, 4000)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	for n := 0; n <= 40; n++ {
		for _, width := range []int{1, 2, 4, 6, 12, 16, 32} {
			for w := 1; w <= width; w++ {
				lds := w + n%3
				want := make([]float32, n*width+1)
				got := make([]float32, n*width+1)
				for i := range got {
					got[i], want[i] = -1, -1
				}
				if n > 0 {
					copyRowsGo(want, width, src, lds, w, n)
					copyRows(got, width, src, lds, w, n)
				}
				if !bitwise.Equal(got, want) {
					t.Fatalf("copyRows(width %d, lds %d, w %d, n %d) = %v, want %v", width, lds, w, n, got, want)
				}
			}
			if width < 4 {
				continue
			}
			lds := n + 3
			want := make([]float32, n*width+1)
			got := make([]float32, n*width+1)
			for i := range got {
				got[i], want[i] = -1, -1
			}
			if n > 0 {
				transpose4Go(want, width, src, lds, n)
				transpose4(got, width, src, lds, n)
			}
			if !bitwise.Equal(got, want) {
				t.Fatalf("transpose4(ldd %d, lds %d, n %d) = %v, want %v", width, lds, n, got, want)
			}
		}
	}
}
