//go:build noasm || !amd64

package flat

// gemmKernels lists the micro-kernels this build offers, best first: here
// only the pure-Go one.
var gemmKernels = []*gemmKernel{gemmGo}

func copyRows(dst []float32, width int, src []float32, lds, w, n int) {
	copyRowsGo(dst, width, src, lds, w, n)
}

func transpose4(dst []float32, ldd int, src []float32, lds, n int) {
	transpose4Go(dst, ldd, src, lds, n)
}
