//go:build noasm || !amd64

package vmath

// Without assembly every kernel is the pure-Go one.

func tanh(dst, src []float32)    { tanhGo(dst, src) }
func sigmoid(dst, src []float32) { sigmoidGo(dst, src) }
