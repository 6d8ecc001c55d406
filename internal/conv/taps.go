package conv

import "github.com/flatkit/flatkit/flat"

// The tap kernels of the wide direct path (see wideGeom). Both take a list
// of plane offsets, one per (input channel, kernel tap), so that one call
// covers every tap of an output channel:
//
//   - accTaps(acc, src, offs, ws): acc[j] += Σ_t ws[t]·src[offs[t]+j] for
//     j < len(acc). With AVX-512 it keeps 64 values of acc in registers
//     while it runs through the taps, so acc is read and written once
//     instead of once per tap, and there is one call per output channel
//     instead of one axpy per tap.
//   - dotTaps(out, a, b, offs): out[t] += Σ_j a[j]·b[offs[t]+j] for
//     j < len(a): eight taps at a time share each load of a.
//
// Every offs[t] + len(acc) (or len(a)) must be at most len(src) (len(b)).
// Without AVX-512 (or with the noasm tag) they fall back to flat's Axpy
// and Dot, one call per tap; the assembly uses fused multiply-adds, so the
// two agree to rounding, as flat's kernels do.

// accTaps adds Σ_t ws[t]·src[offs[t]:][:len(acc)] to acc.
func accTaps(acc, src []float32, offs []int, ws []float32) {
	ws = ws[:len(offs)]
	if len(acc) == 0 || len(offs) == 0 {
		return
	}
	for _, o := range offs {
		if o < 0 || o+len(acc) > len(src) {
			panic("conv: accTaps: offset out of range")
		}
	}
	if haveAVX512 {
		accTapsAVX512(acc, src, offs, ws)
		return
	}
	accTapsGo(acc, src, offs, ws)
}

// dotTaps adds Σ_j a[j]·b[offs[t]+j] to out[t] for every t.
func dotTaps(out, a, b []float32, offs []int) {
	out = out[:len(offs)]
	if len(a) == 0 {
		return
	}
	for _, o := range offs {
		if o < 0 || o+len(a) > len(b) {
			panic("conv: dotTaps: offset out of range")
		}
	}
	if !haveAVX512 {
		dotTapsGo(out, a, b, offs)
		return
	}
	var o8 [8]int
	var s8 [8]float32
	for t := 0; t < len(offs); t += 8 {
		n := copy(o8[:], offs[t:])
		for i := n; i < 8; i++ {
			o8[i] = o8[0] // padding: computed and dropped
		}
		dot8AVX512(&s8, a, b, &o8)
		for i := 0; i < n; i++ {
			out[t+i] += s8[i]
		}
	}
}

func accTapsGo(acc, src []float32, offs []int, ws []float32) {
	for t, o := range offs {
		axpy(ws[t], src[o:o+len(acc)], acc)
	}
}

func dotTapsGo(out, a, b []float32, offs []int) {
	for t, o := range offs {
		out[t] += dotGo(a, b[o:o+len(a)])
	}
}

// dotGo is flat.Dot for long rows and a Go loop for short ones.
func dotGo(x, y []float32) float32 {
	if len(x) >= vecMin {
		return flat.Dot(x, y[:len(x)])
	}
	var s float32
	for j, v := range x {
		s += v * y[j]
	}
	return s
}
