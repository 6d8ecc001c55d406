//go:build noasm || !amd64

package ode

// Without assembly erk.combine is the Go loop alone.
const haveCombineAVX = false

func combineAVX(dst, u *float64, n int, h float64, k *float64, off *int, val *float64, nz int) {
	panic("ode: combineAVX without assembly")
}
