package ad

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/flat"
	"pgregory.net/rapid"
)

// drawSpecial draws n values, most of them ordinary, some of them the
// special values (signed zeros, infinities, NaNs, extremes) where two
// kernels could part.
func drawSpecial(rt *rapid.T, n int, label string) []float32 {
	sp := specialFloats()
	return rapid.SliceOfN(rapid.OneOf(
		rapid.Float32Range(-4, 4),
		rapid.SampledFrom(sp),
	), n, n).Draw(rt, label)
}

// sameBits returns the first index where a and b differ in their bits, or
// -1; any two NaNs are the same (their payloads are no kernel's contract).
func sameBits(a, b []float32) int {
	for i := range a {
		if a[i] != a[i] && b[i] != b[i] {
			continue
		}
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestSmallGemmMatchesFlat: but for narrowRows' products, the batch-one
// products that gemm hands to
// flat.Gemv itself (a row or a column of C) and the outer products of two
// columns it computes (outer2) give flat.Gemm's bits, special values
// included, for either transpose and padded leading dimensions.
func TestSmallGemmMatchesFlat(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(1, 70).Draw(rt, "m")
		n := rapid.SampledFrom([]int{1, 2, 2, 3, 8, 17, 70}).Draw(rt, "n")
		k := rapid.SampledFrom([]int{1, 1, 2, 3, 8, 50, 63}).Draw(rt, "k")
		if rapid.Bool().Draw(rt, "row") {
			m = 1
		}
		ta, tb := rapid.Bool().Draw(rt, "ta"), rapid.Bool().Draw(rt, "tb")
		ar, ac := m, k
		if ta {
			ar, ac = k, m
		}
		br, bc := k, n
		if tb {
			br, bc = n, k
		}
		lda := ac + rapid.IntRange(0, 2).Draw(rt, "padA")
		ldb := bc + rapid.IntRange(0, 2).Draw(rt, "padB")
		ldc := n + rapid.IntRange(0, 2).Draw(rt, "padC")
		a := drawSpecial(rt, (ar-1)*lda+ac, "a")
		b := drawSpecial(rt, (br-1)*ldb+bc, "b")
		if m == 1 && (!ta || lda == 1) && tb && k <= narrowK {
			return // narrowRows: TestNarrowRows
		}
		got := make([]float32, (m-1)*ldc+n)
		want := make([]float32, len(got))
		gemm(ta, tb, m, n, k, a, lda, b, ldb, got, ldc)
		flat.Gemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, want, ldc)
		// Zeros of either sign are equal here: flat.Gemm's pure-Go kernels
		// (-tags noasm) sum each product onto +0, its AVX-512 outer-product
		// kernel stores the product, so a product that underflows to −0
		// (0.5·−1e-45) is +0 on one build and −0 on the other; outer2
		// stores the product, as the AVX kernel does.
		for i := range got {
			if got[i] == 0 && want[i] == 0 {
				got[i], want[i] = 0, 0
			}
		}
		if i := sameBits(got, want); i >= 0 {
			rt.Fatalf("c[%d] = %g (%#x), flat.Gemm %g (%#x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	})
}

// TestShortRowsMatchSIMD: binaryRow's loops for short rows give the bits
// of its SIMD kernels (Axpy, vmath.Mul, Scale), which the same op on a
// long row runs.
func TestShortRowsMatchSIMD(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		op := rapid.SampledFrom([]binop{opAdd, opSub, opMul, opDiv}).Draw(rt, "op")
		n := rapid.IntRange(1, shortRow).Draw(rt, "n")
		scalar := rapid.Bool().Draw(rt, "scalar b")
		a := drawSpecial(rt, n, "a")
		b := drawSpecial(rt, n, "b")
		lb := 1
		if scalar {
			lb = 0
		}
		got := make([]float32, n)
		binaryRow(op, got, a, b, 1, lb)
		// The same elements at the front of a row too long for the short
		// loops: the SIMD path.
		long := 4 * shortRow
		la, lbv := make([]float32, long), make([]float32, long)
		copy(la, a)
		copy(lbv, b)
		if scalar {
			lbv = b[:1]
		}
		want := make([]float32, long)
		binaryRow(op, want, la, lbv, 1, lb)
		if i := sameBits(got, want[:n]); i >= 0 {
			rt.Fatalf("op %d: out[%d] = %g (%#x), SIMD %g (%#x) for %g, %g", op, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), a[i], b[i*lb])
		}
	})
}

// TestNarrowRows: narrowRows' y = W·x is each row's products rounded and
// summed, within k roundings of the sum of the rounded products (in
// float64), and
// it is what gemm computes for x·Wᵀ with a narrow W; a NaN or an infinity
// in a row gives the float64 sum's.
func TestNarrowRows(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 70).Draw(rt, "n")
		k := rapid.IntRange(1, narrowK).Draw(rt, "k")
		ldw := k + rapid.IntRange(0, 2).Draw(rt, "pad")
		special := rapid.Bool().Draw(rt, "special")
		draw := func(m int, label string) []float32 {
			if special {
				return drawSpecial(rt, m, label)
			}
			return rpDraw(rt, m, label)
		}
		w := draw((n-1)*ldw+k, "w")
		x := draw(k, "x")
		y := make([]float32, n)
		gemm(false, true, 1, n, k, x, k, w, ldw, y, n)
		for i := range y {
			var exact, mag float64
			for j := range k {
				// The product rounded to float32 (as narrowRows must),
				// so that an overflow to ±Inf is the reference's too.
				p := float64(w[i*ldw+j] * x[j])
				exact += p
				mag += math.Abs(p)
			}
			got := float64(y[i])
			switch {
			case math.IsNaN(exact):
				if !math.IsNaN(got) {
					rt.Fatalf("y[%d] = %g, the exact sum NaN", i, got)
				}
			case math.IsInf(exact, 0):
				// A product that overflows float32 meets an infinity of
				// the other sign in the float32 sum: NaN, where float64's
				// sum keeps one infinity.
				if got != exact && !(special && math.IsNaN(got)) {
					rt.Fatalf("y[%d] = %g, the exact sum %g", i, got, exact)
				}
			case mag > math.MaxFloat32/2:
				// Overflow of a partial sum in float32 is fine either way.
			default:
				tol := float64(k) * 0x1p-24 * mag
				if math.Abs(got-exact) > tol {
					rt.Fatalf("y[%d] = %g, the exact sum %g (tolerance %g)", i, got, exact, tol)
				}
			}
		}
	})
}
