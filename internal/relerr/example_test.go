package relerr_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/relerr"
)

// The tolerance is absolute near zero and relative away from it: 1e-3
// allows 0.001 at 0 and 1.001 at 1000.
func ExampleCheck() {
	want := []float64{0, 1000}
	fmt.Println(relerr.Check("y", []float32{0.0009, 1000.5}, want, 1e-3))
	fmt.Println(relerr.Check("y", []float32{0.002, 1000}, want, 1e-3))
	fmt.Println(relerr.Check("y", []float32{0}, want, 1e-3))
	// Output:
	// <nil>
	// y[0] = 0.002, want 0
	// y: 1 values, want 2
}
