package neural_test

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/flatkit/flatkit/cluster/neural"
)

// A training loop draws the network's θ once and sends it with every
// request; its length is the MLP's parameter count, here 2 → 32 → 32 → 2.
func ExampleInit() {
	args, err := json.Marshal(neural.Args{N: 64, Hidden: 32})
	if err != nil {
		fmt.Println(err)
		return
	}
	θ, err := neural.Init(args, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(θ), (2*32+32)+(32*32+32)+(32*2+2))
	// Output:
	// 1218 1218
}

// Trajectory i starts on the annulus 0.5 ≤ |u| ≤ 1.5 and is fitted to the
// damped spiral from there, which turns once in π and shrinks by e^{−0.1t}.
func ExampleTarget() {
	u0 := neural.U0(neural.Args{Seed: 3}, 0)
	r := math.Hypot(float64(u0[0]), float64(u0[1]))
	fmt.Printf("u0 = %.4f, on the annulus: %v\n", u0, 0.5 <= r && r <= 1.5)
	d := math.Exp(-0.1 * math.Pi)
	fmt.Printf("u(π) = %.4f = e^{−0.1π}·u0 = %.4f\n", neural.Target(u0, math.Pi), [2]float64{d * float64(u0[0]), d * float64(u0[1])})
	// Output:
	// u0 = [-1.1512 0.6768], on the annulus: true
	// u(π) = [-0.8408 0.4943] = e^{−0.1π}·u0 = [-0.8408 0.4943]
}
