package linalg

// The vector kernels of GMRES. Sums accumulate in float64 whatever T is,
// so that float32 Krylov vectors keep their orthogonality as far as their
// own rounding allows. The loops that sum keep two partial sums, which
// halves the chain of dependent additions.

// dot returns x·y.
func dot[T Float](x, y []T) float64 {
	y = y[:len(x)]
	var s0, s1 float64
	n := len(x) &^ 1
	for i := 0; i < n; i += 2 {
		x2 := x[i : i+2 : i+2]
		y2 := y[i : i+2 : i+2]
		s0 += float64(x2[0]) * float64(y2[0])
		s1 += float64(x2[1]) * float64(y2[1])
	}
	if i := n; i < len(x) {
		s0 += float64(x[i]) * float64(y[i])
	}
	return s0 + s1
}

// normDot returns x·x and x·y.
func normDot[T Float](x, y []T) (xx, xy float64) {
	y = y[:len(x)]
	var a0, a1, b0, b1 float64
	n := len(x) &^ 1
	for i := 0; i < n; i += 2 {
		x2 := x[i : i+2 : i+2]
		y2 := y[i : i+2 : i+2]
		x0, x1 := float64(x2[0]), float64(x2[1])
		a0 += x0 * x0
		a1 += x1 * x1
		b0 += x0 * float64(y2[0])
		b1 += x1 * float64(y2[1])
	}
	if i := n; i < len(x) {
		x0 := float64(x[i])
		a0 += x0 * x0
		b0 += x0 * float64(y[i])
	}
	return a0 + a1, b0 + b1
}

// scaleNormDot writes dst = w∘src and returns dst·dst and dst·y. dst may
// be src.
func scaleNormDot[T Float](dst, w, src, y []T) (dd, dy float64) {
	w = w[:len(dst)]
	src = src[:len(dst)]
	y = y[:len(dst)]
	var a0, a1, b0, b1 float64
	n := len(dst) &^ 1
	for i := 0; i < n; i += 2 {
		dst2 := dst[i : i+2 : i+2]
		src2 := src[i : i+2 : i+2]
		w2 := w[i : i+2 : i+2]
		y2 := y[i : i+2 : i+2]
		d0, d1 := w2[0]*src2[0], w2[1]*src2[1]
		dst2[0], dst2[1] = d0, d1
		a0 += float64(d0) * float64(d0)
		a1 += float64(d1) * float64(d1)
		b0 += float64(d0) * float64(y2[0])
		b1 += float64(d1) * float64(y2[1])
	}
	if i := n; i < len(dst) {
		d0 := w[i] * src[i]
		dst[i] = d0
		a0 += float64(d0) * float64(d0)
		b0 += float64(d0) * float64(y[i])
	}
	return a0 + a1, b0 + b1
}

// scaleNormInv writes dst = w∘src and inv = 1/w, and returns dst·dst.
func scaleNormInv[T Float](dst, w, src, inv []T) float64 {
	w = w[:len(dst)]
	src = src[:len(dst)]
	inv = inv[:len(dst)]
	var s float64
	for i, wi := range w {
		d := wi * src[i]
		dst[i] = d
		inv[i] = 1 / wi
		s += float64(d) * float64(d)
	}
	return s
}

// scaleTo writes dst = a·src. dst may be src.
func scaleTo[T Float](dst, src []T, a float64) {
	src = src[:len(dst)]
	aT := T(a)
	for i, v := range src {
		dst[i] = aT * v
	}
}

// mulTo writes dst = x∘y. dst may be x or y.
func mulTo[T Float](dst, x, y []T) {
	x = x[:len(dst)]
	y = y[:len(dst)]
	for i := range dst {
		dst[i] = x[i] * y[i]
	}
}

// axpy adds a·x to y.
func axpy[T Float](y []T, a T, x []T) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * v
	}
}

// axpyDot adds a·x to y and returns the new y·z: one step of modified
// Gram–Schmidt and the projection of the next.
func axpyDot[T Float](y []T, a T, x, z []T) float64 {
	x = x[:len(y)]
	z = z[:len(y)]
	var s0, s1 float64
	n := len(y) &^ 1
	for i := 0; i < n; i += 2 {
		x2 := x[i : i+2 : i+2]
		y2 := y[i : i+2 : i+2]
		z2 := z[i : i+2 : i+2]
		y0, y1 := y2[0]+a*x2[0], y2[1]+a*x2[1]
		y2[0], y2[1] = y0, y1
		s0 += float64(y0) * float64(z2[0])
		s1 += float64(y1) * float64(z2[1])
	}
	if i := n; i < len(y) {
		y0 := y[i] + a*x[i]
		y[i] = y0
		s0 += float64(y0) * float64(z[i])
	}
	return s0 + s1
}

// axpyNorm adds a·x to y and returns the new y·y.
func axpyNorm[T Float](y []T, a T, x []T) float64 {
	x = x[:len(y)]
	var s0, s1 float64
	n := len(y) &^ 1
	for i := 0; i < n; i += 2 {
		x2 := x[i : i+2 : i+2]
		y2 := y[i : i+2 : i+2]
		y0, y1 := y2[0]+a*x2[0], y2[1]+a*x2[1]
		y2[0], y2[1] = y0, y1
		s0 += float64(y0) * float64(y0)
		s1 += float64(y1) * float64(y1)
	}
	if i := n; i < len(y) {
		y0 := y[i] + a*x[i]
		y[i] = y0
		s0 += float64(y0) * float64(y0)
	}
	return s0 + s1
}

// combine writes dst = Σᵢ c[i]·vs[i]. dst may be one of vs.
func combine[T Float](dst []T, c []float64, vs [][]T) {
	for j := range dst {
		var s float64
		for i, v := range vs {
			s += c[i] * float64(v[j])
		}
		dst[j] = T(s)
	}
}
