package geom_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/geom"
)

// A field of a 2-d convolution's geometry expands to its two spatial axes.
func ExampleAxes() {
	stride := make([]int, 2)
	for _, v := range [][]int{nil, {2}, {1, 3}, {1, 2, 3}} {
		if err := geom.Axes(stride, "Stride", v, 1); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(v, "->", stride)
	}
	// Output:
	// [] -> [1 1]
	// [2] -> [2 2]
	// [1 3] -> [1 3]
	// Stride has 3 values [1 2 3], want 1 or 2 (one per spatial axis)
}

// An empty PadHi pads after each axis as much as before it.
func ExamplePads() {
	lo, hi := make([]int, 2), make([]int, 2)
	if err := geom.Pads(lo, hi, "PadLo", "PadHi", []int{1, 2}, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println(lo, hi)
	if err := geom.Pads(lo, hi, "PadLo", "PadHi", []int{1}, []int{0}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(lo, hi)
	// Output:
	// [1 2] [1 2]
	// [1 1] [0 0]
}
