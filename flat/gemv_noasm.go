//go:build noasm || !amd64

package flat

func gemvN(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	gemvNGo(m, n, alpha, a, lda, x, y)
}

func gemvT(m, n int, alpha float32, a []float32, lda int, x, y []float32) {
	gemvTGo(m, n, alpha, a, lda, x, y)
}
