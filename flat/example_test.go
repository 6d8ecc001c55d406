package flat_test

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// A Tensor is a view: two tensors over parts of one buffer share its numbers.
func ExampleTensor() {
	buf := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	w := flat.Tensor{Shape: []int{2, 4}, Data: buf[:8]}
	b := flat.Tensor{Shape: []int{2}, Data: buf[8:]}
	w.Set(-1, 1, 3) // writes buf[7]
	fmt.Println(w)
	fmt.Println(b)
	fmt.Println(buf)
	// Output:
	// Tensor[2×4] [[1 2 3 4] [5 6 7 -1]]
	// Tensor[2] [9 10]
	// [1 2 3 4 5 6 7 -1 9 10]
}

func ExampleNew() {
	t := flat.New(2, 3)
	fmt.Println(t, t.Size(), t.Rank())
	// Output: Tensor[2×3] [[0 0 0] [0 0 0]] 6 2
}

func ExampleFromSlice() {
	t, err := flat.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	fmt.Println(t, err)
	_, err = flat.FromSlice([]float32{1, 2, 3}, 2, 2)
	fmt.Println(err)
	// Output:
	// Tensor[3×2] [[1 2] [3 4] [5 6]] <nil>
	// flat: shape [2 2] holds 4 numbers, data has 3, want 4
}

func ExampleSizeOf() {
	n, err := flat.SizeOf([]int{1, 4, 2, 2})
	fmt.Println(n, err)
	_, err = flat.SizeOf([]int{3, -1})
	fmt.Println(err)
	// Output:
	// 16 <nil>
	// flat: dimension 1 of shape [3 -1] is -1, want ≥ 0
}

// Reshape gives a new view of the same numbers; -1 stands for the one
// dimension that makes the sizes agree.
func ExampleTensor_Reshape() {
	x, _ := flat.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	y, err := x.Reshape(3, -1)
	fmt.Println(y, err)

	y.Set(50, 2, 1) // no copy: x sees the write
	fmt.Println(x)

	_, err = x.Reshape(4, -1)
	fmt.Println(err)
	// Output:
	// Tensor[3×2] [[0 1] [2 3] [4 5]] <nil>
	// Tensor[2×3] [[0 1 2] [3 4 50]]
	// flat: Reshape [2 3] (6 elements) to [4 -1]: no size for the -1 dimension, want the other dimensions' product (4) nonzero and dividing 6
}

func ExampleTensor_At() {
	x, _ := flat.FromSlice([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 2, 3, 2)
	fmt.Println(x.At(1, 2, 0)) // row-major: 1*6 + 2*2 + 0
	// Output: 10
}

// A long dimension prints its first and last three entries.
func ExampleTensor_String() {
	x := flat.New(4, 10)
	for i := range x.Data {
		x.Data[i] = float32(i)
	}
	fmt.Println(x)
	fmt.Println(flat.Tensor{Data: []float32{2.5}}) // a scalar has an empty shape
	// Output:
	// Tensor[4×10] [[0 1 2 … 7 8 9] [10 11 12 … 17 18 19] [20 21 22 … 27 28 29] [30 31 32 … 37 38 39]]
	// Tensor[] 2.5
}

func ExampleAxpy() {
	x := []float32{1, 2, 3}
	y := []float32{10, 20, 30}
	flat.Axpy(2, x, y) // y += 2·x
	fmt.Println(y)
	// Output: [12 24 36]
}

func ExampleDot() {
	fmt.Println(flat.Dot([]float32{1, 2, 3}, []float32{4, 5, 6}))
	// Output: 32
}

func ExampleNorm() {
	fmt.Println(flat.Norm([]float32{3, 4}))
	// The squares are summed in float64, so huge and tiny inputs are safe.
	fmt.Println(flat.Norm([]float32{3e38, 4e37}))
	fmt.Println(flat.Norm([]float32{3e-30, 4e-30}))
	// Output:
	// 5
	// 3.0265493e+38
	// 5e-30
}

func ExampleSum() {
	fmt.Println(flat.Sum([]float32{1, 2, 3, 4.5}))
	// Output: 10.5
}

func ExampleScale() {
	x := []float32{1, -2, 3}
	flat.Scale(0.5, x)
	fmt.Println(x)
	// Output: [0.5 -1 1.5]
}

func ExampleFill() {
	x := make([]float32, 4)
	flat.Fill(x, 7)
	fmt.Println(x)
	// Output: [7 7 7 7]
}

func ExampleCopy() {
	theta := []float32{1, 2, 3, 4, 5}
	flat.Copy(theta[1:3], []float32{-2, -3}) // Go order: dst, src
	fmt.Println(theta)
	// Output: [1 -2 -3 4 5]
}

func ExampleClone() {
	x := []float32{1, 2, 3}
	c := flat.Clone(x)
	c[0] = 100
	fmt.Println(x, c, flat.Clone(nil) == nil)
	// Output: [1 2 3] [100 2 3] true
}
