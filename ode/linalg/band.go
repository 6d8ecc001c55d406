package linalg

import (
	"fmt"
	"math"
)

// BandLU is the LU factorisation with partial pivoting of an n×n band
// matrix with bandwidths lower and upper, as LAPACK's gbtrf computes it.
// Row interchanges let U's upper bandwidth grow to lower+upper, so a
// factorisation costs O(n·lower·(lower+upper)) and a solve
// O(n·(2·lower+upper)). The rows are kept by rows, so that loading ode's
// band storage is a contiguous copy and every update runs over
// contiguous memory. BenchmarkBandLU times it.
//
// The input of Factor and FactorShifted is the band storage of package
// ode's BandJacobian: by rows, lower+upper+1 entries per row, entry (i, j)
// at index i*(lower+upper+1) + j−i+lower. Entries of that storage that
// fall outside the matrix (j < 0 or j ≥ n) are ignored.
//
// A BandLU allocates only in NewBandLU: Factor, FactorShifted, Solve and
// SolveTranspose allocate nothing. It is not safe for concurrent use.
type BandLU[T Float] struct {
	n, lower, upper int
	kl, ku          int // lower and upper reduced to n−1
	// width is the stride of a: row i keeps columns i−kl to i+ku+kl,
	// the last kl of them for fill-in.
	width int
	// a holds the rows of W, entry (i, j) at i*width + j−i+kl, and after
	// a factorisation U's rows, with 1/U_ii on the diagonal so that
	// solves multiply.
	a []T
	// l holds L's multipliers by columns: l[k*kl+r] is the multiplier of
	// row k+1+r at step k.
	l []T
	// piv[k] is the row swapped with row k at step k, as in LAPACK.
	piv []int
	// ext[k] is the number of columns right of the diagonal that U's row
	// k may have non-zero: upper without interchanges, up to lower+upper.
	ext []int
	// scale is the magnitude of each row of W, swapped with the rows,
	// for the test of a negligible pivot.
	scale []T
	ok    bool // a successful factorisation is held
}

// NewBandLU returns a band LU for n×n matrices with the given lower and
// upper bandwidths. Bandwidths above n−1 are reduced to n−1. It panics on
// a negative argument.
func NewBandLU[T Float](n, lower, upper int) *BandLU[T] {
	if n < 0 || lower < 0 || upper < 0 {
		panic(fmt.Sprintf("linalg: NewBandLU(%d, %d, %d): want non-negative arguments", n, lower, upper))
	}
	b := &BandLU[T]{n: n, lower: lower, upper: upper}
	// The fill-in columns are those of the lower rows below; past n−1
	// bandwidth no row has more entries.
	kl, ku := min(lower, max(n-1, 0)), min(upper, max(n-1, 0))
	b.kl, b.ku = kl, ku
	b.width = 2*kl + ku + 1
	b.a = make([]T, n*b.width)
	b.l = make([]T, n*kl)
	b.piv = make([]int, n)
	b.ext = make([]int, n)
	b.scale = make([]T, n)
	return b
}

// Size returns n, the order of the matrices b factors.
func (b *BandLU[T]) Size() int { return b.n }

// Bandwidths returns the lower and upper bandwidths of the input storage.
func (b *BandLU[T]) Bandwidths() (lower, upper int) { return b.lower, b.upper }

// BandLen is the length of the band storage of an n×n matrix with these
// bandwidths: n·(lower+upper+1).
func BandLen(n, lower, upper int) int { return n * (lower + upper + 1) }

// FactorShifted factors W = I − c·J, where J is in band storage. It
// returns −1 on success, or the column of the first pivot that is zero,
// not finite, or below 4ε times its row's scale max(1, max_j |c·J_ij|).
// The last test catches a row cancelled to rounding noise, which would
// otherwise give a solution amplified by 1/ε. After a failure the
// factorisation must not be used to solve.
func (b *BandLU[T]) FactorShifted(J []T, c T) int {
	return b.factor(J, c, true)
}

// Factor factors A, given in band storage. It returns −1 on success, or
// the column of the first pivot that is zero, not finite, or below 4ε
// times its row's scale max_j |A_ij|. After a failure the factorisation
// must not be used to solve.
func (b *BandLU[T]) Factor(A []T) int {
	return b.factor(A, 1, false)
}

// loadChunk is the number of rows factor loads ahead of the elimination,
// so that a row is still in cache when the elimination reaches it.
const loadChunk = 64

// load copies rows from to to−1 of A, or of I − c·A when shift is set,
// into b.a, with zeros in the fill-in columns, and each row's scale into
// b.scale.
func (b *BandLU[T]) load(A []T, c T, shift bool, from, to int) {
	n, w, kl, ku := b.n, b.width, b.kl, b.ku
	sw := b.lower + b.upper + 1
	A = A[:n*sw]
	a := b.a[:n*w]
	scale := b.scale[:n]
	for i := from; i < to; i++ {
		row := a[i*w : i*w+w]
		// Columns i−kl to i+ku of row i come from A's row i, which starts
		// at column i−b.lower; lo and hi bound the part inside the matrix.
		// The rest of the row is zero. (Loops, not clear: the spans are
		// a few entries, shorter than a call to memclr.)
		src := A[i*sw+b.lower-kl : i*sw+b.lower+ku+1]
		lo, hi := max(0, kl-i), min(kl+ku+1, kl+n-i)
		for j := 0; j < lo; j++ {
			row[j] = 0
		}
		for j := hi; j < len(row); j++ {
			row[j] = 0
		}
		band := row[lo:hi]
		src = src[lo:hi]
		band = band[:len(src)]
		s := T(0)
		if shift {
			for j, v := range src {
				v *= c
				band[j] = -v
				s = max(s, abs(v))
			}
			row[kl]++
			s = max(s, 1)
		} else {
			for j, v := range src {
				band[j] = v
				s = max(s, abs(v))
			}
		}
		scale[i] = s
	}
}

// factor loads A, or I − c·A when shift is set, and runs the elimination,
// as LAPACK's gbtf2 does but by rows:
// at step k, the pivot is the largest |a_ik| for k ≤ i ≤ k+kl; row k and
// the pivot row are swapped over columns k to ju, the last column any of
// the rows k… may have reached; then each row below subtracts its
// multiple of row k.
func (b *BandLU[T]) factor(A []T, c T, shift bool) int {
	b.ok = false
	n, w, kl, ku := b.n, b.width, b.kl, b.ku
	a := b.a[:n*w]
	lm := b.l[:n*kl]
	piv := b.piv[:n]
	ext := b.ext[:n]
	scale := b.scale[:n]
	tiny := 4 * eps[T]()
	ju := 0     // the last column touched so far
	loaded := 0 // the rows loaded so far
	for k := 0; k < n; k++ {
		last := min(n-1, k+kl) // the last row with an entry in column k
		if last >= loaded {
			to := min(n, last+loadChunk)
			b.load(A, c, shift, loaded, to)
			loaded = to
		}
		// Pivot: a_ik sits at i*w + k−i+kl = i*(w−1) + k+kl.
		p := k
		big := abs(a[k*w+kl])
		for i := k + 1; i <= last; i++ {
			if v := abs(a[i*(w-1)+k+kl]); v > big {
				big, p = v, i
			}
		}
		piv[k] = p
		if !(big > 0) || float64(big)-float64(big) != 0 { // zero, NaN or Inf
			return k
		}
		ju = max(ju, min(n-1, p+ku))
		m := ju - k // the columns k+1 … ju right of the diagonal
		ext[k] = m
		rk := a[k*w+kl : k*w+kl+m+1]
		if p != k {
			rp := a[p*w+kl+k-p : p*w+kl+k-p+m+1]
			for j := range rk {
				rk[j], rp[j] = rp[j], rk[j]
			}
			scale[k], scale[p] = scale[p], scale[k]
		}
		if big <= tiny*scale[k] {
			return k
		}
		inv := 1 / rk[0]
		rk[0] = inv
		rk = rk[1:]
		lk := lm[k*kl : k*kl+last-k]
		for r := range lk {
			i := k + 1 + r
			off := i*w + kl + k - i // a_ik
			ri := a[off : off+m+1]
			l := ri[0] * inv
			lk[r] = l
			if l == 0 {
				continue
			}
			ri = ri[1:]
			ri = ri[:len(rk)]
			for j, v := range rk {
				ri[j] -= l * v
			}
		}
	}
	b.ok = true
	return -1
}

// factors returns the factors for a solve, op, and panics if there are
// none.
func (b *BandLU[T]) factors(op string) (a, lm []T, piv, ext []int) {
	if !b.ok {
		panic("linalg: BandLU." + op + " without a successful factorisation")
	}
	return b.a[:b.n*b.width], b.l[:b.n*b.kl], b.piv[:b.n], b.ext[:b.n]
}

// Solve overwrites x with W⁻¹x, where W is the last matrix factored. It
// panics if the last factorisation failed or none was done.
//
// Each loop of the solves carries the component the next row needs in a
// register (xn), so that a row waits on a multiply and a subtraction, not
// on a store and a load of the row before.
func (b *BandLU[T]) Solve(x []T) {
	a, lm, piv, ext := b.factors("Solve")
	n, w, kl := b.n, b.width, b.kl
	x = x[:n]
	if n == 0 {
		return
	}
	// L y = P x, one column of multipliers per step; xn is x_k as the
	// steps before k left it. The last step has no interchange.
	if kl > 0 {
		xn := x[0]
		for k := 0; k < n-1; k++ {
			xk := xn
			if p := piv[k]; p != k {
				xk, x[p] = x[p], xn
			}
			x[k] = xk
			lk := lm[k*kl : k*kl+min(kl, n-1-k)]
			xs := x[k+1 : k+1+len(lk)]
			xn = xs[0] - lk[0]*xk
			xs, lk = xs[1:], lk[1:]
			xs = xs[:len(lk)]
			for r, l := range lk {
				xs[r] -= l * xk
			}
		}
		x[n-1] = xn
	}
	// U x = y by rows, U's row k spanning columns k to k+ext[k]; xn is
	// x_{k+1}.
	xn := T(0)
	for k := n - 1; k >= 0; k-- {
		m := ext[k]
		rk := a[k*w+kl : k*w+kl+m+1]
		s := x[k]
		if m > 0 {
			xs := x[k+2 : k+1+m]
			uk := rk[2:]
			uk = uk[:len(xs)]
			for j, v := range uk {
				s -= v * xs[j]
			}
			s -= rk[1] * xn
		}
		xn = s * rk[0]
		x[k] = xn
	}
}

// SolveTranspose overwrites x with W⁻ᵀx, where W is the last matrix
// factored. It panics if the last factorisation failed or none was done.
func (b *BandLU[T]) SolveTranspose(x []T) {
	a, lm, piv, ext := b.factors("SolveTranspose")
	n, w, kl := b.n, b.width, b.kl
	x = x[:n]
	if n == 0 {
		return
	}
	// Uᵀ z = x: z_k is final once the rows above have been subtracted;
	// xn is x_k as the rows above left it.
	xn := x[0]
	for k := 0; k < n; k++ {
		m := ext[k]
		rk := a[k*w+kl : k*w+kl+m+1]
		zk := xn * rk[0]
		x[k] = zk
		if m == 0 {
			if k+1 < n {
				xn = x[k+1]
			}
			continue
		}
		uk := rk[1:]
		xs := x[k+1 : k+1+len(uk)]
		xn = xs[0] - uk[0]*zk
		xs, uk = xs[1:], uk[1:]
		xs = xs[:len(uk)]
		for j, v := range uk {
			xs[j] -= v * zk
		}
	}
	// Lᵀ and the interchanges in reverse: x = P₀ᵀL₀⁻ᵀ … Pₙ₋₁ᵀLₙ₋₁⁻ᵀ z.
	// The last step is the identity; xn is the final x_{k+1}.
	if kl > 0 {
		xn = x[n-1]
		for k := n - 2; k >= 0; k-- {
			lk := lm[k*kl : k*kl+min(kl, n-1-k)]
			xs := x[k+2 : k+1+len(lk)]
			l1 := lk[1:]
			l1 = l1[:len(xs)]
			s := x[k]
			for r, l := range l1 {
				s -= l * xs[r]
			}
			s -= lk[0] * xn
			if p := piv[k]; p != k {
				s, x[p] = x[p], s
			}
			x[k] = s
			xn = s
		}
	}
}

// BandToDense writes the n×n matrix of band storage band, with these
// bandwidths, into dst as a row-major matrix: dst[i*n+j] = A_ij. Entries
// outside the band are set to zero.
func BandToDense[T Float](dst []T, n, lower, upper int, band []T) {
	dst = dst[:n*n]
	sw := lower + upper + 1
	band = band[:n*sw]
	for i := 0; i < n; i++ {
		row := dst[i*n : i*n+n]
		for j := range row {
			row[j] = 0
		}
		for j := max(0, i-lower); j <= min(n-1, i+upper); j++ {
			row[j] = band[i*sw+j-i+lower]
		}
	}
}

// BandFromDense writes the band of the row-major n×n matrix dense into
// band storage dst, with these bandwidths. Entries of the storage outside
// the matrix are set to zero. Entries of dense outside the band are not
// read.
func BandFromDense[T Float](dst []T, n, lower, upper int, dense []T) {
	sw := lower + upper + 1
	dst = dst[:n*sw]
	dense = dense[:n*n]
	for i := 0; i < n; i++ {
		for d := -lower; d <= upper; d++ {
			v := T(0)
			if j := i + d; j >= 0 && j < n {
				v = dense[i*n+j]
			}
			dst[i*sw+d+lower] = v
		}
	}
}

// eps is the machine epsilon of T: 2⁻⁵² for float64, 2⁻²³ for float32.
func eps[T Float]() T {
	if T(1)+T(0x1p-30) == T(1) {
		return T(0x1p-23)
	}
	return T(0x1p-52)
}

// abs is |x| without a branch, which random signs would mispredict.
func abs[T Float](x T) T { return T(math.Abs(float64(x))) }
