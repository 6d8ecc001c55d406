package linalg_test

import (
	"fmt"

	"github.com/flatkit/flatkit/ode/linalg"
)

// FactorShifted factors W = I − c·J for a J in ode's band storage, here
// the tridiagonal J = tridiag(1, −2, 1), and Solve and SolveTranspose use
// the factors as often as needed.
func ExampleBandLU() {
	const n = 4
	J := make([]float64, linalg.BandLen(n, 1, 1))
	for i := range n {
		copy(J[3*i:], []float64{1, -2, 1}) // J_{i,i−1}, J_ii, J_{i,i+1}
	}
	lu := linalg.NewBandLU[float64](n, 1, 1)
	if k := lu.FactorShifted(J, 1); k >= 0 {
		fmt.Println("singular at column", k)
		return
	}
	x := []float64{2, 1, 1, 2} // W·(1, 1, 1, 1), W = tridiag(−1, 3, −1)
	lu.Solve(x)
	fmt.Printf("%.3f\n", x)
	// Output:
	// [1.000 1.000 1.000 1.000]
}
