//go:build noasm || !amd64

package ode

// Without assembly forwardSens.rows2's product is the Go loop alone.
const haveRows2AVX = false

func rows2AVX(dS, S *float64, m int, ju, jp *float64, np int) {
	panic("ode: rows2AVX without assembly")
}
