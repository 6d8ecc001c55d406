package flat

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/flatkit/flatkit/internal/freelist"
)

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
	// outer sets c[i*ldc+j] = alpha·(x[i*incx]·y[j] + 0) for i < m, j < n
	// (m, n ≥ 1), rounding as fn does for k = 1 and beta = 0, so that an
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

// The pure-Go micro-kernels, available everywhere. With 16 floating-point
// registers (amd64, 386) the compiler spills a 4×4 tile, so those get 2×4;
// the rest have 32 and get 4×4. gemmGo is the one gemmKernels lists.
var (
	gemmGo4x4 = gemmKernel{name: "go4x4", mr: 4, nr: 4, kc: 256, mc: 128, nc: 1024, fn: gemmKernelGo4x4, outer: gemmOuterGo}
	gemmGo2x4 = gemmKernel{name: "go2x4", mr: 2, nr: 4, kc: 256, mc: 128, nc: 1024, fn: gemmKernelGo2x4, outer: gemmOuterGo}
	gemmGo    = pureGoKernel()
)

func pureGoKernel() *gemmKernel {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		return &gemmGo2x4
	}
	return &gemmGo4x4
}

// Parallel split thresholds: products with fewer multiply-adds than
// gemmParallelMin stay on the calling goroutine, and each goroutine gets at
// least gemmPerThreadMin multiply-adds. Waking a parked helper goroutine
// costs tens of microseconds (on a 2-vCPU VM, measured: p50 ≈ 20-100 µs),
// so a split must save more than that: 2^23 multiply-adds take about 80 µs
// on one core at 200 GFLOP/s, so 256³ (2^24) splits in two and 128³ stays
// whole. Tests lower them to exercise large grids on small products.
var (
	gemmParallelMin  = 1 << 23
	gemmPerThreadMin = 1 << 22
)

// gemmMaxThreads is the SetMaxThreads setting; 0 means runtime.GOMAXPROCS(0).
var gemmMaxThreads atomic.Int32

// SetMaxThreads sets the largest number of goroutines Gemm uses for one
// product and returns the previous setting. n ≤ 0 restores the default,
// runtime.GOMAXPROCS(0) read at each call, and is returned as 0, so
//
//	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
//
// runs a section single-threaded and restores whatever was set before.
// Settings above 1024 count as 1024. ParallelFor obeys the same limit.
// Products of fewer than about two million
// multiply-adds always run on the calling goroutine, and each goroutine gets
// at least about a million. The result does not depend on the setting.
func SetMaxThreads(n int) (old int) {
	n = min(max(n, 0), 1024)
	return int(gemmMaxThreads.Swap(int32(n)))
}

// maxThreads is the most goroutines one Gemm or ParallelFor call may use:
// the SetMaxThreads setting, or GOMAXPROCS.
func maxThreads() int {
	if t := int(gemmMaxThreads.Load()); t > 0 {
		return t
	}
	return runtime.GOMAXPROCS(0)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, with
// BLAS semantics: op(A) is A (m×k, a[i*lda+p]) or, if tA, Aᵀ where A is k×m
// (a[p*lda+i]); likewise op(B) is B (k×n) or, if tB, Bᵀ where B is n×k; C is
// m×n with c[i*ldc+j]. beta == 0 overwrites C without reading it, so NaNs
// there are ignored; alpha == 0 or k == 0 skips the product and only scales
// C by beta.
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
	if k == 1 && beta == 0 && gemmOuterProduct(gemmKern, tA, tB, m, n, alpha, a, lda, b, ldb, c, ldc) {
		return
	}
	ker := gemmKern.pick(m, n)
	if threads := gemmThreads(m, n, k); threads > 1 {
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
			ar, ac := m, k
			if tA {
				ar, ac = k, m
			}
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
		br, bc := k, n
		if tB {
			br, bc = n, k
		}
		Gemv(!tB, br, bc, alpha, b, ldb, a[:k], beta, c[:n])
		return true
	}
	return false
}

// gemmOuterProduct computes C = alpha·op(A)·op(B) for k == 1 and beta == 0
// with ker's outer-product loop, when op(B)'s one row is contiguous and the
// product stays on one goroutine, and reports whether it did. Packing would
// cost more than the product, which is one pass of stores over C.
func gemmOuterProduct(ker *gemmKernel, tA, tB bool, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	if tB && ldb != 1 || ker.outer == nil || gemmThreads(m, n, 1) > 1 {
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

// gemmOuterGo is the pure-Go kernels' outer-product loop: each element is
// summed from zero and scaled by alpha, as gemmKernelGo4x4 and
// gemmKernelGo2x4 do at k = 1 (so that a compiler that fuses the
// multiply-add fuses both alike).
func gemmOuterGo(m, n int, alpha float32, x []float32, incx int, y, c []float32, ldc int) {
	y = y[:n]
	for i := 0; i < m; i++ {
		xi := x[i*incx]
		row := c[i*ldc : i*ldc+n]
		for j, v := range y {
			var s float32
			s += xi * v
			row[j] = alpha * s
		}
	}
}

// setScaled sets *c = v + beta·*c, or v if beta == 0.
func setScaled(c *float32, v, beta float32) {
	if beta == 0 {
		*c = v
		return
	}
	*c = v + beta**c
}

// gemmThreads returns how many goroutines a product of this size gets.
func gemmThreads(m, n, k int) int {
	// float64 avoids overflow on 32-bit platforms; the product is exact
	// enough for a threshold.
	work := float64(m) * float64(n) * float64(k)
	if work < float64(gemmParallelMin) {
		return 1
	}
	t := maxThreads()
	if byWork := work / float64(gemmPerThreadMin); byWork < float64(t) {
		t = int(byWork)
	}
	return max(t, 1)
}

func checkGemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		gemmPanic("negative dimension: m = %d, n = %d, k = %d", m, n, k)
	}
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
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

// gemmWorkspace holds one goroutine's packing buffers. They grow to the
// largest blocks seen and are then reused.
type gemmWorkspace struct {
	a, b []float32
	tile [16 * 32]float32 // an mr×nr tile of C at the edges (ldc = nr)
	// pending counts the jobs of this workspace owner's parallel call that
	// are not done. The owner waits by yielding, not with a WaitGroup: a
	// blocked goroutine takes a runtime sudog, and those caches, unbalanced
	// between processors, make the runtime allocate now and then.
	pending atomic.Int32
}

// grow returns buf with length n, reallocating only if its capacity is short.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// The free list of workspaces for calling goroutines: never emptied by the
// garbage collector, so a steady state that never allocates stays that way;
// it holds at most one workspace per goroutine that was ever inside Gemm at
// the same time.
var gemmFree freelist.List[gemmWorkspace]

func getGemmWorkspace() *gemmWorkspace { return gemmFree.Get() }

func putGemmWorkspace(ws *gemmWorkspace) { gemmFree.Put(ws) }

// blockSize splits n into ceil(n/maxBlock) nearly equal blocks, each a
// multiple of unit (except where n ends), and returns the block length.
func blockSize(n, maxBlock, unit int) int {
	nb := (n + maxBlock - 1) / maxBlock
	bs := (n + nb - 1) / nb
	return (bs + unit - 1) / unit * unit
}

// gemmSerial computes C = alpha·op(A)·op(B) + beta·C on the calling
// goroutine with ws's buffers. alpha != 0 and m, n, k ≥ 1.
func gemmSerial(ker *gemmKernel, ws *gemmWorkspace, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	kcMax := blockSize(k, ker.kc, 1)
	mcMax := blockSize(m, ker.mc, mr)
	ncMax := blockSize(n, ker.nc, nr)
	ws.a = grow(ws.a, mcMax*kcMax)
	ws.b = grow(ws.b, ncMax*kcMax)
	for jc := 0; jc < n; jc += ncMax {
		nc := min(ncMax, n-jc)
		for pc := 0; pc < k; pc += kcMax {
			kc := min(kcMax, k-pc)
			packB(ws.b, tB, b, ldb, pc, jc, kc, nc, nr)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < m; ic += mcMax {
				mc := min(mcMax, m-ic)
				packA(ws.a, tA, a, lda, ic, pc, mc, kc, mr)
				gemmMacro(ker, ws, mc, nc, kc, alpha, bet, c[ic*ldc+jc:], ldc)
			}
		}
	}
}

// gemmMacro runs the micro-kernel over an mc×nc block of C from the packed
// panels in ws.
func gemmMacro(ker *gemmKernel, ws *gemmWorkspace, mc, nc, kc int, alpha, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	fn := ker.fn
	pa, pb := ws.a, ws.b
	for jr := 0; jr < nc; jr += nr {
		bp := pb[jr*kc : (jr+nr)*kc]
		w := min(nr, nc-jr)
		for ir := 0; ir < mc; ir += mr {
			ap := pa[ir*kc : (ir+mr)*kc]
			h := min(mr, mc-ir)
			if h == mr && w == nr {
				fn(kc, ap, bp, c[ir*ldc+jr:], ldc, alpha, beta)
				continue
			}
			// An edge tile: run the same kernel on a full tile in ws.tile,
			// so the arithmetic is that of an inner tile, then copy out the
			// part inside C.
			tile := ws.tile[:mr*nr]
			if beta != 0 {
				for i := 0; i < h; i++ {
					copy(tile[i*nr:i*nr+w], c[(ir+i)*ldc+jr:])
				}
			}
			fn(kc, ap, bp, tile, nr, alpha, beta)
			for i := 0; i < h; i++ {
				copy(c[(ir+i)*ldc+jr:(ir+i)*ldc+jr+w], tile[i*nr:])
			}
		}
	}
}

// packA packs op(A)[i0:i0+mc, p0:p0+kc] into dst as mr-row micro-panels:
// panel q holds, for each p, op(A)[i0+q·mr+i, p0+p] at q·mr·kc + p·mr + i.
// Rows past mc are zero.
func packA(dst []float32, tA bool, a []float32, lda, i0, p0, mc, kc, mr int) {
	for q := 0; q*mr < mc; q++ {
		d := dst[q*mr*kc : (q+1)*mr*kc]
		h := min(mr, mc-q*mr)
		r0 := i0 + q*mr
		if tA {
			// op(A)[i, p] = a[p*lda+i]: each p is a contiguous run.
			packRuns(d, mr, a[p0*lda+r0:], lda, h, kc)
		} else {
			// op(A)[i, p] = a[i*lda+p]: each row i is a contiguous run in p.
			packInterleave(d, mr, a[r0*lda+p0:], lda, h, kc)
		}
	}
}

// packB packs op(B)[p0:p0+kc, j0:j0+nc] into dst as nr-column micro-panels:
// panel q holds, for each p, op(B)[p0+p, j0+q·nr+j] at q·nr·kc + p·nr + j.
// Columns past nc are zero.
func packB(dst []float32, tB bool, b []float32, ldb, p0, j0, kc, nc, nr int) {
	for q := 0; q*nr < nc; q++ {
		d := dst[q*nr*kc : (q+1)*nr*kc]
		w := min(nr, nc-q*nr)
		c0 := j0 + q*nr
		if tB {
			// op(B)[p, j] = b[j*ldb+p]: column j of op(B) is row j of B.
			packInterleave(d, nr, b[c0*ldb+p0:], ldb, w, kc)
		} else {
			// op(B)[p, j] = b[p*ldb+j]: each p is a contiguous run.
			packRuns(d, nr, b[p0*ldb+c0:], ldb, w, kc)
		}
	}
}

// packRuns sets d[p*width+j] = src[p*lds+j] for p < kc, j < w, and zero for
// w ≤ j < width: a micro-panel whose kc rows are runs in memory.
func packRuns(d []float32, width int, src []float32, lds, w, kc int) {
	copyRows(d, width, src, lds, w, kc)
}

// packInterleave sets d[p*width+j] = src[j*lds+p] for p < kc, j < w, and
// zero for w ≤ j < width: a micro-panel whose w columns are runs in memory,
// interleaved four at a time.
func packInterleave(d []float32, width int, src []float32, lds, w, kc int) {
	j := 0
	for ; j+4 <= w; j += 4 {
		transpose4(d[j:], width, src[j*lds:], lds, kc)
	}
	for ; j < w; j++ {
		s := src[j*lds:][:kc]
		for p, v := range s {
			d[p*width+j] = v
		}
	}
	if w < width {
		z := gemmZeros[:width-w]
		for p := 0; p < kc; p++ {
			copySmall(d[p*width+w:p*width+width], z)
		}
	}
}

// gemmZeros is a source of zeros for padding micro-panels (copySmall avoids
// a call into memclr for each short run).
var gemmZeros [32]float32

// copyRowsGo sets dst[p*width+j] = src[p*lds+j] for p < n, j < w, and zero
// for w ≤ j < width.
func copyRowsGo(dst []float32, width int, src []float32, lds, w, n int) {
	for p := 0; p < n; p++ {
		d := dst[p*width : p*width+width]
		copySmall(d[:w], src[p*lds:])
		clear(d[w:])
	}
}

// transpose4Go sets dst[p*ldd+r] = src[r*lds+p] for r < 4, p < n.
func transpose4Go(dst []float32, ldd int, src []float32, lds, n int) {
	s0, s1, s2, s3 := src[:n], src[lds:lds+n], src[2*lds:2*lds+n], src[3*lds:3*lds+n]
	for p := range s0 {
		dp := dst[p*ldd : p*ldd+4]
		dp[0], dp[1], dp[2], dp[3] = s0[p], s1[p], s2[p], s3[p]
	}
}

// copySmall copies src into dst (equal lengths, typically 4 to 32) without
// the call into memmove that copy makes.
func copySmall(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], s[3]
	}
	for ; i < len(dst); i++ {
		dst[i] = src[i]
	}
}

// gemmJob is one sub-product of a parallel Gemm: a block of C with the rows
// of op(A) and columns of op(B) it needs.
type gemmJob struct {
	ker         *gemmKernel
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	a           []float32
	lda         int
	b           []float32
	ldb         int
	c           []float32
	ldc         int
	pending     *atomic.Int32 // decremented when the job is done
}

// The worker goroutines, started on demand and never stopped; each owns a
// workspace. Jobs are values in a buffered channel, so handing one out does
// not allocate.
var gemmWorkers struct {
	mu   sync.Mutex
	n    int
	jobs chan gemmJob
}

func gemmWorker(jobs <-chan gemmJob) {
	ws := new(gemmWorkspace)
	for j := range jobs {
		gemmSerial(j.ker, ws, j.tA, j.tB, j.m, j.n, j.k, j.alpha, j.a, j.lda, j.b, j.ldb, j.beta, j.c, j.ldc)
		j.pending.Add(-1)
	}
}

// startGemmWorkers makes sure at least n workers run and returns their
// job channel.
func startGemmWorkers(n int) chan gemmJob {
	w := &gemmWorkers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobs == nil {
		w.jobs = make(chan gemmJob, 256)
	}
	for ; w.n < n; w.n++ {
		go gemmWorker(w.jobs)
	}
	return w.jobs
}

// gemmGrid chooses a tm×tn grid of blocks of C, tm·tn ≤ threads, for mt×nt
// tiles: the one whose largest block costs least, counting the block's
// multiply-adds plus a packing charge proportional to its perimeter.
func gemmGrid(threads, mt, nt, mr, nr int) (tm, tn int) {
	const packCost = 16 // a packed element costs about this many tile elements
	best := -1.0
	for i := 1; i <= min(threads, mt); i++ {
		j := min(threads/i, nt)
		bm := float64((mt + i - 1) / i * mr)
		bn := float64((nt + j - 1) / j * nr)
		cost := bm*bn + packCost*(bm+bn)
		if best < 0 || cost < best {
			best, tm, tn = cost, i, j
		}
	}
	return tm, tn
}

// gemmParallel splits C into a grid of blocks along tile boundaries and
// computes them on threads goroutines, the caller's among them.
func gemmParallel(ker *gemmKernel, threads int, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	mt, nt := (m+mr-1)/mr, (n+nr-1)/nr
	tm, tn := gemmGrid(threads, mt, nt, mr, nr)
	if tm*tn <= 1 {
		ws := getGemmWorkspace()
		gemmSerial(ker, ws, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		putGemmWorkspace(ws)
		return
	}
	jobs := startGemmWorkers(tm*tn - 1)
	ws := getGemmWorkspace()
	ws.pending.Store(int32(tm*tn - 1))
	var mine gemmJob
	for bi := 0; bi < tm; bi++ {
		i0 := bi * mt / tm * mr
		i1 := min((bi+1)*mt/tm*mr, m)
		for bj := 0; bj < tn; bj++ {
			j0 := bj * nt / tn * nr
			j1 := min((bj+1)*nt/tn*nr, n)
			job := gemmJob{ker: ker, tA: tA, tB: tB, m: i1 - i0, n: j1 - j0, k: k,
				alpha: alpha, beta: beta, lda: lda, ldb: ldb, ldc: ldc, pending: &ws.pending}
			if tA {
				job.a = a[i0:]
			} else {
				job.a = a[i0*lda:]
			}
			if tB {
				job.b = b[j0*ldb:]
			} else {
				job.b = b[j0:]
			}
			job.c = c[i0*ldc+j0:]
			if bi == 0 && bj == 0 {
				mine = job
				continue
			}
			jobs <- job
		}
	}
	gemmSerial(ker, ws, mine.tA, mine.tB, mine.m, mine.n, mine.k, mine.alpha, mine.a, mine.lda, mine.b, mine.ldb, mine.beta, mine.c, mine.ldc)
	for ws.pending.Load() != 0 {
		runtime.Gosched() // a worker is finishing its block
	}
	putGemmWorkspace(ws)
}

// gemmKernelGo4x4 is the pure-Go 4×4 micro-kernel.
func gemmKernelGo4x4(k int, a, b, c []float32, ldc int, alpha, beta float32) {
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	a, b = a[:4*k], b[:4*k]
	for p := 0; p < len(a); p += 4 {
		pa := (*[4]float32)(a[p:])
		pb := (*[4]float32)(b[p:])
		b0, b1, b2, b3 := pb[0], pb[1], pb[2], pb[3]
		a0 := pa[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := pa[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := pa[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := pa[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	storeRow4(c[0*ldc:], alpha, beta, c00, c01, c02, c03)
	storeRow4(c[1*ldc:], alpha, beta, c10, c11, c12, c13)
	storeRow4(c[2*ldc:], alpha, beta, c20, c21, c22, c23)
	storeRow4(c[3*ldc:], alpha, beta, c30, c31, c32, c33)
}

// gemmKernelGo2x4 is the pure-Go 2×4 micro-kernel.
func gemmKernelGo2x4(k int, a, b, c []float32, ldc int, alpha, beta float32) {
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	a, b = a[:2*k], b[:4*k]
	for p := 0; p < k; p++ {
		pa := (*[2]float32)(a[2*p:])
		pb := (*[4]float32)(b[4*p:])
		b0, b1, b2, b3 := pb[0], pb[1], pb[2], pb[3]
		a0, a1 := pa[0], pa[1]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
	}
	storeRow4(c[0*ldc:], alpha, beta, c00, c01, c02, c03)
	storeRow4(c[1*ldc:], alpha, beta, c10, c11, c12, c13)
}

// storeRow4 sets c[j] = alpha·v_j + beta·c[j] for j < 4 (c not read when
// beta == 0).
func storeRow4(c []float32, alpha, beta, v0, v1, v2, v3 float32) {
	r := (*[4]float32)(c)
	if beta == 0 {
		r[0], r[1], r[2], r[3] = alpha*v0, alpha*v1, alpha*v2, alpha*v3
		return
	}
	r[0] = alpha*v0 + beta*r[0]
	r[1] = alpha*v1 + beta*r[1]
	r[2] = alpha*v2 + beta*r[2]
	r[3] = alpha*v3 + beta*r[3]
}
