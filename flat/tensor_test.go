package flat

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// iota32 returns 0, 1, …, n-1 as float32s.
func iota32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i)
	}
	return s
}

// sameArray reports whether a and b start at the same address: one is a view
// of the other, not a copy. It works for empty slices too.
func sameArray(a, b []float32) bool {
	return unsafe.SliceData(a) == unsafe.SliceData(b)
}

// wantErr fails unless err is non-nil exactly when want is non-empty, and
// then contains want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("got no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

// quarter·4 is 2^64 (2^32 on 32-bit platforms): it wraps to 0 in int
// arithmetic, and (quarter+1)·4 wraps to 4.
const quarter = maxInt/4 + 1

// tensorOpts compares tensors field by field, treating nil and empty slices
// alike (New(0) and FromSlice([]float32{}, 0) are the same tensor).
var tensorOpts = cmpopts.EquateEmpty()

func TestNew(t *testing.T) {
	tests := []struct {
		shape []int
		want  Tensor
	}{
		{nil, Tensor{Data: []float32{0}}},
		{[]int{3}, Tensor{Shape: []int{3}, Data: make([]float32, 3)}},
		{[]int{2, 3, 4}, Tensor{Shape: []int{2, 3, 4}, Data: make([]float32, 24)}},
		{[]int{2, 0, 4}, Tensor{Shape: []int{2, 0, 4}, Data: []float32{}}},
	}
	for _, tc := range tests {
		t.Run(shapeString(tc.shape), func(t *testing.T) {
			shape := append([]int(nil), tc.shape...)
			got := New(shape...)
			if diff := cmp.Diff(tc.want, got, tensorOpts); diff != "" {
				t.Fatalf("New(%v) mismatch (-want +got):\n%s", tc.shape, diff)
			}
			if got.Size() != len(got.Data) || got.Rank() != len(tc.shape) {
				t.Errorf("Size %d Rank %d, want %d %d", got.Size(), got.Rank(), len(got.Data), len(tc.shape))
			}
			if len(shape) > 0 {
				shape[0] = 99
				if got.Shape[0] == 99 {
					t.Errorf("New kept the caller's shape slice; it should copy it")
				}
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		mustPanic(t, "dimension 1 of shape [2 -1] is -1, want ≥ 0", func() { New(2, -1) })
	})
}

func TestSizeOf(t *testing.T) {
	tests := []struct {
		name  string
		shape []int
		want  int
		err   string
	}{
		{"nil is a scalar", nil, 1, ""},
		{"empty is a scalar", []int{}, 1, ""},
		{"vector", []int{7}, 7, ""},
		{"matrix", []int{3, 4}, 12, ""},
		{"4-d", []int{1, 4, 2, 2}, 16, ""},
		{"zero dim", []int{5, 0, 3}, 0, ""},
		{"zero then huge", []int{0, maxInt, maxInt}, 0, ""},
		{"max", []int{maxInt}, maxInt, ""},
		{"max by one", []int{1, maxInt, 1}, maxInt, ""},
		{"negative", []int{2, -3}, 0, "dimension 1 of shape [2 -3] is -3, want ≥ 0"},
		{"negative first", []int{-1}, 0, "dimension 0 of shape [-1] is -1, want ≥ 0"},
		{"overflow by 2", []int{maxInt/2 + 1, 2}, 0, "more elements than an int can count"},
		{"overflow squares", []int{1 << 16, 1 << 16, 1 << 16, 1 << 16}, 0, "more elements than an int can count"},
		{"overflow late", []int{3, 5, maxInt / 8}, 0, "more elements than an int can count"},
		{"overflow wraps to zero", []int{quarter, 4}, 0, "more elements than an int can count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SizeOf(tc.shape)
			wantErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("SizeOf(%v) = %d, want %d", tc.shape, got, tc.want)
			}
		})
	}
}

func TestFromSlice(t *testing.T) {
	data := iota32(6)
	tests := []struct {
		name  string
		data  []float32
		shape []int
		want  Tensor
		err   string
	}{
		{"2x3", data, []int{2, 3}, Tensor{Shape: []int{2, 3}, Data: data}, ""},
		{"6", data, []int{6}, Tensor{Shape: []int{6}, Data: data}, ""},
		{"scalar", data[:1], nil, Tensor{Data: data[:1]}, ""},
		{"empty", []float32{}, []int{0, 3}, Tensor{Shape: []int{0, 3}, Data: []float32{}}, ""},
		{"too few", data, []int{2, 4}, Tensor{}, "shape [2 4] holds 8 numbers, data has 6, want 8"},
		{"too many", data, []int{5}, Tensor{}, "shape [5] holds 5 numbers, data has 6, want 5"},
		{"scalar of nothing", nil, nil, Tensor{}, "shape [] holds 1 numbers, data has 0, want 1"},
		{"negative", data, []int{-2, -3}, Tensor{}, "dimension 0 of shape [-2 -3] is -2, want ≥ 0"},
		{"overflow", data, []int{quarter, 4}, Tensor{}, "more elements than an int can count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromSlice(tc.data, tc.shape...)
			wantErr(t, err, tc.err)
			if diff := cmp.Diff(tc.want, got, tensorOpts); diff != "" {
				t.Fatalf("FromSlice mismatch (-want +got):\n%s", diff)
			}
			if err == nil && !sameArray(got.Data, tc.data) {
				t.Errorf("FromSlice copied the data; it should view it")
			}
		})
	}
}

func TestReshape(t *testing.T) {
	tests := []struct {
		name      string
		from      []int
		to        []int
		wantShape []int
		err       string
	}{
		{"flatten", []int{2, 3, 4}, []int{24}, []int{24}, ""},
		{"split", []int{24}, []int{4, 6}, []int{4, 6}, ""},
		{"same", []int{2, 3}, []int{2, 3}, []int{2, 3}, ""},
		{"add unit dims", []int{6}, []int{1, 6, 1}, []int{1, 6, 1}, ""},
		{"to scalar", []int{1, 1}, nil, nil, ""},
		{"from scalar", nil, []int{1, 1, 1}, []int{1, 1, 1}, ""},
		{"infer first", []int{2, 3, 4}, []int{-1, 4}, []int{6, 4}, ""},
		{"infer middle", []int{2, 3, 4}, []int{2, -1, 2}, []int{2, 6, 2}, ""},
		{"infer last", []int{24}, []int{2, 3, -1}, []int{2, 3, 4}, ""},
		{"infer all", []int{2, 3, 4}, []int{-1}, []int{24}, ""},
		{"infer one", []int{1}, []int{-1, 1}, []int{1, 1}, ""},
		{"infer zero", []int{0, 5}, []int{5, -1}, []int{5, 0}, ""},
		{"empty", []int{0, 5}, []int{5, 0, 2}, []int{5, 0, 2}, ""},
		{"size mismatch", []int{2, 3}, []int{4, 2}, nil, "[2 3] (6 elements) to [4 2] (8 elements), want a shape of 6 elements"},
		{"scalar mismatch", []int{2}, nil, nil, "(2 elements) to [] (1 elements), want a shape of 2 elements"},
		{"two -1", []int{2, 3, 4}, []int{-1, -1}, nil, "dimension 1 is -1, want ≥ 0 (or -1 in one dimension)"},
		{"-2", []int{2, 3}, []int{-2, -3}, nil, "dimension 0 is -2, want ≥ 0 (or -1 in one dimension)"},
		{"-1 and -2", []int{2, 3}, []int{-1, -2}, nil, "dimension 1 is -2, want ≥ 0 (or -1 in one dimension)"},
		{"infer indivisible", []int{2, 3}, []int{4, -1}, nil, "no size for the -1 dimension, want the other dimensions' product (4) nonzero and dividing 6"},
		{"infer beside zero", []int{0, 5}, []int{0, -1}, nil, "no size for the -1 dimension, want the other dimensions' product (0) nonzero and dividing 0"},
		{"overflow wraps to 4", []int{4}, []int{quarter + 1, 4}, nil, "more elements than an int can count"},
		{"overflow wraps to 0", []int{0}, []int{quarter, 4}, nil, "more elements than an int can count"},
		{"overflow with -1", []int{4}, []int{quarter + 1, -1, 4}, nil, "more elements than an int can count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := New(tc.from...)
			for i := range orig.Data {
				orig.Data[i] = float32(i)
			}
			to := append([]int(nil), tc.to...)
			got, err := orig.Reshape(to...)
			wantErr(t, err, tc.err)
			if err != nil {
				if diff := cmp.Diff(Tensor{}, got, tensorOpts); diff != "" {
					t.Errorf("Reshape returned a tensor with its error (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tc.wantShape, got.Shape, tensorOpts); diff != "" {
				t.Fatalf("Reshape(%v) of %v: shape mismatch (-want +got):\n%s", tc.to, tc.from, diff)
			}
			if diff := cmp.Diff(tc.to, to, tensorOpts); diff != "" {
				t.Errorf("Reshape modified its argument (-want +got):\n%s", diff)
			}
			if got.Size() != orig.Size() || len(got.Data) != len(orig.Data) {
				t.Fatalf("Reshape changed the size: %d/%d, was %d/%d", got.Size(), len(got.Data), orig.Size(), len(orig.Data))
			}
			// No copy: the result's Data is the original's.
			if len(orig.Data) > 0 && &got.Data[0] != &orig.Data[0] {
				t.Fatalf("Reshape copied: &Data[0] = %p, original %p", &got.Data[0], &orig.Data[0])
			}
			if !sameArray(got.Data, orig.Data) || cap(got.Data) != cap(orig.Data) {
				t.Fatalf("Reshape's Data is not the original slice")
			}
			if len(got.Data) > 0 {
				got.Data[len(got.Data)-1] = -7
				if orig.Data[len(orig.Data)-1] != -7 {
					t.Fatalf("a write through the reshaped tensor did not reach the original")
				}
			}
		})
	}
}

// TestReshapeRoundTrip checks with rapid that reshaping to a random
// factorisation and back is the identity on the view, and never copies.
func TestReshapeRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		shape := rapid.SliceOfN(rapid.IntRange(0, 5), 0, 4).Draw(rt, "shape")
		x := New(shape...)
		for i := range x.Data {
			x.Data[i] = float32(i)
		}
		flat, err := x.Reshape(-1)
		if err != nil {
			rt.Fatalf("Reshape(-1) of %v: %v", shape, err)
		}
		if flat.Rank() != 1 || flat.Shape[0] != len(x.Data) {
			rt.Fatalf("Reshape(-1) of %v gave shape %v", shape, flat.Shape)
		}
		back, err := flat.Reshape(shape...)
		if err != nil {
			rt.Fatalf("Reshape back to %v: %v", shape, err)
		}
		if diff := cmp.Diff(x, back, tensorOpts); diff != "" {
			rt.Fatalf("round trip mismatch (-want +got):\n%s", diff)
		}
		if !sameArray(back.Data, x.Data) {
			rt.Fatalf("round trip copied the data")
		}
	})
}

func TestAtSet(t *testing.T) {
	x, err := FromSlice(iota32(24), 2, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				if got, want := x.At(i, j, k), float32(i*12+j*4+k); got != want {
					t.Fatalf("At(%d, %d, %d) = %v, want %v (row-major)", i, j, k, got, want)
				}
			}
		}
	}
	x.Set(-1, 1, 2, 3)
	x.Set(-2, 0, 1, 0)
	x.Set(-3, 0, 0, 0)
	want := iota32(24)
	want[23], want[4], want[0] = -1, -2, -3
	if diff := cmp.Diff(want, x.Data); diff != "" {
		t.Errorf("Set wrote the wrong elements (-want +got):\n%s", diff)
	}
	if got := x.At(1, 2, 3); got != -1 {
		t.Errorf("At after Set = %v, want -1", got)
	}

	// Set on a copy of the Tensor value writes to the shared data.
	y := x
	y.Set(42, 1, 0, 0)
	if x.At(1, 0, 0) != 42 {
		t.Errorf("a copied Tensor value does not view the same data")
	}

	panics := []struct {
		name string
		idx  []int
		msg  string
	}{
		{"too few", []int{1, 2}, "index [1 2] into shape [2 3 4], want 3 indices"},
		{"too many", []int{1, 2, 3, 0}, "index [1 2 3 0] into shape [2 3 4], want 3 indices"},
		{"none", nil, "index [] into shape [2 3 4], want 3 indices"},
		{"negative", []int{0, -1, 0}, "index [0 -1 0] out of range for shape [2 3 4], want 0 ≤ index[1] < 3"},
		{"past end", []int{0, 3, 0}, "index [0 3 0] out of range for shape [2 3 4], want 0 ≤ index[1] < 3"},
		// In range as a flat offset (1*12+0*4+4 = 16) but not per axis.
		{"wraps into next row", []int{1, 0, 4}, "out of range for shape [2 3 4], want 0 ≤ index[2] < 4"},
	}
	for _, tc := range panics {
		t.Run(tc.name, func(t *testing.T) {
			mustPanic(t, tc.msg, func() { x.At(tc.idx...) })
			mustPanic(t, tc.msg, func() { x.Set(0, tc.idx...) })
		})
	}
}

func TestScalar(t *testing.T) {
	s := New()
	if s.Rank() != 0 || s.Size() != 1 || len(s.Data) != 1 {
		t.Fatalf("New() = %+v: want rank 0, size 1, one number", s)
	}
	s.Set(2.5)
	if got := s.At(); got != 2.5 {
		t.Errorf("At() = %v, want 2.5", got)
	}
	if got, want := s.String(), "Tensor[] 2.5"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	mustPanic(t, "index [0] into shape [], want 0 indices", func() { s.At(0) })

	v, err := s.Reshape(1)
	if err != nil || v.At(0) != 2.5 || !sameArray(v.Data, s.Data) {
		t.Errorf("scalar Reshape(1) = %v, %v", v, err)
	}
	back, err := v.Reshape()
	if err != nil || back.Rank() != 0 || back.At() != 2.5 {
		t.Errorf("Reshape() to a scalar = %v, %v", back, err)
	}
}

func TestString(t *testing.T) {
	mk := func(n int, shape ...int) Tensor {
		x, err := FromSlice(iota32(n), shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	tests := []struct {
		name string
		t    Tensor
		want string
	}{
		{"scalar", Tensor{Data: []float32{3.5}}, "Tensor[] 3.5"},
		{"vector", Tensor{Shape: []int{3}, Data: []float32{0.1, -2, 1e-7}}, "Tensor[3] [0.1 -2 1e-07]"},
		{"matrix", mk(6, 2, 3), "Tensor[2×3] [[0 1 2] [3 4 5]]"},
		{"3-d", mk(8, 2, 2, 2), "Tensor[2×2×2] [[[0 1] [2 3]] [[4 5] [6 7]]]"},
		{"eight not elided", mk(8, 8), "Tensor[8] [0 1 2 3 4 5 6 7]"},
		{"nine elided", mk(9, 9), "Tensor[9] [0 1 2 … 6 7 8]"},
		{"long elided", mk(1000, 1000), "Tensor[1000] [0 1 2 … 997 998 999]"},
		{"rows elided", mk(20, 10, 2), "Tensor[10×2] [[0 1] [2 3] [4 5] … [14 15] [16 17] [18 19]]"},
		{"both elided", mk(90, 9, 10),
			"Tensor[9×10] [[0 1 2 … 7 8 9] [10 11 12 … 17 18 19] [20 21 22 … 27 28 29] … " +
				"[60 61 62 … 67 68 69] [70 71 72 … 77 78 79] [80 81 82 … 87 88 89]]"},
		{"empty", New(0), "Tensor[0] []"},
		{"empty rows", New(2, 0), "Tensor[2×0] [[] []]"},
		{"zero rows", New(0, 3), "Tensor[0×3] []"},
		{"too little data", Tensor{Shape: []int{2, 2}, Data: make([]float32, 3)},
			"Tensor[2×2](invalid: 3 numbers for 4 elements)"},
		{"scalar without data", Tensor{}, "Tensor[](invalid: 0 numbers for 1 elements)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.t.String()); diff != "" {
				t.Errorf("String mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// A huge tensor prints in bounded space: at most 6 entries per axis.
	big := New(100, 100, 100)
	if s := big.String(); len(s) > 2000 {
		t.Errorf("String of a 100×100×100 tensor is %d bytes long; elision should bound it", len(s))
	}
}
