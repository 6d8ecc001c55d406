package flat

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// The tests in this file run every kernel on every kernel set this machine
// supports (pure Go, AVX2+FMA, AVX-512), so an AVX-512 machine also tests the
// AVX2 assembly, and compare the assembly kernels with the pure-Go ones.

// withISA runs f with vecISA set to l, restoring it afterwards.
func withISA(t rapid.TB, l isaLevel, f func()) {
	t.Helper()
	old := vecISA
	vecISA = l
	defer func() { vecISA = old }()
	f()
}

// isaLengths are the lengths the per-ISA tests use: every length up to 300
// (every tail of every unroll, several times over) and a few longer ones.
func isaLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 511, 512, 513, 1000, 4099)
}

// TestKernelsEveryISA checks every kernel against its float64 reference on
// every supported kernel set, at every length up to 300 and at offsets 0..3
// floats into a larger buffer, so the vectors are unaligned in every way.
func TestKernelsEveryISA(t *testing.T) {
	for _, l := range supportedISAs() {
		t.Run(l.String(), func(t *testing.T) {
			withISA(t, l, func() {
				r := rand.New(rand.NewPCG(3, 4))
				for _, k := range kernelChecks {
					for _, n := range isaLengths() {
						off := n % 4
						c := randCase(r, n+off)
						c.x, c.y = c.x[off:], c.y[off:]
						k.check(t, c)
					}
				}
			})
		})
	}
}

// TestKernelsISARapid runs the rapid property checks on every kernel set.
func TestKernelsISARapid(t *testing.T) {
	for _, l := range supportedISAs() {
		if l == isaGo {
			continue // TestKernelsRapid covers it on the noasm build
		}
		t.Run(l.String(), func(t *testing.T) {
			withISA(t, l, func() {
				rapid.Check(t, func(rt *rapid.T) {
					c := drawCase(rt)
					for _, k := range kernelChecks {
						k.check(rt, c)
					}
				})
			})
		})
	}
}

// TestKernelsAsmMatchGo compares every assembly kernel with the pure-Go one on
// the same inputs: Scale and Fill bit for bit, Axpy within one rounding of
// each element (the assembly fuses the multiply-add), Dot, Sum and Norm within
// the error bounds of the two summation orders.
func TestKernelsAsmMatchGo(t *testing.T) {
	for _, l := range supportedISAs() {
		if l == isaGo {
			continue
		}
		t.Run(l.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				c := drawCase(rt)
				n := float64(len(c.x))
				var got, want [5]float32
				var gotY, wantY, gotS, wantS, gotF, wantF []float32
				run := func(lv isaLevel, res *[5]float32, y, s, f *[]float32) {
					withISA(rt, lv, func() {
						*y = Clone(c.y)
						Axpy(c.alpha, c.x, *y)
						*s = Clone(c.x)
						Scale(c.alpha, *s)
						*f = Clone(c.x)
						Fill(*f, c.alpha)
						res[0] = Dot(c.x, c.y)
						res[1] = Sum(c.x)
						res[2] = Norm(c.x)
					})
				}
				run(l, &got, &gotY, &gotS, &gotF)
				run(isaGo, &want, &wantY, &wantS, &wantF)
				sameBits(rt, "Scale asm vs Go", gotS, wantS)
				sameBits(rt, "Fill asm vs Go", gotF, wantF)
				for i := range gotY {
					mag := math.Abs(float64(c.y[i])) + math.Abs(float64(c.alpha)*float64(c.x[i]))
					near(rt, "Axpy asm vs Go y["+strconv.Itoa(i)+"]", gotY[i], float64(wantY[i]), 4*u32*mag+tinyF32)
				}
				var dmag, smag float64
				for i := range c.x {
					dmag += math.Abs(float64(c.x[i]) * float64(c.y[i]))
					smag += math.Abs(float64(c.x[i]))
				}
				near(rt, "Dot asm vs Go", got[0], float64(want[0]), 2*(n+1)*u32*dmag*1.01+2*n*tinyF32)
				near(rt, "Sum asm vs Go", got[1], float64(want[1]), 2*n*u32*smag*1.01)
				near(rt, "Norm asm vs Go", got[2], float64(want[2]), 2*u32*float64(want[2])+tinyF32)
			})
		})
	}
}

// TestKernelsSpecialValues checks, on every kernel set and at every position
// of vectors whose length leaves a tail, that NaN and Inf propagate through
// the reductions: a tail that was skipped or loaded twice would show.
func TestKernelsSpecialValues(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, l := range supportedISAs() {
		t.Run(l.String(), func(t *testing.T) {
			withISA(t, l, func() {
				for _, n := range []int{1, 7, 15, 17, 31, 33, 63, 65, 77, 131} {
					for pos := range n {
						x := make([]float32, n)
						Fill(x, 1)
						x[pos] = nan
						ones := make([]float32, n)
						Fill(ones, 1)
						if v := Dot(x, ones); !isNaN32(v) {
							t.Fatalf("n=%d NaN at %d: Dot = %v", n, pos, v)
						}
						if v := Sum(x); !isNaN32(v) {
							t.Fatalf("n=%d NaN at %d: Sum = %v", n, pos, v)
						}
						if v := Norm(x); !isNaN32(v) {
							t.Fatalf("n=%d NaN at %d: Norm = %v", n, pos, v)
						}
						x[pos] = inf
						if v := Sum(x); !math.IsInf(float64(v), 1) {
							t.Fatalf("n=%d Inf at %d: Sum = %v", n, pos, v)
						}
						if v := Norm(x); !math.IsInf(float64(v), 1) {
							t.Fatalf("n=%d Inf at %d: Norm = %v", n, pos, v)
						}
						// Each element counted exactly once.
						x[pos] = 1
						if v := Sum(x); v != float32(n) {
							t.Fatalf("n=%d: Sum of ones = %v", n, v)
						}
						if v := Dot(x, ones); v != float32(n) {
							t.Fatalf("n=%d: Dot of ones = %v", n, v)
						}
					}
				}
			})
		})
	}
}

func isNaN32(v float32) bool { return v != v }

// TestKernelsAllocateEveryISA pins every kernel set at zero allocations.
func TestKernelsAllocateEveryISA(t *testing.T) {
	x, y := make([]float32, 1001), make([]float32, 1001)
	var s float32
	for _, l := range supportedISAs() {
		withISA(t, l, func() {
			n := testing.AllocsPerRun(20, func() {
				Axpy(0.5, x, y)
				s += Dot(x, y) + Sum(x) + Norm(x)
				Scale(0.5, x)
				Fill(x, 1)
			})
			if n != 0 {
				t.Errorf("%s: kernels allocate %v times per round, want 0", l, n)
			}
		})
	}
	_ = s
}

func TestISA(t *testing.T) {
	got := ISA()
	if got != detectISA().String() {
		t.Errorf("ISA() = %q, detectISA %q", got, detectISA())
	}
	switch got {
	case "go", "avx2", "avx512":
	default:
		t.Errorf("ISA() = %q", got)
	}
	t.Logf("kernel set: %s", got)
}

// TestNormRangeEveryISA runs TestNormRange's overflow and underflow cases
// on every kernel set: each must accumulate in float64.
func TestNormRangeEveryISA(t *testing.T) {
	for _, l := range supportedISAs() {
		t.Run(l.String(), func(t *testing.T) {
			withISA(t, l, func() { TestNormRange(t) })
		})
	}
}
