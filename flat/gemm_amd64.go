//go:build amd64 && !noasm

package flat

//go:generate sh -c "python3 gen/gemm_amd64.py > gemm_amd64.s"
//go:generate sh -c "python3 gen/gemm_outer_amd64.py > gemm_outer_amd64.s"

import "github.com/flatkit/flatkit/internal/cpu"

// The assembly micro-kernels (gemm_amd64.s). Each computes one mr×nr tile
// of C from packed panels. The blocking keeps a kc×nr micro-panel of B in
// the L1 cache, the mc×kc block of A in L2 and the kc×nc block of B in L3.
var (
	gemmAVX512 = gemmKernel{name: "avx512-12x32", mr: 12, nr: 32, kc: 256, mc: 240, nc: 2048, fn: gemm12x32, outer: gemmOuter512, narrow: &gemmAVX2}
	gemmAVX2   = gemmKernel{name: "avx2-6x16", mr: 6, nr: 16, kc: 256, mc: 144, nc: 2048, fn: gemm6x16, outer: gemmOuter256}
)

// gemmKernels lists the micro-kernels this CPU runs, best first.
var gemmKernels = amd64GemmKernels()

func amd64GemmKernels() []*gemmKernel {
	var ks []*gemmKernel
	if cpu.Best >= cpu.AVX512 {
		ks = append(ks, &gemmAVX512)
	}
	if cpu.Best >= cpu.AVX2 {
		ks = append(ks, &gemmAVX2)
	}
	return append(ks, gemmGo)
}

//go:noescape
func gemmKernelAVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func gemmKernelAVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func gemmOuterAVX512(m, n int, alpha float32, x *float32, incx int, y, c *float32, ldc int)

//go:noescape
func gemmOuterAVX2(m, n int, alpha float32, x *float32, incx int, y, c *float32, ldc int)

// gemmOuter512 and gemmOuter256 are the AVX-512 and AVX2 kernels'
// outer-product loops (gemm_outer_amd64.s): per element, a fused
// multiply-add onto zero and then alpha, as the micro-kernels compute at
// k = 1 and beta = 0. They check the bounds the assembly relies on.
func gemmOuter512(m, n int, alpha float32, x []float32, incx int, y, c []float32, ldc int) {
	_, _, _ = x[(m-1)*incx], y[n-1], c[(m-1)*ldc+n-1]
	gemmOuterAVX512(m, n, alpha, &x[0], incx, &y[0], &c[0], ldc)
}

func gemmOuter256(m, n int, alpha float32, x []float32, incx int, y, c []float32, ldc int) {
	_, _, _ = x[(m-1)*incx], y[n-1], c[(m-1)*ldc+n-1]
	gemmOuterAVX2(m, n, alpha, &x[0], incx, &y[0], &c[0], ldc)
}

// gemm12x32 checks that the panels and the tile are in bounds, then runs the
// AVX-512 kernel.
func gemm12x32(k int, a, b, c []float32, ldc int, alpha, beta float32) {
	_, _, _ = a[12*k-1], b[32*k-1], c[11*ldc+31]
	gemmKernelAVX512(k, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

// gemm6x16 checks that the panels and the tile are in bounds, then runs the
// AVX2 kernel.
func gemm6x16(k int, a, b, c []float32, ldc int, alpha, beta float32) {
	_, _, _ = a[6*k-1], b[16*k-1], c[5*ldc+15]
	gemmKernelAVX2(k, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

// gemmAsmPack selects the AVX packing routines (gemm_amd64.s), which the
// asm kernels and the pure-Go one all use; TestGemmPackHelpers compares them
// with the Go versions.
var gemmAsmPack = cpu.HasAVX

//go:noescape
func gemmCopyRows(dst *float32, width int, src *float32, lds, w, n int)

//go:noescape
func gemmTranspose4(dst *float32, ldd int, src *float32, lds, n int)

// copyRows sets dst[p*width+j] = src[p*lds+j] for p < n, j < w, and zero
// for w ≤ j < width.
func copyRows(dst []float32, width int, src []float32, lds, w, n int) {
	if !gemmAsmPack || n == 0 || w == 0 || w > width {
		copyRowsGo(dst, width, src, lds, w, n)
		return
	}
	_, _ = dst[n*width-1], src[(n-1)*lds+w-1]
	gemmCopyRows(&dst[0], width, &src[0], lds, w, n)
}

// transpose4 sets dst[p*ldd+r] = src[r*lds+p] for r < 4, p < n.
func transpose4(dst []float32, ldd int, src []float32, lds, n int) {
	if !gemmAsmPack || n == 0 {
		transpose4Go(dst, ldd, src, lds, n)
		return
	}
	_, _ = dst[(n-1)*ldd+3], src[3*lds+n-1]
	gemmTranspose4(&dst[0], ldd, &src[0], lds, n)
}
