//go:build !noasm

package peak

import "github.com/flatkit/flatkit/internal/cpu"

//go:generate sh -c "python3 gen/peak_amd64.py > peak_amd64.s"

// peakFMAAVX512 and peakFMAAVX2 run iters iterations of 16 (12) independent
// VFMADD231PS on ZMM (YMM) registers (peak_amd64.s).

//go:noescape
func peakFMAAVX512(iters int)

//go:noescape
func peakFMAAVX2(iters int)

func peakFMA(l cpu.Level, iters int) int {
	switch l {
	case cpu.AVX512:
		peakFMAAVX512(iters)
		return iters * 16 * 16 * 2
	case cpu.AVX2:
		peakFMAAVX2(iters)
		return iters * 12 * 8 * 2
	}
	return 0
}
