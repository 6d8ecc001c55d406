//go:build !noasm

package flat

//go:generate sh -c "python3 gen/vec_amd64.py > vec_amd64.s"

// Assembly kernels (vec_amd64.s). Lengths are checked by the callers: the
// kernels read len(x) elements from every slice argument, and n may be 0.

//go:noescape
func axpyAVX512(alpha float32, x, y []float32)

//go:noescape
func axpyAVX2(alpha float32, x, y []float32)

//go:noescape
func dotAVX512(x, y []float32) float32

//go:noescape
func dotAVX2(x, y []float32) float32

//go:noescape
func sumAVX512(x []float32) float32

//go:noescape
func sumAVX2(x []float32) float32

//go:noescape
func normAVX512(x []float32) float32

//go:noescape
func normAVX2(x []float32) float32

//go:noescape
func scaleAVX512(alpha float32, x []float32)

//go:noescape
func scaleAVX2(alpha float32, x []float32)

//go:noescape
func fillAVX512(x []float32, v float32)

//go:noescape
func fillAVX2(x []float32, v float32)

func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	switch vecISA {
	case isaAVX512:
		axpyAVX512(alpha, x, y)
	case isaAVX2:
		axpyAVX2(alpha, x, y)
	default:
		axpyGo(alpha, x, y)
	}
}

func dot(x, y []float32) float32 {
	y = y[:len(x)]
	switch vecISA {
	case isaAVX512:
		return dotAVX512(x, y)
	case isaAVX2:
		return dotAVX2(x, y)
	}
	return dotGo(x, y)
}

func sum(x []float32) float32 {
	switch vecISA {
	case isaAVX512:
		return sumAVX512(x)
	case isaAVX2:
		return sumAVX2(x)
	}
	return sumGo(x)
}

func norm(x []float32) float32 {
	switch vecISA {
	case isaAVX512:
		return normAVX512(x)
	case isaAVX2:
		return normAVX2(x)
	}
	return normGo(x)
}

func scale(alpha float32, x []float32) {
	switch vecISA {
	case isaAVX512:
		scaleAVX512(alpha, x)
	case isaAVX2:
		scaleAVX2(alpha, x)
	default:
		scaleGo(alpha, x)
	}
}

func fill(x []float32, v float32) {
	switch vecISA {
	case isaAVX512:
		fillAVX512(x, v)
	case isaAVX2:
		fillAVX2(x, v)
	default:
		fillGo(x, v)
	}
}
