package vmath

import (
	"math"

	"github.com/flatkit/flatkit/internal/cpu"
)

// isa is the kernel set in use. detectISA chooses it once at start-up.
// Only tests change it, to run every kernel set the machine supports.
var isa = detectISA()

// detectISA is the kernel set internal/cpu chooses for this machine. The
// AVX2 kernels use no FMA, but the one rule asks for it. No x86 CPU has
// AVX2 without FMA.
func detectISA() cpu.Level { return cpu.Best }

// Tanh sets dst[i] = tanh(src[i]) for every i, as TanhScalar does, bit for
// bit. dst and src may be the same slice but must not otherwise overlap. It
// panics if their lengths differ.
func Tanh(dst, src []float32) {
	mustSameLen("Tanh", len(dst), len(src))
	tanh(dst, src)
}

// Sigmoid sets dst[i] = 1/(1 + e^−src[i]) for every i, as SigmoidScalar
// does, bit for bit. dst and src may be the same slice but must not
// otherwise overlap. It panics if their lengths differ.
func Sigmoid(dst, src []float32) {
	mustSameLen("Sigmoid", len(dst), len(src))
	sigmoid(dst, src)
}

func mustSameLen(op string, nd, ns int) {
	if nd != ns {
		panic("vmath: " + op + ": len(dst) != len(src)")
	}
}

// The constants of TanhScalar. The assembly kernels in vmath_amd64.s hold
// the same values, as float32 bit patterns.
const (
	// tanhClamp is where the rational approximation reaches ±1.
	tanhClamp = 7.90531110763549805
	// Below tanhSmall in magnitude, tanh x = x − x³/3 + … rounds to x.
	tanhSmall = 0.0004

	tanhA1  = 4.89352455891786e-03
	tanhA3  = 6.37261928875436e-04
	tanhA5  = 1.48572235717979e-05
	tanhA7  = 5.12229709037114e-08
	tanhA9  = -8.60467152213735e-11
	tanhA11 = 2.00018790482477e-13
	tanhA13 = -2.76076847742355e-16
	tanhB0  = 4.89352518554385e-03
	tanhB2  = 2.26843463243900e-03
	tanhB4  = 1.18534705686654e-04
	tanhB6  = 1.19825839466702e-06
)

// TanhScalar is a float32 tanh by a rational approximation: the
// 13/6-degree odd/even polynomials that Eigen uses. It is clamped at
// ±7.9053111, where the approximation reaches ±1. It is the reference that
// Tanh's kernels match bit for bit. tanh(±Inf) = ±1, tanh(±0) = ±0, and
// tanh(NaN) = NaN.
//
// Against math.Tanh its error over every float32 input is at most 3.44 ×
// 2⁻²³ relative to the result, or 6.9 units in the last place of the
// float32 result. TestTanhAccuracy with -exhaustive pins both bounds. The
// largest errors in ulps are for 4 < |x| < 9. There tanh x is just below
// 1, and float32 values are spaced 2⁻²⁴. The polynomials lose a few bits
// near 1, and the clamp returns ±1 from 7.9 on, where float32 tanh reaches
// ±1 only at 9.01.
//
// Every product and sum is rounded to float32 on its own: the explicit
// conversions forbid fused multiply-adds. So the result is the same on
// every architecture and kernel set.
func TanhScalar(x float32) float32 {
	if x > tanhClamp {
		x = tanhClamp
	} else if x < -tanhClamp {
		x = -tanhClamp
	}
	if x != x { // NaN
		return x
	}
	if -tanhSmall < x && x < tanhSmall {
		return x
	}
	x2 := x * x
	p := float32(tanhA13)
	p = float32(p*x2) + tanhA11
	p = float32(p*x2) + tanhA9
	p = float32(p*x2) + tanhA7
	p = float32(p*x2) + tanhA5
	p = float32(p*x2) + tanhA3
	p = float32(p*x2) + tanhA1
	p *= x
	q := float32(tanhB6)
	q = float32(q*x2) + tanhB4
	q = float32(q*x2) + tanhB2
	q = float32(q*x2) + tanhB0
	return p / q
}

// The constants of SigmoidScalar's exp, Cephes' expf. It computes e^y =
// 2ⁿ·e^r, where n = round(y·log₂e) and r = y − n·ln 2. ln 2 is split in two
// parts, expC1 + expC2, so that n·expC1 is exact. On |r| ≤ ln(2)/2,
// e^r = 1 + r + r²·P(r).
const (
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
	// Below expLow, e^y (and the sigmoid) rounds to 0 in float32, and above
	// it 2ⁿ needs no more than 2⁻¹⁵⁰.
	expLow = -104
)

// SigmoidScalar is a float32 logistic function, 1/(1 + e⁻ˣ). With e =
// e^−|x|, it is 1/(1 + e) for x ≥ 0 and e/(1 + e) for x < 0. So nothing
// cancels, and the result keeps its relative accuracy however close to 0
// it is, down to the subnormals. e^−|x| is Cephes' expf, scaled by 2ⁿ in
// two steps so that a subnormal result is rounded once. It is the
// reference that Sigmoid's kernels match bit for bit. Sigmoid(+Inf) = 1,
// Sigmoid(−Inf) = 0, Sigmoid(±0) = 0.5, and Sigmoid(NaN) = NaN.
//
// Against a float64 sigmoid its error over every float32 input is at most
// 2.4 units in the last place of the float32 result for x < 0, and 1.5
// for x ≥ 0. TestSigmoidAccuracy with -exhaustive pins both bounds. The
// other way to vectorise it, 0.5 + 0.5·tanh(x/2), loses the relative
// accuracy for x below about −1.5, and every digit by −16.
//
// Every product and sum is rounded to float32 on its own: the explicit
// conversions forbid fused multiply-adds. So the result is the same on
// every architecture and kernel set.
func SigmoidScalar(x float32) float32 {
	if x != x { // NaN
		return x
	}
	y := math.Float32frombits(math.Float32bits(x) | 1<<31) // −|x|
	if y < expLow {
		y = expLow
	}
	// e = e^y, y in [expLow, 0]
	n := float32(math.RoundToEven(float64(float32(y * expLog2e))))
	r := y - float32(n*expC1)
	r -= float32(n * expC2)
	r2 := r * r
	p := float32(expP0)
	p = float32(p*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	p = float32(p*r2) + r
	p++
	// e = p·2ⁿ as (p·2ⁿ⁺⁶⁴)·2⁻⁶⁴: the first product is exact and normal
	// (n ≥ −150), the second rounds once.
	e := float32(p*math.Float32frombits(uint32(int32(n)+127+64)<<23)) * 0x1p-64
	num := e
	if x >= 0 {
		num = 1
	}
	return num / (1 + e)
}

// tanhGo and sigmoidGo are the pure-Go kernels. They serve the noasm
// build and, on amd64, the AVX2 kernels' tails and the tests' pure-Go
// kernel set.

func tanhGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = TanhScalar(v)
	}
}

func sigmoidGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = SigmoidScalar(v)
	}
}
