package flat

// The pure-Go micro-kernels and outer-product loop, available on every
// platform and under -tags noasm.

import "runtime"

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
