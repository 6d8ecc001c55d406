package geom

import (
	"slices"
	"strings"
	"testing"
)

func TestAxes(t *testing.T) {
	for _, tc := range []struct {
		v    []int
		r    int
		want []int
	}{
		{nil, 3, []int{7, 7, 7}},
		{[]int{}, 2, []int{7, 7}},
		{[]int{2}, 3, []int{2, 2, 2}},
		{[]int{1, 2}, 2, []int{1, 2}},
		{[]int{1, 2, 3}, 3, []int{1, 2, 3}},
		{[]int{4}, 1, []int{4}},
	} {
		dst := make([]int, tc.r)
		if err := Axes(dst, "Stride", tc.v, 7); err != nil || !slices.Equal(dst, tc.want) {
			t.Errorf("Axes(%d axes, %v, default 7) = %v, %v; want %v", tc.r, tc.v, dst, err, tc.want)
		}
	}
	err := Axes(make([]int, 2), "PoolGeom.Stride", []int{1, 2, 3}, 1)
	if err == nil || !strings.Contains(err.Error(), "PoolGeom.Stride has 3 values [1 2 3], want 1 or 2") {
		t.Errorf("Axes with 3 values for 2 axes: error %v, want one naming the field, the values and 1 or 2", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Axes(make([]int, 3), "Stride", []int{1, 2, 3}, 1) }); n != 0 {
		t.Errorf("Axes allocates %v times, want 0", n)
	}
}

func TestPads(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, wantLo, wantHi []int
	}{
		{nil, nil, []int{0, 0}, []int{0, 0}},
		{[]int{1}, nil, []int{1, 1}, []int{1, 1}},
		{[]int{1, 2}, []int{}, []int{1, 2}, []int{1, 2}},
		{[]int{1, 2}, []int{0}, []int{1, 2}, []int{0, 0}},
		{nil, []int{3, 0}, []int{0, 0}, []int{3, 0}},
	} {
		lo, hi := make([]int, 2), make([]int, 2)
		if err := Pads(lo, hi, "PadLo", "PadHi", tc.lo, tc.hi); err != nil || !slices.Equal(lo, tc.wantLo) || !slices.Equal(hi, tc.wantHi) {
			t.Errorf("Pads(%v, %v) = %v, %v, %v; want %v, %v", tc.lo, tc.hi, lo, hi, err, tc.wantLo, tc.wantHi)
		}
	}
	if err := Pads(make([]int, 2), make([]int, 2), "PadLo", "PadHi", nil, []int{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "PadHi has 3 values") {
		t.Errorf("Pads with 3 PadHi values for 2 axes: error %v, want one naming PadHi", err)
	}
}
