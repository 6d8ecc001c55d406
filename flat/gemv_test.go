package flat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// gemvCase is one Gemv call. The matrix a has its rows lda apart; the
// padding between and after rows, and x past its length, hold NaN, so a
// kernel that read them would poison its result. y sits in a larger buffer
// whose guard cells must stay untouched.
type gemvCase struct {
	tA          bool
	m, n, lda   int
	alpha, beta float32
	a, x, y     []float32 // y: the initial values
}

func (c *gemvCase) String() string {
	return fmt.Sprintf("tA=%t m=%d n=%d lda=%d alpha=%g beta=%g", c.tA, c.m, c.n, c.lda, c.alpha, c.beta)
}

// dims returns the lengths of x and y.
func (c *gemvCase) dims() (lx, ly int) {
	if c.tA {
		return c.m, c.n
	}
	return c.n, c.m
}

var nan32 = float32(math.NaN())

func newGemvCase(r *rand.Rand, tA bool, m, n, extra int, alpha, beta float32, nanY bool) *gemvCase {
	c := &gemvCase{tA: tA, m: m, n: n, lda: max(1, n+extra), alpha: alpha, beta: beta}
	elem := func() float32 { return float32(2*r.Float64() - 1) }
	c.a = make([]float32, m*c.lda+extra) // padding after the last row too
	for i := range c.a {
		c.a[i] = nan32
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			c.a[i*c.lda+j] = elem()
		}
	}
	lx, ly := c.dims()
	c.x = make([]float32, lx+3)
	for i := range c.x {
		c.x[i] = nan32
		if i < lx {
			c.x[i] = elem()
		}
	}
	c.y = make([]float32, ly)
	for i := range c.y {
		c.y[i] = elem()
		if nanY {
			c.y[i] = nan32
		}
	}
	return c
}

// run calls Gemv on a guarded copy of y and returns the result.
func (c *gemvCase) run(t rapid.TB) []float32 {
	t.Helper()
	buf, y := guarded(c.y)
	Gemv(c.tA, c.m, c.n, c.alpha, c.a, c.lda, c.x, c.beta, y)
	checkGuards(t, "Gemv", buf)
	return y
}

// check compares got with a float64 reference. Each element is a dot product
// of length k (n, or m with the transpose): its error is bounded by
// (k+2)·u·(|alpha|·Σ|a·x| + |beta·y|) plus the scaling of y.
func (c *gemvCase) check(t rapid.TB, got []float32) {
	t.Helper()
	lx, ly := c.dims()
	at := func(i, j int) float64 { // op(A)[i, j]
		if c.tA {
			return float64(c.a[j*c.lda+i])
		}
		return float64(c.a[i*c.lda+j])
	}
	for i := 0; i < ly; i++ {
		var s, mag float64
		for j := 0; j < lx; j++ {
			p := at(i, j) * float64(c.x[j])
			s += p
			mag += math.Abs(p)
		}
		want := float64(c.alpha) * s
		mag *= math.Abs(float64(c.alpha))
		if c.beta != 0 {
			by := float64(c.beta) * float64(c.y[i])
			want += by
			mag += math.Abs(by)
		}
		tol := float64(lx+3)*u32*mag + 1e-30
		if d := math.Abs(float64(got[i]) - want); !(d <= tol) {
			t.Fatalf("%v: y[%d] = %v, want %v ± %.3g (off by %.3g)", c, i, got[i], want, tol, d)
		}
	}
}

// gemvSizes cross every unroll and mask boundary of the kernels: 4 rows, 16
// and 32 columns (AVX-512 N), 8 and 16 (AVX2 N), 128 and 64 column blocks
// (transposed), 2 and 4 rows per step.
var gemvSizes = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100,
	127, 128, 129, 143, 191, 255, 256, 257, 300}

// gemvScalars are the (alpha, beta) pairs the sweep rotates through, with
// whether y starts as NaN (only meaningful with beta == 0).
var gemvScalars = []struct {
	alpha, beta float32
	nanY        bool
}{
	{1, 0, true}, {1, 1, false}, {-0.75, 2, false}, {0, 0.5, false}, {2.5, 0, false}, {1, -1, false}, {0, 0, true},
}

// gemvKernel is one set of GEMV kernels to test: a kernel set, and for
// AVX-512 the choice between the one-row and the four-row non-transposed
// kernel (gemvN1Max).
type gemvKernel struct {
	name  string
	isa   isaLevel
	n1Max int
}

func gemvKernels() []gemvKernel {
	var ks []gemvKernel
	for _, l := range supportedISAs() {
		ks = append(ks, gemvKernel{l.String(), l, gemvN1Max})
		if l == isaAVX512 {
			ks = append(ks, gemvKernel{"avx512-4rows", l, 0})
		}
	}
	return ks
}

func (k gemvKernel) run(t rapid.TB, f func()) {
	t.Helper()
	old := gemvN1Max
	gemvN1Max = k.n1Max
	defer func() { gemvN1Max = old }()
	withISA(t, k.isa, f)
}

// TestGemvSweep runs every size pair in gemvSizes, both transposes and three
// row strides on every kernel set, rotating through the scalar cases.
func TestGemvSweep(t *testing.T) {
	for _, kern := range gemvKernels() {
		t.Run(kern.name, func(t *testing.T) {
			kern.run(t, func() {
				r := rand.New(rand.NewPCG(5, 6))
				k := 0
				for _, tA := range []bool{false, true} {
					for _, m := range gemvSizes {
						for _, n := range gemvSizes {
							for _, extra := range []int{0, 1, 13} {
								s := gemvScalars[k%len(gemvScalars)]
								k++
								c := newGemvCase(r, tA, m, n, extra, s.alpha, s.beta, s.nanY)
								c.check(t, c.run(t))
							}
						}
					}
				}
			})
		})
	}
}

// TestGemvRapid draws shapes from 1 to 300, strides, transposes and scalars.
func TestGemvRapid(t *testing.T) {
	for _, kern := range gemvKernels() {
		t.Run(kern.name, func(t *testing.T) {
			kern.run(t, func() {
				rapid.Check(t, func(rt *rapid.T) {
					tA := rapid.Bool().Draw(rt, "tA")
					m := rapid.IntRange(1, 300).Draw(rt, "m")
					n := rapid.IntRange(1, 300).Draw(rt, "n")
					extra := rapid.IntRange(0, 40).Draw(rt, "extra")
					alpha := rapid.SampledFrom([]float32{0, 1, -1, 0.5, 3}).Draw(rt, "alpha")
					beta := rapid.SampledFrom([]float32{0, 1, -1, 0.25}).Draw(rt, "beta")
					nanY := beta == 0 && rapid.Bool().Draw(rt, "nanY")
					seed := rapid.Uint64().Draw(rt, "seed")
					c := newGemvCase(rand.New(rand.NewPCG(seed, 7)), tA, m, n, extra, alpha, beta, nanY)
					c.check(rt, c.run(rt))
				})
			})
		})
	}
}

// TestGemvAsmMatchGo compares the assembly kernels with the pure-Go ones:
// both are checked against the reference elsewhere; here they must also
// agree with each other to within the two error bounds.
func TestGemvAsmMatchGo(t *testing.T) {
	for _, kern := range gemvKernels() {
		if kern.isa == isaGo {
			continue
		}
		t.Run(kern.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(8, 9))
			for _, tA := range []bool{false, true} {
				for _, m := range []int{1, 3, 4, 17, 64, 129, 256} {
					for _, n := range []int{1, 5, 16, 31, 128, 200, 256} {
						c := newGemvCase(r, tA, m, n, 3, 1, 0, false)
						var got, want []float32
						kern.run(t, func() { got = c.run(t) })
						withISA(t, isaGo, func() { want = c.run(t) })
						lx, _ := c.dims()
						for i := range got {
							// |a|, |x| < 1: each result is off by at most (lx+1)·u·lx from the exact one.
							tol := 2 * float64(lx+1) * u32 * float64(lx)
							near(t, fmt.Sprintf("%v asm vs Go y[%d]", c, i), got[i], float64(want[i]), tol)
						}
					}
				}
			}
		})
	}
}

// TestGemvExact pins small cases whose answers are exact.
func TestGemvExact(t *testing.T) {
	a := []float32{
		1, 2, 3, 99,
		4, 5, 6, 99,
	} // 2×3, lda 4
	tests := []struct {
		name        string
		tA          bool
		alpha, beta float32
		x, y, want  []float32
	}{
		{"N", false, 1, 0, []float32{1, 1, 1}, []float32{nan32, nan32}, []float32{6, 15}},
		{"N/alpha beta", false, 2, -1, []float32{1, 0, -1}, []float32{10, 20}, []float32{-14, -24}},
		{"T", true, 1, 0, []float32{1, 1}, []float32{nan32, nan32, nan32}, []float32{5, 7, 9}},
		{"T/alpha beta", true, -1, 3, []float32{1, 2}, []float32{1, 1, 1}, []float32{-6, -9, -12}},
		{"alpha 0", false, 0, 2, []float32{nan32, nan32, nan32}, []float32{1, 2}, []float32{2, 4}},
		{"long x and y", false, 1, 1, []float32{1, 1, 1, 7}, []float32{0, 0, 42}, []float32{6, 15, 42}},
	}
	for _, kern := range gemvKernels() {
		for _, tc := range tests {
			t.Run(kern.name+"/"+tc.name, func(t *testing.T) {
				kern.run(t, func() {
					y := Clone(tc.y)
					Gemv(tc.tA, 2, 3, tc.alpha, a, 4, tc.x, tc.beta, y)
					sameBits(t, "y", y, tc.want)
				})
			})
		}
	}
}

func TestGemvPanics(t *testing.T) {
	a := make([]float32, 12)
	x, y := make([]float32, 4), make([]float32, 4)
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"negative m", func() { Gemv(false, -1, 2, 1, a, 2, x, 0, y) }, "negative size m=-1 n=2, want both ≥ 0"},
		{"negative n", func() { Gemv(false, 2, -1, 1, a, 2, x, 0, y) }, "negative size m=2 n=-1, want both ≥ 0"},
		{"lda < n", func() { Gemv(false, 2, 3, 1, a, 2, x, 0, y) }, "lda 2 < max(1, n=3)"},
		{"lda 0", func() { Gemv(false, 0, 0, 1, a, 0, x, 0, y) }, "lda 0"},
		{"short x", func() { Gemv(false, 2, 4, 1, a, 4, x[:3], 0, y) }, "x has 3 elements, want 4"},
		{"short y", func() { Gemv(false, 4, 2, 1, a, 2, x, 0, y[:3]) }, "y has 3 elements, want 4"},
		{"short xT", func() { Gemv(true, 4, 2, 1, a, 2, x[:3], 0, y) }, "x has 3 elements, want 4"},
		{"short A", func() { Gemv(false, 4, 3, 1, a, 4, x, 0, y) }, "A has 12 elements, want (m-1)·lda+n = 15"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { mustPanic(t, tc.msg, tc.f) })
	}
}

// TestGemvAllocs pins Gemv at zero allocations on every kernel set.
func TestGemvAllocs(t *testing.T) {
	const m, n = 67, 130
	a, x, y := benchVec(m*n, 1), benchVec(max(m, n), 2), benchVec(max(m, n), 3)
	for _, kern := range gemvKernels() {
		kern.run(t, func() {
			for _, tA := range []bool{false, true} {
				got := testing.AllocsPerRun(20, func() { Gemv(tA, m, n, 0.5, a, n, x, 0.5, y) })
				if got != 0 {
					t.Errorf("%s tA=%t: Gemv allocates %v times per call", kern.name, tA, got)
				}
			}
		})
	}
}
