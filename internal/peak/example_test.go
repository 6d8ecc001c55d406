package peak_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/peak"
)

// FMA returns the flops it performed: 512 or 192 per iteration where the
// assembly runs, 0 elsewhere. Timing the call gives the peak.
func ExampleFMA() {
	const iters = 1000
	flops := peak.FMA(iters)
	fmt.Println(flops == 0 || flops == 512*iters || flops == 192*iters)
	// Output:
	// true
}
