package flat

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
)

// TestGemmOuterBitwise checks that a product of depth one (k = 1, beta = 0),
// which Gemm runs through the kernel's outer-product loop, gives bitwise
// what the kernel computes from packed panels, for every kernel: with both
// transposes, padded leading dimensions, several alphas, and operands
// holding ±0, NaN, ±Inf and values whose products underflow (so the sign
// of a zero product shows whether the loop rounds like the kernel).
func TestGemmOuterBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-30, -1e-30, 3e38}
	shapes := [][2]int{{2, 2}, {3, 17}, {256, 256}, {7, 64}, {5, 65}, {40, 15}, {13, 200}, {2, 31}, {33, 1000}, {3, 512}, {4, 257}, {2, 271}}
	for _, ker := range allKernels() {
		if ker.outer == nil {
			t.Errorf("%s has no outer-product loop", ker.name)
			continue
		}
		for _, s := range shapes {
			for _, tr := range [4][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for _, extra := range []int{0, 3} {
					for _, alpha := range []float32{1, -0.5, 3e-20} {
						g := newGemmCase(r, tr[0], tr[1], s[0], s[1], 1, extra, alpha, 0, true)
						if tr[1] && extra != 0 {
							g.ldb = 1 // a column of B with stride 1: the only contiguous tB layout
						}
						for _, x := range [][]float32{g.a, g.b} {
							for q := 0; q < len(x)/4; q++ {
								if i := r.IntN(len(x)); x[i] != gemmPad {
									x[i] = special[r.IntN(len(special))]
								}
							}
						}
						var got []float32
						withKernel(ker, func() { got = g.run() })
						want := append([]float32(nil), g.c...)
						ws := getGemmWorkspace()
						gemmSerial(ker, ws, g.tA, g.tB, g.m, g.n, 1, g.alpha, g.a, g.lda, g.b, g.ldb, 0, want, g.ldc)
						putGemmWorkspace(ws)
						if !bitwise.Equal(got, want) {
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Errorf("%s %v: element %d is %g (%#x), the packed kernel gives %g (%#x)",
										ker.name, g, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
									break
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmOuterTakesLoop checks that the outer-product path is the one a
// depth-one product takes (it writes C without packing) and that a strided
// column of B (tB with ldb > 1) still gets the right answer by packing.
func TestGemmOuterTakesLoop(t *testing.T) {
	x, y := []float32{1, 2, 3}, []float32{4, 5}
	c := make([]float32, 6)
	if !gemmOuterProduct(false, gemmKern, false, false, 3, 2, 1, x, 1, y, 2, c, 2) {
		t.Fatal("gemmOuterProduct declined a contiguous outer product")
	}
	if want := []float32{4, 5, 8, 10, 12, 15}; !bitwise.Equal(c, want) {
		t.Fatalf("outer product %v, want %v", c, want)
	}
	bs := []float32{4, -1, 5, -1} // a 2×1 B with ldb = 2, used as Bᵀ
	if gemmOuterProduct(false, gemmKern, false, true, 3, 2, 1, x, 1, bs, 2, c, 2) {
		t.Fatal("gemmOuterProduct took a strided row of op(B)")
	}
	clear(c)
	Gemm(false, true, 3, 2, 1, 1, x, 1, bs, 2, 0, c, 2)
	if want := []float32{4, 5, 8, 10, 12, 15}; !bitwise.Equal(c, want) {
		t.Fatalf("strided outer product %v, want %v", c, want)
	}
}
