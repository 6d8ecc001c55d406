//go:build !noasm

package conv

//go:generate sh -c "python3 gen/taps_amd64.py > taps_amd64.s"

import "github.com/flatkit/flatkit/internal/cpu"

// haveAVX512 selects the assembly tap kernels (taps_amd64.s).
var haveAVX512 = cpu.Best >= cpu.AVX512

// accTapsAVX512 is accTaps for len(acc) ≥ 1 and len(offs) ≥ 1, with the
// offsets checked.
//
//go:noescape
func accTapsAVX512(acc, src []float32, offs []int, ws []float32)

// dot8AVX512 sets s[i] = Σ_j a[j]·b[offs[i]+j] for i < 8, len(a) ≥ 1, with
// the offsets checked.
//
//go:noescape
func dot8AVX512(s *[8]float32, a, b []float32, offs *[8]int)
