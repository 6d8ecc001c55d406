//go:build noasm || !amd64

package vmath

func relu(dst, src []float32)                      { reluGo(dst, src) }
func indicator(dst, src []float32, lo, hi float32) { indicatorGo(dst, src, lo, hi) }
func maskPositive(dst, c, y []float32)             { maskPositiveGo(dst, c, y) }
func mul(dst, a, b []float32)                      { mulGo(dst, a, b) }
