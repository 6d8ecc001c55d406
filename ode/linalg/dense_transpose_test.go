package linalg_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// TestLUSolveTranspose: for random matrices, which pivot, the solution
// of LUSolveTranspose satisfies Aᵀx = b to rounding, and BlockLU's
// SolveTranspose, block by block, too.
func TestLUSolveTranspose(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 9; n++ {
		for range 5 {
			a := make([]float64, n*n)
			for i := range a {
				a[i] = r.NormFloat64()
			}
			lu := append([]float64(nil), a...)
			piv := make([]int, n)
			if linalg.LUFactor(lu, n, piv, nil) >= 0 {
				continue
			}
			b := make([]float64, n)
			for i := range b {
				b[i] = r.NormFloat64()
			}
			x := append([]float64(nil), b...)
			linalg.LUSolveTranspose(lu, n, piv, x)
			for j := 0; j < n; j++ { // (Aᵀx)_j = Σ_i a_ij x_i
				var s, m float64
				for i := 0; i < n; i++ {
					s += a[i*n+j] * x[i]
					m += math.Abs(a[i*n+j] * x[i])
				}
				if math.Abs(s-b[j]) > 1e-12*(m+math.Abs(b[j])) {
					t.Errorf("n=%d: (Aᵀx)[%d] = %.17g, want %.17g", n, j, s, b[j])
				}
			}
		}
	}
	// BlockLU: three blocks of 3, one matrix each.
	const bs, nb = 3, 3
	J := make([]float64, nb*bs*bs)
	for i := range J {
		J[i] = r.NormFloat64()
	}
	blu := linalg.NewBlockLU[float64](nb*bs, bs)
	if blu.FactorShifted(J, 0.7) >= 0 {
		t.Fatal("BlockLU: singular")
	}
	b := make([]float64, nb*bs)
	for i := range b {
		b[i] = r.NormFloat64()
	}
	x := append([]float64(nil), b...)
	blu.SolveTranspose(x)
	for k := 0; k < nb; k++ {
		blk := J[k*bs*bs : (k+1)*bs*bs]
		for j := 0; j < bs; j++ { // ((I − cJ)ᵀx)_j
			s := x[k*bs+j]
			for i := 0; i < bs; i++ {
				s -= 0.7 * blk[i*bs+j] * x[k*bs+i]
			}
			if math.Abs(s-b[k*bs+j]) > 1e-12*(1+math.Abs(b[k*bs+j])) {
				t.Errorf("BlockLU block %d: (Wᵀx)[%d] = %.17g, want %.17g", k, j, s, b[k*bs+j])
			}
		}
	}
}
