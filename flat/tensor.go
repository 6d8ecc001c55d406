package flat

import (
	"fmt"
	"slices"
	"strings"
)

// Float is the element types a tensor can hold.
type Float interface{ ~float32 | ~float64 }

// TensorOf is a row-major view of Data with the given Shape. Both fields
// are exported: a tensor is a plain value, and copying it copies the view,
// not the numbers. A tensor with an empty Shape is a scalar holding
// Data[0].
type TensorOf[T Float] struct {
	Shape []int
	Data  []T
}

// Tensor is a tensor of float32, the element type of the parameter buffer
// and of everything the parameters feed by default.
type Tensor = TensorOf[float32]

// Tensor64 is a tensor of float64, for values computed in float64 from the
// parameters (see package ad's precisions).
type Tensor64 = TensorOf[float64]

// New returns a zeroed tensor of the given shape, backed by a new slice.
// It panics if a dimension is negative.
func New(shape ...int) Tensor {
	n, err := SizeOf(shape)
	if err != nil {
		panic(err)
	}
	return Tensor{Shape: append([]int(nil), shape...), Data: make([]float32, n)}
}

// FromSlice returns a tensor viewing data with the given shape, or an error if
// the shape does not hold exactly len(data) numbers.
func FromSlice(data []float32, shape ...int) (Tensor, error) {
	n, err := SizeOf(shape)
	if err != nil {
		return Tensor{}, err
	}
	if n != len(data) {
		return Tensor{}, fmt.Errorf("flat: shape %v holds %d numbers, data has %d, want %d", shape, n, len(data), n)
	}
	return Tensor{Shape: shape, Data: data}, nil
}

// SizeOf returns the number of elements a shape holds: the product of its
// dimensions, 1 for a scalar. Negative dimensions and products that overflow
// int are errors.
func SizeOf(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("flat: dimension %d of shape %v is %d, want ≥ 0", i, slices.Clone(shape), d)
		}
		if d != 0 && n > maxInt/d {
			return 0, fmt.Errorf("flat: shape %v holds more elements than an int can count", slices.Clone(shape))
		}
		n *= d
	}
	return n, nil
}

const maxInt = int(^uint(0) >> 1)

// Size returns the number of elements the shape holds.
func (t TensorOf[T]) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rank returns the number of dimensions.
func (t TensorOf[T]) Rank() int { return len(t.Shape) }

// Reshape returns a view of the same data with a new shape. One dimension may
// be -1, meaning "whatever makes the sizes agree". It never copies.
func (t TensorOf[T]) Reshape(shape ...int) (TensorOf[T], error) {
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return TensorOf[T]{}, fmt.Errorf("flat: Reshape %v to %v: dimension %d is %d, want ≥ 0 (or -1 in one dimension)", t.Shape, shape, i, d)
		case d != 0 && known > maxInt/d:
			return TensorOf[T]{}, fmt.Errorf("flat: Reshape %v to %v: shape holds more elements than an int can count", t.Shape, shape)
		default:
			known *= d
		}
	}
	n := len(t.Data)
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return TensorOf[T]{}, fmt.Errorf("flat: Reshape %v (%d elements) to %v: no size for the -1 dimension, want the other dimensions' product (%d) nonzero and dividing %d", t.Shape, n, shape, known, n)
		}
		s := append([]int(nil), shape...)
		s[infer] = n / known
		return TensorOf[T]{Shape: s, Data: t.Data}, nil
	}
	if known != n {
		return TensorOf[T]{}, fmt.Errorf("flat: Reshape %v (%d elements) to %v (%d elements), want a shape of %d elements", t.Shape, n, shape, known, n)
	}
	return TensorOf[T]{Shape: shape, Data: t.Data}, nil
}

// At returns the element at the given multi-index. It panics if the index is
// out of range, like indexing a slice.
func (t TensorOf[T]) At(idx ...int) T { return t.Data[t.offset(idx)] }

// Set stores v at the given multi-index.
func (t TensorOf[T]) Set(v T, idx ...int) { t.Data[t.offset(idx)] = v }

func (t TensorOf[T]) offset(idx []int) int {
	if len(idx) != len(t.Shape) {
		panic(fmt.Sprintf("flat: index %v into shape %v, want %d indices", idx, t.Shape, len(t.Shape)))
	}
	off := 0
	for i, j := range idx {
		if j < 0 || j >= t.Shape[i] {
			panic(fmt.Sprintf("flat: index %v out of range for shape %v, want 0 ≤ index[%d] < %d", idx, t.Shape, i, t.Shape[i]))
		}
		off = off*t.Shape[i] + j
	}
	return off
}

// String formats the tensor as its shape followed by its values, nested by
// dimension, eliding the middle of any dimension longer than 8.
func (t TensorOf[T]) String() string {
	var sb strings.Builder
	sb.WriteString("Tensor")
	sb.WriteString(shapeString(t.Shape))
	if len(t.Data) < t.Size() {
		fmt.Fprintf(&sb, "(invalid: %d numbers for %d elements)", len(t.Data), t.Size())
		return sb.String()
	}
	sb.WriteByte(' ')
	writeNested(&sb, t.Shape, t.Data)
	return sb.String()
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, "×") + "]"
}

const elideOver = 8

func writeNested[T Float](sb *strings.Builder, shape []int, data []T) {
	if len(shape) == 0 {
		fmt.Fprintf(sb, "%g", data[0])
		return
	}
	n, stride := shape[0], 1
	for _, d := range shape[1:] {
		stride *= d
	}
	sb.WriteByte('[')
	for i := 0; i < n; i++ {
		if n > elideOver && i == 3 {
			sb.WriteString(" …")
			i = n - 3
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		writeNested(sb, shape[1:], data[i*stride:(i+1)*stride])
	}
	sb.WriteByte(']')
}
