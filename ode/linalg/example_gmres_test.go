package linalg_test

import (
	"fmt"

	"github.com/flatkit/flatkit/ode/linalg"
)

// GMRES needs only the products of the matrix. Here A is the tridiagonal
// (−1, 4, −1) of order 6, the right-hand side is A·(1, 2, …, 6), and the
// preconditioner is the inverse of A's diagonal. The error weights are
// all ones, so the tolerance is on the RMS norm of the residual. GMRES
// restarts after 3 vectors, six times here.
func ExampleGMRES() {
	const n = 6
	a := func(dst, v []float64) {
		for i := range dst {
			s := 4 * v[i]
			if i > 0 {
				s -= v[i-1]
			}
			if i+1 < n {
				s -= v[i+1]
			}
			dst[i] = s
		}
	}
	jacobi := func(dst, r []float64) {
		for i := range dst {
			dst[i] = r[i] / 4
		}
	}
	b := []float64{2, 4, 6, 8, 10, 19} // A·(1, 2, 3, 4, 5, 6)
	x := make([]float64, n)
	w := []float64{1, 1, 1, 1, 1, 1}

	g := linalg.NewGMRES[float64](n, 3)
	iters, res, ok := g.Solve(a, jacobi, b, x, w, 1e-10, 10)
	fmt.Printf("converged %v after %d iterations, residual below 1e-10: %v\n", ok, iters, res <= 1e-10)
	fmt.Printf("x = %.6f\n", x)
	// Output:
	// converged true after 18 iterations, residual below 1e-10: true
	// x = [1.000000 2.000000 3.000000 4.000000 5.000000 6.000000]
}
