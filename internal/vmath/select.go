package vmath

// Relu, MaskPositive, Indicator and Mul are elementwise kernels over whole
// slices. They serve a ReLU layer's forward pass, max(x, 0), and its
// derivative rules, which keep the cotangent or tangent where x > 0 in one
// pass. They serve masks in general too. Each is exact: a selection, a
// comparison or one rounded product. So every kernel set agrees bit for
// bit with the scalar definitions below.

// ReluScalar is max(x, 0) with ReLU's conventions: +0 for every x that is
// not greater than 0, −0 and NaN included.
func ReluScalar(x float32) float32 {
	if x > 0 {
		return x
	}
	return 0
}

// IndicatorScalar is 1 if lo < x < hi, else 0, also for a NaN x.
func IndicatorScalar(x, lo, hi float32) float32 {
	if lo < x && x < hi {
		return 1
	}
	return 0
}

// MaskPositiveScalar is c if y > 0, else +0, also for a NaN y. It is
// ReLU's derivative applied to c, as PyTorch's threshold_backward computes
// it. c passes through unchanged, whatever its bits. Where y is not
// positive the result is +0 even for a NaN or infinite c, where a product
// c·[y > 0] would give NaN.
func MaskPositiveScalar(c, y float32) float32 {
	if y > 0 {
		return c
	}
	return 0
}

// Relu sets dst[i] = ReluScalar(src[i]). dst and src may be the same slice
// but must not otherwise overlap. It panics if their lengths differ.
func Relu(dst, src []float32) {
	mustSameLen("Relu", len(dst), len(src))
	relu(dst, src)
}

// Indicator sets dst[i] = IndicatorScalar(src[i], lo, hi). dst and src may
// be the same slice but must not otherwise overlap. It panics if their
// lengths differ.
func Indicator(dst, src []float32, lo, hi float32) {
	mustSameLen("Indicator", len(dst), len(src))
	indicator(dst, src, lo, hi)
}

// MaskPositive sets dst[i] = MaskPositiveScalar(c[i], y[i]). dst may be c
// or y but must not otherwise overlap them. It panics unless the three
// lengths agree.
func MaskPositive(dst, c, y []float32) {
	mustSameLen("MaskPositive", len(dst), len(c))
	mustSameLen("MaskPositive", len(dst), len(y))
	maskPositive(dst, c, y)
}

// Mul sets dst[i] = a[i]·b[i]. dst may be a or b but must not otherwise
// overlap them. It panics unless the three lengths agree.
func Mul(dst, a, b []float32) {
	mustSameLen("Mul", len(dst), len(a))
	mustSameLen("Mul", len(dst), len(b))
	mul(dst, a, b)
}

func reluGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = ReluScalar(v)
	}
}

func indicatorGo(dst, src []float32, lo, hi float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = IndicatorScalar(v, lo, hi)
	}
}

func maskPositiveGo(dst, c, y []float32) {
	dst, y = dst[:len(c)], y[:len(c)]
	for i, v := range c {
		dst[i] = MaskPositiveScalar(v, y[i])
	}
}

func mulGo(dst, a, b []float32) {
	dst, b = dst[:len(a)], b[:len(a)]
	for i, v := range a {
		dst[i] = v * b[i]
	}
}
