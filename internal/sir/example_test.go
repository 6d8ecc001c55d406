package sir_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/sir"
)

// The right-hand side at the start of the epidemic with the true rates,
// and the first observation times.
func ExampleF() {
	du := make([]float64, 2)
	sir.F(du, []float64{sir.S0, sir.I0}, []float32{sir.Beta, sir.Gamma}, 0)
	fmt.Printf("S' = %.5f, I' = %.5f\n", du[0], du[1])
	fmt.Println("observed at", sir.Times()[:3], "…", sir.Times()[sir.N-1])
	// Output:
	// S' = -0.00495, I' = 0.00395
	// observed at [2 4 6] … 60
}
