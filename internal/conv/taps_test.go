package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/internal/relerr"
)

// TestTapKernels checks accTaps and dotTaps (assembly where the machine
// has it) and their Go fallbacks against float64 sums, for lengths that
// exercise every chunk and tail size and for 1 to 30 taps.
func TestTapKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 15, 16, 17, 31, 63, 64, 65, 80, 127, 128, 129, 300} {
		for _, taps := range []int{1, 2, 7, 8, 9, 16, 27, 30} {
			src := make([]float32, n+40)
			for i := range src {
				src[i] = float32(rng.IntN(33)-16) / 8
			}
			offs := make([]int, taps)
			ws := make([]float32, taps)
			for i := range offs {
				offs[i] = rng.IntN(41)
				ws[i] = float32(rng.IntN(17)-8) / 4
			}
			a := make([]float32, n)
			for i := range a {
				a[i] = float32(rng.IntN(17)-8) / 4
			}
			// accTaps: exact on these dyadic values.
			want := make([]float64, n)
			for j := range want {
				want[j] = float64(a[j])
				for k, o := range offs {
					want[j] += float64(ws[k]) * float64(src[o+j])
				}
			}
			for name, f := range map[string]func(acc, src []float32, offs []int, ws []float32){"accTaps": accTaps, "accTapsGo": accTapsGo} {
				acc := append([]float32(nil), a...)
				f(acc, src, offs, ws)
				for j := range acc {
					if float64(acc[j]) != want[j] {
						t.Fatalf("%s n=%d taps=%d: acc[%d] = %v, want %v", name, n, taps, j, acc[j], want[j])
					}
				}
			}
			wantDot := make([]float64, taps)
			for k, o := range offs {
				wantDot[k] = 1
				for j := range a {
					wantDot[k] += float64(a[j]) * float64(src[o+j])
				}
			}
			for name, f := range map[string]func(out, a, b []float32, offs []int){"dotTaps": dotTaps, "dotTapsGo": dotTapsGo} {
				out := make([]float32, taps)
				for i := range out {
					out[i] = 1
				}
				f(out, a, src, offs)
				if err := relerr.Check(fmt.Sprintf("%s n=%d taps=%d: out", name, n, taps), out, wantDot, 1e-6); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestTapKernelsCheckOffsets checks that an offset past the source panics
// rather than reading out of bounds.
func TestTapKernelsCheckOffsets(t *testing.T) {
	for name, f := range map[string]func(){
		"accTaps": func() { accTaps(make([]float32, 8), make([]float32, 10), []int{3}, []float32{1}) },
		"dotTaps": func() { dotTaps(make([]float32, 1), make([]float32, 8), make([]float32, 10), []int{3}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for an offset past the source", name)
				}
			}()
			f()
		}()
	}
}
