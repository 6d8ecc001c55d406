package flat

import "fmt"

// Gemv computes y = alpha·op(A)·x + beta·y. A is an m×n row-major matrix
// whose rows start lda ≥ max(1, n) elements apart, and op(A) is A, or Aᵀ
// when tA is set. Without the transpose x has n elements and y has m;
// with it, x has m and y has n. Longer x and y slices are allowed and only
// their first elements are used, as in BLAS; shorter ones, an A slice too
// short for m rows of stride lda, negative sizes or lda < n are bugs and panic.
//
// BLAS conventions: beta == 0 overwrites y without reading it, so NaN or Inf
// already in y do not propagate; alpha == 0 scales y by beta and does not
// read A or x. Gemv allocates nothing and starts no goroutine.
//
// On amd64 the products run in AVX-512 or AVX2+FMA assembly (see ISA).
// Without the transpose each y[i] is a dot product, accumulated in several
// vector registers and folded by a horizontal reduction at the end of the
// row. The kernel takes four rows at a time. With AVX-512 and A within the
// L2 cache it takes one row at a time, which streams through A
// sequentially. With the transpose y is a sum
// of scaled rows of A, accumulated into blocks of up to 256 columns of y held
// in registers across all the rows. y is first scaled by beta, then
// alpha·op(A)·x is added with fused multiply-adds.
func Gemv(tA bool, m, n int, alpha float32, a []float32, lda int, x []float32, beta float32, y []float32) {
	if m < 0 || n < 0 {
		panic(fmt.Sprintf("flat: Gemv: negative size m=%d n=%d, want both ≥ 0", m, n))
	}
	if lda < max(1, n) {
		panic(fmt.Sprintf("flat: Gemv: lda %d < max(1, n=%d)", lda, n))
	}
	lx, ly := n, m
	if tA {
		lx, ly = m, n
	}
	if len(x) < lx {
		panic(fmt.Sprintf("flat: Gemv: x has %d elements, want %d", len(x), lx))
	}
	if len(y) < ly {
		panic(fmt.Sprintf("flat: Gemv: y has %d elements, want %d", len(y), ly))
	}
	if m > 0 && n > 0 && len(a) < (m-1)*lda+n {
		panic(fmt.Sprintf("flat: Gemv: A has %d elements, want (m-1)·lda+n = %d for m=%d n=%d lda=%d",
			len(a), (m-1)*lda+n, m, n, lda))
	}
	if ly == 0 {
		return
	}
	y = y[:ly]
	switch beta {
	case 0:
		Fill(y, 0)
	case 1:
	default:
		Scale(beta, y)
	}
	if alpha == 0 || lx == 0 {
		return
	}
	a = a[:(m-1)*lda+n]
	x = x[:lx]
	if tA {
		gemvT(m, n, alpha, a, lda, x, y)
	} else {
		gemvN(m, n, alpha, a, lda, x, y)
	}
}

// gemvN1Max is the largest A, in floats (m·lda), for which the AVX-512
// non-transposed product runs one row at a time: gemvN1AVX512. While A fits
// in L2, one sequential stream through it is faster than four rows at a
// time. Beyond, four rows at a time keep more misses in flight and win
// slightly. With AVX2 the four-row kernel is never slower, so it is used
// throughout. BenchmarkGemv holds the figures.
var gemvN1Max = 1 << 18

// gemvNGo adds alpha·A·x to y (m > 0, n > 0, lengths checked), one row dot
// product at a time.
func gemvNGo(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	x = x[:n]
	y = y[:m]
	for i := range y {
		y[i] += alpha * dotGo(a[i*lda:i*lda+n], x)
	}
}

// gemvTGo adds alpha·Aᵀ·x to y (m > 0, n > 0, lengths checked), one scaled
// row of A at a time.
func gemvTGo(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	x = x[:m]
	y = y[:n]
	for i, xi := range x {
		axpyGo(alpha*xi, a[i*lda:i*lda+n], y)
	}
}
