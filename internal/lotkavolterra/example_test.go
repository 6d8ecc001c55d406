package lotkavolterra_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
)

// The right-hand side and its Jacobian at u = (1, 1) with the rates
// p = (1.5, 1, 3, 1).
func ExampleF() {
	p := []float32{1.5, 1, 3, 1}
	u := []float64{1, 1}
	du, J := make([]float64, 2), make([]float64, 4)
	lotkavolterra.F(du, u, p, 0)
	lotkavolterra.Jac(J, u, p, 0)
	fmt.Println("F:", du)
	fmt.Println("∂F/∂u:", J)
	// Output:
	// F: [0.5 -2]
	// ∂F/∂u: [0.5 -1 1 -2]
}

// VJP adds into its outputs: wᵀ∂F/∂u into du, and wᵀ∂F/∂p into dp.
func ExampleVJP() {
	p := []float32{1.5, 1, 3, 1}
	u, w := []float64{1, 2}, []float64{1, 1}
	du, dp := make([]float64, 2), make([]float64, 4)
	lotkavolterra.VJP(du, dp, w, u, p, 0)
	fmt.Println(du, dp)
	// Output:
	// [1.5 -3] [1 -2 -2 2]
}
