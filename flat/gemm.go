package flat

import "fmt"

// Gemm is a GotoBLAS/BLIS-style matrix product. The loops, outermost first:
//
//	jc: columns of C in blocks of nc      pack op(B)[pc:pc+kc, jc:jc+nc] into nr-column micro-panels (L3)
//	pc: the depth k in blocks of kc       (the first block applies beta, later ones add)
//	ic: rows of C in blocks of mc         pack op(A)[ic:ic+mc, pc:pc+kc] into mr-row micro-panels (L2)
//	jr: one nr-column micro-panel of B    (stays in L1 across the ir loop)
//	ir: one mr-row micro-panel of A       the micro-kernel: an mr×nr tile of C over kc
//
// Packing handles the transposes and pads the last micro-panels with zeros,
// so a micro-kernel knows one layout: packed A holds, for each p < kc, the mr
// values op(A)[i0:i0+mr, p]; packed B holds, for each p, the nr values
// op(B)[p, j0:j0+nr]. Tiles that stick out of C go through a small buffer.
//
// Where the widest kernel's tiles would be mostly padding (n ≤ 16, say) Gemm
// takes its narrow kernel, which sums in the same order and so gives the same
// bits. Products with one row or one column (m == 1 or n == 1) skip packing
// and run as Gemv. Products of depth one (k == 1, an outer product such as
// the weight gradient of a dense layer at batch 1) with beta == 0 skip
// packing too: each row of C is written once from op(B)'s row by the
// kernel's outer-product loop, which does the kernel's arithmetic (a fused
// multiply-add onto zero, then alpha) and so gives the same bits.
//
// Large products are cut into a grid of sub-products along tile boundaries,
// one per goroutine, each with its own packing buffers. Every element of C is
// still summed in the same order (kc blocks in order, each an FMA chain over
// p), so the parallel result is bitwise the serial one.

// gemmKernel is one micro-kernel with its register block and cache blocking.
type gemmKernel struct {
	name   string
	mr, nr int // register block: the kernel computes an mr×nr tile of C
	kc     int // depth of a packed panel pair; a kc×nr micro-panel of B lives in L1
	mc     int // rows of packed A per block (mc×kc in L2), a multiple of mr
	nc     int // columns of packed B per block (kc×nc in L3), a multiple of nr
	// narrow, if set, is a kernel with a smaller tile and half the SIMD
	// width that gives bitwise the same results (same kc, same FMA order);
	// Gemm uses it where this kernel's tiles would be mostly padding.
	narrow *gemmKernel
	// outer sets c[i*ldc+j] = alpha·(x[i*incx]·y[j] + 0) for i < m, j < n,
	// with m, n ≥ 1. It rounds as fn does for k = 1 and beta = 0, so that an
	// outer product may skip packing and give fn's bits.
	outer func(m, n int, alpha float32, x []float32, incx int, y, c []float32, ldc int)
	// fn sets c[i*ldc+j] = alpha·Σ_p a[p*mr+i]·b[p*nr+j] + beta·c[i*ldc+j] for
	// i < mr, j < nr, p < k, where k ≥ 1. beta == 0 means c is written
	// without being read.
	fn func(k int, a, b, c []float32, ldc int, alpha, beta float32)
}

// gemmKern is the kernel Gemm uses: the best one gemmKernels offers on this
// CPU. Tests switch it to compare kernels, and turn gemmNarrow off to keep
// Gemm on the kernel they chose.
var (
	gemmKern   = gemmKernels[0]
	gemmNarrow = true
)

// pick returns the kernel for an m×n product: ker, or its narrow kernel if
// that one would compute fewer padded tile elements per SIMD lane.
func (ker *gemmKernel) pick(m, n int) *gemmKernel {
	nk := ker.narrow
	if nk == nil || !gemmNarrow {
		return ker
	}
	wide := roundUp(m, ker.mr) * roundUp(n, ker.nr)
	narrow := roundUp(m, nk.mr) * roundUp(n, nk.nr)
	if 2*narrow < wide {
		return nk
	}
	return ker
}

func roundUp(n, unit int) int { return (n + unit - 1) / unit * unit }

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, with
// BLAS semantics. op(A) is the m×k matrix A, element a[i*lda+p], or, if tA,
// Aᵀ where A is k×m, element a[p*lda+i]. Likewise op(B) is the k×n matrix
// B, or, if tB, Bᵀ where B is n×k. C is m×n, element c[i*ldc+j]. beta == 0
// overwrites C without reading it, so NaNs there are ignored; alpha == 0 or
// k == 0 skips the product and only scales C by beta.
//
// Gemm panics if a dimension is negative, a leading dimension is smaller
// than its matrix's row width (or 1), or a slice is too short for its
// matrix: those are bugs in the caller, as in gonum's BLAS.
//
// Large products use up to SetMaxThreads goroutines; the result is bitwise
// the same for any number of them, and from run to run. It may differ in the
// last bits between machines: the assembly kernels use fused multiply-adds.
// Gemm does not allocate in steady state.
func Gemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(false, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GemmSerial is Gemm on the calling goroutine alone, whatever the size of
// the product and the SetMaxThreads setting. It is for kernels that split
// their work over goroutines themselves and give each one a product of its
// own. Inside a ParallelFor, a Gemm would split again and queue its blocks
// behind the other goroutine's. The result is bitwise Gemm's.
func GemmSerial(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(true, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func gemm(serial, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(tA, tB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}
	if (m == 1 || n == 1) && gemmVector(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if k == 1 && beta == 0 && gemmOuterProduct(serial, gemmKern, tA, tB, m, n, alpha, a, lda, b, ldb, c, ldc) {
		return
	}
	ker := gemmKern.pick(m, n)
	if threads := gemmThreads(m, n, k); threads > 1 && !serial {
		gemmParallel(ker, threads, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	ws := getGemmWorkspace()
	gemmSerial(ker, ws, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	putGemmWorkspace(ws)
}

// gemmVector hands products with one row or one column of C (m == 1 or
// n == 1) to Gemv when the vector operand and C's row or column are
// contiguous, and reports whether it did. Packing would only add a pass over
// memory to these matrix-vector products.
func gemmVector(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	switch {
	case n == 1 && (tB || ldb == 1):
		// C's column = alpha·op(A)·x + beta·C's column, x = op(B)'s column.
		x := b[:k]
		if ldc == 1 || m == 1 {
			ar, ac := stored(tA, m, k)
			Gemv(tA, ar, ac, alpha, a, lda, x, beta, c[:m])
			return true
		}
		if !tA {
			// A strided column of C: one dot product per row of A.
			for i := 0; i < m; i++ {
				setScaled(&c[i*ldc], alpha*Dot(a[i*lda:i*lda+k], x), beta)
			}
			return true
		}
	case m == 1 && (!tA || lda == 1):
		// C's row = alpha·op(B)ᵀ·x + beta·C's row, x = op(A)'s row.
		br, bc := stored(tB, k, n)
		Gemv(!tB, br, bc, alpha, b, ldb, a[:k], beta, c[:n])
		return true
	}
	return false
}

// gemmOuterProduct computes C = alpha·op(A)·op(B) for k == 1 and beta == 0
// with ker's outer-product loop, when op(B)'s one row is contiguous and the
// product stays on one goroutine (serial, or too small to split), and
// reports whether it did. Packing would
// cost more than the product, which is one pass of stores over C.
func gemmOuterProduct(serial bool, ker *gemmKernel, tA, tB bool, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	if tB && ldb != 1 || ker.outer == nil || !serial && gemmThreads(m, n, 1) > 1 {
		return false
	}
	// op(A) is m×1: A itself (m×1, element i at a[i*lda]) or Aᵀ of a 1×m A.
	incx := lda
	if tA {
		incx = 1
	}
	ker.outer(m, n, alpha, a[:(m-1)*incx+1], incx, b[:n], c[:(m-1)*ldc+n], ldc)
	return true
}

// setScaled sets *c = v + beta·*c, or v if beta == 0.
func setScaled(c *float32, v, beta float32) {
	if beta == 0 {
		*c = v
		return
	}
	*c = v + beta**c
}

// stored returns the rows and columns of a GEMM operand as it is stored:
// r×c as op(X) is, or c×r when t says op(X) = Xᵀ.
func stored(t bool, r, c int) (rows, cols int) {
	if t {
		return c, r
	}
	return r, c
}

func checkGemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		gemmPanic("negative dimension: m = %d, n = %d, k = %d, want each ≥ 0", m, n, k)
	}
	ar, ac := stored(tA, m, k)
	br, bc := stored(tB, k, n)
	if lda < max(1, ac) {
		gemmPanic("lda = %d, want ≥ %d for a %d×%d matrix A (tA = %t)", lda, max(1, ac), ar, ac, tA)
	}
	if ldb < max(1, bc) {
		gemmPanic("ldb = %d, want ≥ %d for a %d×%d matrix B (tB = %t)", ldb, max(1, bc), br, bc, tB)
	}
	if ldc < max(1, n) {
		gemmPanic("ldc = %d, want ≥ %d for a %d×%d matrix C", ldc, max(1, n), m, n)
	}
	if m == 0 || n == 0 {
		return
	}
	if ar > 0 && ac > 0 && len(a) < (ar-1)*lda+ac {
		gemmPanic("len(a) = %d, want ≥ %d for a %d×%d matrix A with lda = %d (tA = %t)", len(a), (ar-1)*lda+ac, ar, ac, lda, tA)
	}
	if br > 0 && bc > 0 && len(b) < (br-1)*ldb+bc {
		gemmPanic("len(b) = %d, want ≥ %d for a %d×%d matrix B with ldb = %d (tB = %t)", len(b), (br-1)*ldb+bc, br, bc, ldb, tB)
	}
	if len(c) < (m-1)*ldc+n {
		gemmPanic("len(c) = %d, want ≥ %d for a %d×%d matrix C with ldc = %d", len(c), (m-1)*ldc+n, m, n, ldc)
	}
}

func gemmPanic(format string, args ...any) {
	panic("flat: Gemm: " + fmt.Sprintf(format, args...))
}

// scaleMatrix sets C = beta·C, or C = 0 if beta == 0 (ignoring NaNs in C).
func scaleMatrix(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
