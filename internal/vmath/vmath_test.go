package vmath

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/flatkit/flatkit/internal/cpu"
)

// The tests run every kernel on every kernel set this machine supports (pure
// Go, AVX2, AVX-512): an AVX-512 machine also tests the AVX2 assembly.

var exhaustive = flag.Bool("exhaustive", false, "compare the kernels with the scalar references on all 2³² float32 inputs")

// withISA runs f with isa set to l, restoring it afterwards.
func withISA(l cpu.Level, f func()) {
	old := isa
	isa = l
	defer func() { isa = old }()
	f()
}

// supportedISAs returns every kernel set this machine can run, narrowest
// first.
func supportedISAs() []cpu.Level {
	var ls []cpu.Level
	for l := cpu.Generic; l <= detectISA(); l++ {
		ls = append(ls, l)
	}
	return ls
}

// forEachISA runs f as a subtest per supported kernel set.
func forEachISA(t *testing.T, f func(t *testing.T)) {
	for _, l := range supportedISAs() {
		t.Run(l.String(), func(t *testing.T) { withISA(l, func() { f(t) }) })
	}
}

// kernel is one of the package's slice functions with its scalar reference
// and a float64 reference for accuracy.
type kernel struct {
	name   string
	vec    func(dst, src []float32)
	scalar func(float32) float32
	exact  func(float64) float64
}

func sigmoid64(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

var kernels = []kernel{
	{"Tanh", Tanh, TanhScalar, math.Tanh},
	{"Sigmoid", Sigmoid, SigmoidScalar, sigmoid64},
}

// ulps is |got − want| in units in the last place of float32 at want: the
// spacing of the float32 binade [2ᵉ, 2ᵉ⁺¹) that holds |want|, or the
// subnormal spacing 2⁻¹⁴⁹ below 2⁻¹²⁶.
func ulps(got float32, want float64) float64 {
	_, e := math.Frexp(math.Abs(want)) // |want| in [2^(e-1), 2^e)
	u := math.Ldexp(1, max(e-24, -149))
	return math.Abs(float64(got)-want) / u
}

// relErr is |got − want| / (|want|·2⁻²³) with a floor of 10⁻¹² for the
// denominator: the measure ad's old TestTanh32 used.
func relErr(got float32, want float64) float64 {
	return math.Abs(float64(got)-want) / math.Max(math.Abs(want)*(1.0/(1<<23)), 1e-12)
}

// grid returns the float32 values i·step for i = lo/step … hi/step.
func grid(lo, hi, step float64) []float32 {
	n := int(math.Round((hi - lo) / step))
	xs := make([]float32, 0, n+1)
	for i := 0; i <= n; i++ {
		xs = append(xs, float32(lo+float64(i)*step))
	}
	return xs
}

type worst struct {
	err float64
	x   float32
}

func (w *worst) add(e float64, x float32) {
	if e > w.err {
		w.err, w.x = e, x
	}
}

// accuracy returns k's worst errors on xs, in ulps and relative to 2⁻²³,
// split at x = 0, with the current kernel set.
func accuracy(k kernel, xs []float32) (neg, pos, rel worst) {
	ys := make([]float32, len(xs))
	k.vec(ys, xs)
	for i, x := range xs {
		if x != x {
			continue
		}
		want := k.exact(float64(x))
		if x < 0 {
			neg.add(ulps(ys[i], want), x)
		} else {
			pos.add(ulps(ys[i], want), x)
		}
		rel.add(relErr(ys[i], want), x)
	}
	return neg, pos, rel
}

// allFloats calls f on every float32 (NaNs included) in chunks of 2²⁰, on
// GOMAXPROCS goroutines, and merges the worst errors.
func allFloats(f func(xs []float32) (neg, pos, rel worst)) (neg, pos, rel worst) {
	const chunk = 1 << 20
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs := make([]float32, chunk)
			for lo := range next {
				for i := range xs {
					xs[i] = math.Float32frombits(uint32(lo + uint64(i)))
				}
				n, p, r := f(xs)
				mu.Lock()
				neg.add(n.err, n.x)
				pos.add(p.err, p.x)
				rel.add(r.err, r.x)
				mu.Unlock()
			}
		}()
	}
	for lo := uint64(0); lo < 1<<32; lo += chunk {
		next <- lo
	}
	close(next)
	wg.Wait()
	return neg, pos, rel
}

// TestTanhAccuracy bounds Tanh's error against math.Tanh on a grid of step
// 10⁻⁵ over [−20, 20] (4·10⁶ points) on every kernel set, and with
// -exhaustive on every float32 with the default kernel set.
func TestTanhAccuracy(t *testing.T) {
	k := kernels[0]
	check := func(t *testing.T, what string, neg, pos, rel worst) {
		t.Logf("Tanh on %s: worst %.2f ulp (at x = %g), %.2f × 2⁻²³ relative (at x = %g)",
			what, max(neg.err, pos.err), cond(neg.err > pos.err, neg.x, pos.x), rel.err, rel.x)
		if neg.err > 6.9 || pos.err > 6.9 || rel.err > 3.45 {
			t.Errorf("Tanh on %s: worst %.2f, %.2f ulp, %.2f × 2⁻²³ relative", what, neg.err, pos.err, rel.err)
		}
	}
	xs := grid(-20, 20, 1e-5)
	forEachISA(t, func(t *testing.T) {
		neg, pos, rel := accuracy(k, xs)
		check(t, "[-20, 20]", neg, pos, rel)
	})
	if *exhaustive {
		neg, pos, rel := allFloats(func(xs []float32) (worst, worst, worst) { return accuracy(k, xs) })
		check(t, "every float32", neg, pos, rel)
	}
}

// TestSigmoidAccuracy bounds Sigmoid's error against a float64 sigmoid, in
// ulps of the float32 result (a relative measure, which is what matters for
// log-likelihoods), on [−20, 20] with step 10⁻⁵ and on [−110, 90] with step
// 10⁻³, which covers the float32 subnormals and the results that round to 1,
// on every kernel set; and with -exhaustive on every float32 with the
// default kernel set.
func TestSigmoidAccuracy(t *testing.T) {
	k := kernels[1]
	check := func(t *testing.T, what string, neg, pos, _ worst) {
		t.Logf("Sigmoid on %s: worst %.2f ulp for x < 0 (at %g), %.2f for x ≥ 0 (at %g)",
			what, neg.err, neg.x, pos.err, pos.x)
		if neg.err > 2.45 || pos.err > 1.55 {
			t.Errorf("Sigmoid on %s: worst %.2f ulp for x < 0 (at %g), %.2f for x ≥ 0 (at %g)",
				what, neg.err, neg.x, pos.err, pos.x)
		}
	}
	for _, g := range []struct {
		name         string
		lo, hi, step float64
	}{{"[-20, 20]", -20, 20, 1e-5}, {"[-110, 90]", -110, 90, 1e-3}} {
		xs := grid(g.lo, g.hi, g.step)
		forEachISA(t, func(t *testing.T) {
			neg, pos, rel := accuracy(k, xs)
			check(t, g.name, neg, pos, rel)
		})
	}
	if *exhaustive {
		neg, pos, rel := allFloats(func(xs []float32) (worst, worst, worst) { return accuracy(k, xs) })
		check(t, "every float32", neg, pos, rel)
	}
}

func cond[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// specials are inputs at and around every branch of the scalar references,
// and the float32 extremes.
func specials() []float32 {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	next := func(x, y float32) float32 { return math.Nextafter32(x, y) }
	xs := []float32{
		0, float32(math.Copysign(0, -1)), nan, -nan, inf, -inf,
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		0x1p-126, -0x1p-126, 1, -1, 0.5, -0.5, 100, -100, 1e-20, -1e-20,
		// A NaN with a payload, and a signalling NaN.
		math.Float32frombits(0x7fc12345), math.Float32frombits(0xff800001),
	}
	for _, b := range []float32{tanhClamp, tanhSmall, 2 * tanhClamp, 2 * tanhSmall, expLow, -expLow / 2, 1.5, 9, 15.8, 16.7, 87.3, 88.7, 103, 104} {
		for _, s := range []float32{1, -1} {
			c := s * b
			xs = append(xs, c, next(c, inf), next(c, -inf))
		}
	}
	return xs
}

func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// checkScalar runs k.vec on xs and requires every result to equal k.scalar
// bit for bit (any NaN for a NaN).
func checkScalar(t *testing.T, k kernel, xs []float32) {
	t.Helper()
	ys := make([]float32, len(xs))
	k.vec(ys, xs)
	bad := 0
	for i, x := range xs {
		if want := k.scalar(x); !same(ys[i], want) {
			if bad++; bad <= 5 {
				t.Errorf("%s(%g [%#08x]) = %g [%#08x], scalar reference %g [%#08x]", k.name,
					x, math.Float32bits(x), ys[i], math.Float32bits(ys[i]), want, math.Float32bits(want))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d results differ from the scalar reference", k.name, bad, len(xs))
	}
}

// TestSpecials pins the values at the special inputs, and checks every
// kernel against its scalar reference there.
func TestSpecials(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	forEachISA(t, func(t *testing.T) {
		for _, k := range kernels {
			checkScalar(t, k, specials())
		}
		cases := []struct {
			name    string
			f       func(dst, src []float32)
			x, want float32
		}{
			{"Tanh", Tanh, nan, nan},
			{"Tanh", Tanh, -nan, nan},
			{"Tanh", Tanh, inf, 1},
			{"Tanh", Tanh, -inf, -1},
			{"Tanh", Tanh, 0, 0},
			{"Tanh", Tanh, negZero, negZero},
			{"Tanh", Tanh, 1e-30, 1e-30},
			{"Tanh", Tanh, math.MaxFloat32, 1},
			{"Tanh", Tanh, -math.MaxFloat32, -1},
			{"Sigmoid", Sigmoid, nan, nan},
			{"Sigmoid", Sigmoid, inf, 1},
			{"Sigmoid", Sigmoid, -inf, 0},
			{"Sigmoid", Sigmoid, 0, 0.5},
			{"Sigmoid", Sigmoid, negZero, 0.5},
			{"Sigmoid", Sigmoid, -200, 0},
			{"Sigmoid", Sigmoid, -100, float32(sigmoid64(-100))}, // a subnormal
		}
		for _, c := range cases {
			// In every lane of a 16-wide vector, and in a tail.
			for _, n := range []int{1, 7, 8, 16, 17, 35} {
				xs := make([]float32, n)
				for i := range xs {
					xs[i] = c.x
				}
				ys := make([]float32, n)
				c.f(ys, xs)
				for i, y := range ys {
					if !same(y, c.want) {
						t.Errorf("%s(%g) = %g [%#08x] in lane %d of %d, want %g", c.name, c.x, y, math.Float32bits(y), i, n, c.want)
					}
				}
			}
		}
	})
}

// TestMatchesScalar checks Tanh and Sigmoid against TanhScalar and
// SigmoidScalar bit for bit: on the accuracy grid, on random values across
// the float32 range, and on every 251st bit pattern (every 2³²nd with
// -exhaustive).
func TestMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := make([]float32, 1<<16)
	for i := range rnd {
		switch i % 3 {
		case 0: // any bit pattern
			rnd[i] = math.Float32frombits(r.Uint32())
		case 1: // where tanh bends
			rnd[i] = float32(r.NormFloat64() * 3)
		default: // spread over magnitudes
			rnd[i] = float32(math.Copysign(math.Exp2(r.Float64()*60-40), r.Float64()-0.5))
		}
	}
	stride := uint32(251)
	if *exhaustive {
		stride = 1
	}
	forEachISA(t, func(t *testing.T) {
		for _, k := range kernels {
			checkScalar(t, k, grid(-20, 20, 1e-4))
			checkScalar(t, k, rnd)
			// Bit patterns in chunks, so the slices stay small.
			const chunk = 1 << 20
			xs := make([]float32, 0, chunk)
			for b := uint64(0); b < 1<<32; b += uint64(stride) {
				xs = append(xs, math.Float32frombits(uint32(b)))
				if len(xs) == chunk {
					checkScalar(t, k, xs)
					xs = xs[:0]
				}
			}
			checkScalar(t, k, xs)
		}
	})
}

// TestLengths runs every length 0..67 (every tail of the 32-, 16- and
// 8-element loops) at offsets 0..3 into a larger buffer, with dst separate
// and dst == src, and checks that nothing outside dst is written.
func TestLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const guard = 19
	forEachISA(t, func(t *testing.T) {
		for _, k := range kernels {
			for n := 0; n <= 67; n++ {
				for off := 0; off < 4; off++ {
					buf := make([]float32, off+n+guard)
					for i := range buf {
						buf[i] = float32(r.NormFloat64() * 4)
					}
					src := buf[off : off+n]
					want := make([]float32, n)
					for i, x := range src {
						want[i] = k.scalar(x)
					}
					// dst separate from src, with guards either side.
					out := make([]float32, off+n+guard)
					for i := range out {
						out[i] = -7
					}
					dst := out[off : off+n]
					k.vec(dst, src)
					for i := range out {
						switch {
						case i < off || i >= off+n:
							if out[i] != -7 {
								t.Fatalf("%s, n = %d, off = %d: wrote element %d outside dst", k.name, n, off, i-off)
							}
						case !same(out[i], want[i-off]):
							t.Fatalf("%s, n = %d, off = %d: dst[%d] = %g, want %g", k.name, n, off, i-off, out[i], want[i-off])
						}
					}
					// In place.
					after := append([]float32(nil), buf[off+n:]...)
					k.vec(src, src)
					for i := range src {
						if !same(src[i], want[i]) {
							t.Fatalf("%s in place, n = %d, off = %d: [%d] = %g, want %g", k.name, n, off, i, src[i], want[i])
						}
					}
					for i, v := range after {
						if !same(buf[off+n+i], v) {
							t.Fatalf("%s in place, n = %d, off = %d: wrote past the end", k.name, n, off)
						}
					}
				}
			}
		}
	})
}

func TestLengthMismatchPanics(t *testing.T) {
	for _, k := range kernels {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with len(dst) != len(src) did not panic", k.name)
				}
			}()
			k.vec(make([]float32, 3), make([]float32, 4))
		}()
	}
}

// BenchmarkKernels reports ns per element for every kernel set, on inputs
// like an MLP's pre-activations (normal, σ = 2), with the scalar loops that
// ad ran before for comparison.
func BenchmarkKernels(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(7, 8))
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 2)
	}
	dst := make([]float32, n)
	perElem := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
	}
	for _, k := range kernels {
		for _, l := range supportedISAs() {
			b.Run(fmt.Sprintf("%s/%s", k.name, l), func(b *testing.B) {
				withISA(l, func() {
					for b.Loop() {
						k.vec(dst, xs)
					}
				})
				perElem(b)
			})
		}
	}
	// ad's Sigmoid before: float64 math.Exp, rounded to float32.
	b.Run("Sigmoid/float64-loop", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				dst[i] = float32(sigmoid64(float64(x)))
			}
		}
		perElem(b)
	})
}
