package vmath

// MaxPoolRows max-pools n windows laid out along rows. Window j covers the
// cells x[r*ld + col0 + s*j + t] for rows r < rows and taps t < k. Its
// winner is the first NaN in row-major order over r and t, if there is
// one. Otherwise it is the first largest value: −0 and +0 tie, and the
// first wins. MaxPoolRows sets out[j] to the winner and arg[j] to base
// plus the winner's index in x. This is ad's MaxPool rule on the windows
// of a 2-D pool that lie wholly inside the plane.
//
// It reports whether it ran: only the AVX-512 kernel exists, for s = 1 or
// 2, rows, k and n ≥ 1 and indices below 2³¹; otherwise it does nothing
// and the caller runs its own loop. It panics if a slice is too short.
func MaxPoolRows(x []float32, ld, rows, k, s, col0, n int, out []float32, arg []int, base int) bool {
	if n <= 0 || rows <= 0 || k <= 0 || col0 < 0 || ld < 0 || (s != 1 && s != 2) {
		return false
	}
	last := (rows-1)*ld + col0 + s*(n-1) + k - 1
	if last >= 1<<31-64 {
		return false
	}
	_, _, _ = x[last], out[n-1], arg[n-1]
	return maxPoolRows(x, ld, rows, k, s, col0, n, out, arg, base)
}
