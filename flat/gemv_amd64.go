//go:build !noasm

package flat

//go:generate sh -c "python3 gen/gemv_amd64.py > gemv_amd64.s"

// Assembly GEMV kernels (gemv_amd64.s). They add alpha·op(A)·x to y for
// m, n > 0; Gemv has checked every length, so the kernels take pointers.
// gemvN*: y[i] += alpha·Σ_j a[i·lda+j]·x[j], i < m, j < n.
// gemvT*: y[j] += alpha·Σ_i a[i·lda+j]·x[i].

//go:noescape
func gemvNAVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)

//go:noescape
func gemvNAVX2(m, n int, alpha float32, a *float32, lda int, x, y *float32)

//go:noescape
func gemvN1AVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)

//go:noescape
func gemvTAVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)

//go:noescape
func gemvTAVX2(m, n int, alpha float32, a *float32, lda int, x, y *float32)

func gemvN(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	switch vecISA {
	case isaAVX512:
		if m*lda <= gemvN1Max {
			gemvN1AVX512(m, n, alpha, &a[0], lda, &x[0], &y[0])
		} else {
			gemvNAVX512(m, n, alpha, &a[0], lda, &x[0], &y[0])
		}
	case isaAVX2:
		gemvNAVX2(m, n, alpha, &a[0], lda, &x[0], &y[0])
	default:
		gemvNGo(m, n, alpha, a, lda, x, y)
	}
}

func gemvT(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	switch vecISA {
	case isaAVX512:
		gemvTAVX512(m, n, alpha, &a[0], lda, &x[0], &y[0])
	case isaAVX2:
		gemvTAVX2(m, n, alpha, &a[0], lda, &x[0], &y[0])
	default:
		gemvTGo(m, n, alpha, a, lda, x, y)
	}
}
