package flat

import "math"

// Pure-Go vector kernels. They are the kernels of the noasm build and of
// architectures without assembly (vec_noasm.go), and on amd64 the reference
// that the assembly kernels are tested against. They are unrolled by four (two
// for Norm) with independent accumulators, so the loop-carried dependencies
// stay short. Callers have checked lengths; n may be 0.

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

func dotGo(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func sumGo(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// normGo sums the squares in float64: the square of a float32 is exact in
// float64, and no finite float32 square overflows or underflows there.
func normGo(x []float32) float32 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		a, b := float64(x[i]), float64(x[i+1])
		s0 += a * a
		s1 += b * b
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return float32(math.Sqrt(s0 + s1))
}

func scaleGo(alpha float32, x []float32) {
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x[i] *= alpha
		x[i+1] *= alpha
		x[i+2] *= alpha
		x[i+3] *= alpha
	}
	for ; i < len(x); i++ {
		x[i] *= alpha
	}
}

func fillGo(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}
