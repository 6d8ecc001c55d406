//go:build !noasm

package vmath

//go:generate sh -c "python3 gen/pool_amd64.py > pool_amd64.s"

import "github.com/flatkit/flatkit/internal/cpu"

//go:noescape
func maxPoolRowsAVX512(x *float32, ld, rows, k, s, col0, n int, out *float32, arg *int, base int)

func maxPoolRows(x []float32, ld, rows, k, s, col0, n int, out []float32, arg []int, base int) bool {
	if isa < cpu.AVX512 {
		return false
	}
	maxPoolRowsAVX512(&x[0], ld, rows, k, s, col0, n, &out[0], &arg[0], base)
	return true
}
