package flat

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// maxLen is the longest vector the property tests draw. The kernels unroll by
// four (two for Norm); 0..67 covers every tail many times over and crosses any
// 8-, 16-, 32- or 64-wide SIMD block an assembly version might use.
const maxLen = 67

const (
	u32     = 0x1p-24  // unit roundoff of float32
	tinyF32 = 0x1p-149 // smallest positive float32 (subnormal): slack for underflow
)

// vecCase is one input to a kernel: a scalar and two vectors of equal length.
type vecCase struct {
	alpha float32
	x, y  []float32
}

// drawCase draws a vecCase from rapid: a length in 0..maxLen and two vectors
// whose magnitudes are scaled independently by powers of two in 2^-40..2^40,
// so products and sums stay finite in float32 while exercising the relative
// tolerances far from 1.
func drawCase(t *rapid.T) vecCase {
	n := rapid.IntRange(0, maxLen).Draw(t, "n")
	elem := rapid.Float32Range(-1, 1)
	sx := float32(math.Ldexp(1, rapid.IntRange(-40, 40).Draw(t, "xexp")))
	sy := float32(math.Ldexp(1, rapid.IntRange(-40, 40).Draw(t, "yexp")))
	x := rapid.SliceOfN(elem, n, n).Draw(t, "x")
	y := rapid.SliceOfN(elem, n, n).Draw(t, "y")
	for i := range x {
		x[i] *= sx
		y[i] *= sy
	}
	alpha := rapid.Float32Range(-1024, 1024).Draw(t, "alpha")
	return vecCase{alpha: alpha, x: x, y: y}
}

// randCase builds a vecCase of length n from a seeded generator, mixing signs
// and magnitudes over several orders.
func randCase(r *rand.Rand, n int) vecCase {
	elem := func() float32 {
		return float32((2*r.Float64() - 1) * math.Ldexp(1, r.IntN(41)-20))
	}
	c := vecCase{alpha: elem(), x: make([]float32, n), y: make([]float32, n)}
	for i := range c.x {
		c.x[i], c.y[i] = elem(), elem()
	}
	return c
}

// kernelChecks holds, for every kernel, a check of it against a float64
// reference on one input. Each check copies its inputs before calling the
// kernel, so the same case can be fed to several checks.
var kernelChecks = []struct {
	name  string
	check func(t rapid.TB, c vecCase)
}{
	{"Axpy", checkAxpy},
	{"Dot", checkDot},
	{"Scale", checkScale},
	{"Norm", checkNorm},
	{"Sum", checkSum},
	{"Fill", checkFill},
	{"Copy", checkCopy},
	{"Clone", checkClone},
}

// TestKernelsRapid checks every kernel against its float64 reference on
// inputs drawn by rapid.
func TestKernelsRapid(t *testing.T) {
	for _, k := range kernelChecks {
		t.Run(k.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { k.check(rt, drawCase(rt)) })
		})
	}
}

// TestKernelsEveryLength checks every kernel on every length 0..maxLen, so
// each unroll tail is covered whatever rapid happens to draw.
func TestKernelsEveryLength(t *testing.T) {
	for _, k := range kernelChecks {
		t.Run(k.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for n := 0; n <= maxLen; n++ {
				for range 3 {
					k.check(t, randCase(r, n))
				}
			}
		})
	}
}

// guarded returns a copy of x inside a larger buffer, with guard cells either
// side, and the view of x within it. checkGuards fails if a kernel wrote
// outside the view.
func guarded(x []float32) (buf, view []float32) {
	buf = make([]float32, len(x)+2*guardLen)
	for i := range buf {
		buf[i] = guardVal
	}
	view = buf[guardLen : guardLen+len(x) : guardLen+len(x)]
	copy(view, x)
	return buf, view
}

const (
	guardLen = 3
	guardVal = float32(-12345.678)
)

func checkGuards(t rapid.TB, op string, buf []float32) {
	t.Helper()
	n := len(buf) - 2*guardLen
	for i := range guardLen {
		if buf[i] != guardVal || buf[guardLen+n+i] != guardVal {
			t.Fatalf("%s: wrote outside its slice: guards %v / %v", op, buf[:guardLen], buf[guardLen+n:])
		}
	}
}

// near fails unless got is within tol of want.
func near(t rapid.TB, what string, got float32, want, tol float64) {
	t.Helper()
	if d := math.Abs(float64(got) - want); !(d <= tol) {
		t.Fatalf("%s = %v, want %v ± %.3g (off by %.3g)", what, got, want, tol, d)
	}
}

// sameBits fails unless got and want hold the same float32 bit patterns, so
// NaN payloads and the sign of zero count.
func sameBits(t rapid.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#08x), want %v (%#08x)", what, i,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func checkAxpy(t rapid.TB, c vecCase) {
	t.Helper()
	x := Clone(c.x)
	buf, y := guarded(c.y)
	Axpy(c.alpha, x, y)
	checkGuards(t, "Axpy", buf)
	sameBits(t, "Axpy changed x", x, c.x)
	for i := range y {
		ax := float64(c.alpha) * float64(c.x[i])
		want := float64(c.y[i]) + ax
		// Two roundings (product, sum), or one if fused.
		tol := 2*u32*(math.Abs(float64(c.y[i]))+math.Abs(ax)) + tinyF32
		near(t, "Axpy y["+strconv.Itoa(i)+"]", y[i], want, tol)
	}
}

func checkDot(t rapid.TB, c vecCase) {
	t.Helper()
	var want, mag float64
	for i := range c.x {
		p := float64(c.x[i]) * float64(c.y[i])
		want += p
		mag += math.Abs(p)
	}
	n := float64(len(c.x))
	// Standard bound for recursive summation of rounded products:
	// |err| ≤ γ_{n+1}·Σ|x_i y_i|, plus underflow in the products.
	tol := (n+1)*u32*mag*1.01 + n*tinyF32
	near(t, "Dot", Dot(c.x, c.y), want, tol)
}

func checkScale(t rapid.TB, c vecCase) {
	t.Helper()
	buf, x := guarded(c.x)
	Scale(c.alpha, x)
	checkGuards(t, "Scale", buf)
	want := make([]float32, len(c.x))
	for i, v := range c.x {
		// The float64 product of two float32s is exact, so rounding it once
		// gives the correctly rounded float32 product: Scale must match it.
		want[i] = float32(float64(c.alpha) * float64(v))
	}
	sameBits(t, "Scale", x, want)
}

func checkNorm(t rapid.TB, c vecCase) {
	t.Helper()
	var ss float64
	for _, v := range c.x {
		ss += float64(v) * float64(v)
	}
	want := math.Sqrt(ss)
	// Norm accumulates in float64; only the final rounding to float32 counts.
	near(t, "Norm", Norm(c.x), want, 2*u32*want+tinyF32)
}

func checkSum(t rapid.TB, c vecCase) {
	t.Helper()
	var want, mag float64
	for _, v := range c.x {
		want += float64(v)
		mag += math.Abs(float64(v))
	}
	n := float64(len(c.x))
	near(t, "Sum", Sum(c.x), want, n*u32*mag*1.01)
}

func checkFill(t rapid.TB, c vecCase) {
	t.Helper()
	buf, x := guarded(c.x)
	Fill(x, c.alpha)
	checkGuards(t, "Fill", buf)
	want := make([]float32, len(x))
	for i := range want {
		want[i] = c.alpha
	}
	sameBits(t, "Fill", x, want)
}

func checkCopy(t rapid.TB, c vecCase) {
	t.Helper()
	src := Clone(c.x)
	buf, dst := guarded(c.y)
	Copy(dst, src)
	checkGuards(t, "Copy", buf)
	sameBits(t, "Copy dst", dst, c.x)
	sameBits(t, "Copy changed src", src, c.x)
}

func checkClone(t rapid.TB, c vecCase) {
	t.Helper()
	got := Clone(c.x)
	if got == nil {
		t.Fatalf("Clone of a non-nil slice of len %d is nil", len(c.x))
	}
	sameBits(t, "Clone", got, c.x)
	if len(got) > 0 {
		v := float32(1)
		if c.x[0] == v {
			v = 2
		}
		got[0] = v
		if c.x[0] == v {
			t.Fatalf("Clone shares its backing array with the original")
		}
	}
}

// TestKernelsExact pins small cases whose answers are exact in float32, so a
// wrong answer cannot hide inside a tolerance.
func TestKernelsExact(t *testing.T) {
	seq := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(i + 1)
		}
		return s
	}
	tests := []struct {
		name string
		run  func() any
		want any
	}{
		{"Axpy/empty", func() any { y := []float32{}; Axpy(2, []float32{}, y); return y }, []float32{}},
		{"Axpy/5", func() any {
			y := []float32{10, 20, 30, 40, 50}
			Axpy(2, seq(5), y)
			return y
		}, []float32{12, 24, 36, 48, 60}},
		{"Axpy/alias", func() any { y := seq(7); Axpy(-1, y, y); return y }, make([]float32, 7)},
		{"Dot/empty", func() any { return Dot(nil, nil) }, float32(0)},
		{"Dot/3", func() any { return Dot([]float32{1, 2, 3}, []float32{4, 5, 6}) }, float32(32)},
		{"Dot/seq7", func() any { x := seq(7); return Dot(x, x) }, float32(140)},
		{"Dot/seq67", func() any { x := seq(67); return Dot(x, x) }, float32(67 * 68 * 135 / 6)},
		{"Scale/5", func() any { x := seq(5); Scale(-0.5, x); return x }, []float32{-0.5, -1, -1.5, -2, -2.5}},
		{"Scale/zero", func() any { x := seq(6); Scale(0, x); return x }, make([]float32, 6)},
		{"Norm/empty", func() any { return Norm(nil) }, float32(0)},
		{"Norm/3-4", func() any { return Norm([]float32{3, -4}) }, float32(5)},
		{"Norm/odd", func() any { return Norm([]float32{0, 2, 0, 0, -3, 0, 6}) }, float32(7)},
		{"Sum/empty", func() any { return Sum([]float32{}) }, float32(0)},
		{"Sum/seq1", func() any { return Sum(seq(1)) }, float32(1)},
		{"Sum/seq5", func() any { return Sum(seq(5)) }, float32(15)},
		{"Sum/seq67", func() any { return Sum(seq(67)) }, float32(67 * 68 / 2)},
		{"Fill/6", func() any { x := seq(6); Fill(x, 7); return x }, []float32{7, 7, 7, 7, 7, 7}},
		{"Copy/5", func() any { d := make([]float32, 5); Copy(d, seq(5)); return d }, seq(5)},
		{"Clone/3", func() any { return Clone(seq(3)) }, seq(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.run()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNormRange checks that Norm neither overflows nor underflows in its
// intermediate sums: squaring these values in float32 would give +Inf or 0.
func TestNormRange(t *testing.T) {
	constant := func(n int, v float32) []float32 {
		x := make([]float32, n)
		Fill(x, v)
		return x
	}
	type tc struct {
		name string
		x    []float32
		want float64
	}
	var tests []tc
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 67} {
		// Largest elements whose norm is still about 2.97e38 < MaxFloat32.
		big := float32(0.99 * 3e38 / math.Sqrt(float64(n)))
		tests = append(tests,
			tc{"big/n=" + strconv.Itoa(n), constant(n, big), math.Sqrt(float64(n)) * float64(big)},
			tc{"small/n=" + strconv.Itoa(n), constant(n, 1e-30), math.Sqrt(float64(n)) * float64(float32(1e-30))},
			tc{"subnormal/n=" + strconv.Itoa(n), constant(n, -1e-44), math.Sqrt(float64(n)) * float64(float32(1e-44))},
		)
	}
	tests = append(tests,
		tc{"3e38", []float32{3e38}, float64(float32(3e38))},
		tc{"3e38 and -1e38", []float32{3e38, -1e38}, math.Hypot(float64(float32(3e38)), float64(float32(1e38)))},
		tc{"max", []float32{math.MaxFloat32}, math.MaxFloat32},
		tc{"big and tiny", []float32{1e-30, 3e38, 1e-30}, float64(float32(3e38))},
		tc{"3e-30 4e-30", []float32{3e-30, 4e-30}, math.Hypot(float64(float32(3e-30)), float64(float32(4e-30)))},
		// The true norm, 4.24e38, exceeds MaxFloat32: +Inf is the right answer.
		tc{"not representable", []float32{3e38, 3e38}, math.Inf(1)},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Norm(tc.x)
			if math.IsInf(tc.want, 1) {
				if !math.IsInf(float64(got), 1) {
					t.Fatalf("Norm = %v, want +Inf", got)
				}
				return
			}
			if math.IsInf(float64(got), 0) || got == 0 {
				t.Fatalf("Norm = %v, want %v: intermediate overflow or underflow", got, tc.want)
			}
			near(t, "Norm", got, tc.want, 2*u32*tc.want+tinyF32)
		})
	}
}

// TestKernelsPanicOnLengthMismatch checks that the two-vector kernels reject
// vectors of different lengths instead of silently using the shorter one.
func TestKernelsPanicOnLengthMismatch(t *testing.T) {
	a3, a4 := make([]float32, 3), []float32{1, 1, 1, 1}
	tests := []struct {
		name string
		f    func()
		msg  string
	}{
		{"Axpy/x short", func() { Axpy(1, a3, a4) }, "flat: Axpy: lengths 3 and 4 differ, want equal lengths"},
		{"Axpy/y short", func() { Axpy(1, a4, a3) }, "flat: Axpy: lengths 4 and 3 differ, want equal lengths"},
		{"Axpy/nil", func() { Axpy(1, nil, a3) }, "flat: Axpy: lengths 0 and 3 differ, want equal lengths"},
		{"Dot/x short", func() { Dot(a3, a4) }, "flat: Dot: lengths 3 and 4 differ, want equal lengths"},
		{"Dot/y short", func() { Dot(a4, a3) }, "flat: Dot: lengths 4 and 3 differ, want equal lengths"},
		{"Copy/dst short", func() { Copy(a3, a4) }, "flat: Copy: lengths 3 and 4 differ, want equal lengths"},
		{"Copy/src short", func() { Copy(a4, a3) }, "flat: Copy: lengths 4 and 3 differ, want equal lengths"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustPanic(t, tc.msg, tc.f)
		})
	}
	if diff := cmp.Diff(make([]float32, 3), a3); diff != "" {
		t.Errorf("a panicking kernel wrote to its input (-want +got):\n%s", diff)
	}
}

// mustPanic fails unless f panics with a value whose text contains msg.
func mustPanic(t *testing.T, msg string, f func()) {
	t.Helper()
	var got any
	func() {
		defer func() { got = recover() }()
		f()
	}()
	if got == nil {
		t.Fatalf("did not panic, want panic containing %q", msg)
	}
	var text string
	switch v := got.(type) {
	case string:
		text = v
	case error:
		text = v.Error()
	default:
		t.Fatalf("panicked with %T %v, want a string or error containing %q", got, got, msg)
	}
	if !strings.Contains(text, msg) {
		t.Fatalf("panic %q does not contain %q", text, msg)
	}
}

func TestClone(t *testing.T) {
	if got := Clone(nil); got != nil {
		t.Errorf("Clone(nil) = %#v, want nil", got)
	}
	if got := Clone([]float32{}); got == nil || len(got) != 0 {
		t.Errorf("Clone([]float32{}) = %#v, want an empty non-nil slice", got)
	}
	orig := []float32{1, 2, 3}
	c := Clone(orig[:2])
	if diff := cmp.Diff([]float32{1, 2}, c); diff != "" {
		t.Errorf("Clone mismatch (-want +got):\n%s", diff)
	}
	c[0] = 100
	if diff := cmp.Diff([]float32{1, 2, 3}, orig); diff != "" {
		t.Errorf("modifying the clone changed the original (-want +got):\n%s", diff)
	}
}

// TestKernelsAllocate pins the hot kernels at zero allocations (Invariant 6).
func TestKernelsAllocate(t *testing.T) {
	x, y := make([]float32, 1000), make([]float32, 1000)
	var sink float32
	tests := []struct {
		name string
		f    func()
	}{
		{"Axpy", func() { Axpy(0.5, x, y) }},
		{"Dot", func() { sink += Dot(x, y) }},
		{"Scale", func() { Scale(0.5, x) }},
		{"Norm", func() { sink += Norm(x) }},
		{"Sum", func() { sink += Sum(x) }},
		{"Fill", func() { Fill(x, 1) }},
		{"Copy", func() { Copy(y, x) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(20, tc.f); n != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tc.name, n)
			}
		})
	}
	if n := testing.AllocsPerRun(20, func() { _ = Clone(x) }); n != 1 {
		t.Errorf("Clone allocates %v times per call, want 1", n)
	}
	_ = sink
}

// TestAxpyZeroAlpha pins the BLAS convention: alpha == 0 leaves y alone even
// where x holds NaN or Inf, so a masked update cannot poison parameters.
func TestAxpyZeroAlpha(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	y := []float32{1, 2, 3}
	Axpy(0, []float32{nan, inf, 1}, y)
	if diff := cmp.Diff([]float32{1, 2, 3}, y); diff != "" {
		t.Errorf("Axpy(0, …) changed y (-want +got):\n%s", diff)
	}
}
