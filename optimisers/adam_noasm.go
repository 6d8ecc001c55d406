//go:build noasm || !amd64

package optimisers

const simdNone = 0

// simd is always simdNone without assembly.
var simd = simdNone

// adamFuseSIMD handles nothing: the Go loop does all of it.
func adamFuseSIMD(k *adam, θ, g, m, v []float32) int { return 0 }
