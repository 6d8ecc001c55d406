package bitwise_test

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/internal/bitwise"
)

// Equal tells −0 from +0, which == does not, and finds a NaN equal to
// itself, which == does not either.
func ExampleEqual() {
	negZero, nan := math.Copysign(0, -1), math.NaN()
	fmt.Println(negZero == 0, bitwise.Equal([]float64{negZero}, []float64{0}))
	fmt.Println(nan == nan, bitwise.Equal([]float64{nan}, []float64{nan}))
	fmt.Println(bitwise.Equal([]float32{1, 2}, []float32{1, 2}))
	// Output:
	// true false
	// false true
	// true
}
