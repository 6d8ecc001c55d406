package relerr

import (
	"math"
	"testing"
)

func TestCheck(t *testing.T) {
	want := []float64{0, 1, -100}
	for _, c := range []struct {
		got []float32
		err string
	}{
		{[]float32{1e-5, 1 + 1e-5, -100.001}, ""},
		{[]float32{float32(math.NaN()), 1, -100}, ""}, // NaN is not caught, as the comparison it replaces
		{[]float32{3e-4, 1, -100}, "v[0] = 0.0003, want 0"},
		{[]float32{0, 1.001, -100}, "v[1] = 1.001, want 1"},
		{[]float32{0, 1, -100.1}, "v[2] = -100.1, want -100"},
		{[]float32{0, 1}, "v: 2 values, want 3"},
	} {
		got := ""
		if err := Check("v", c.got, want, 1e-4); err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("Check(%v) = %q, want %q", c.got, got, c.err)
		}
	}
}
