package bitwise

import (
	"math"
	"testing"
)

// eqCase is a pair of slices and whether Equal should find them equal.
type eqCase[T float32 | float64] struct {
	a, b []T
	want bool
}

// checkEqual checks Equal on every case of one element type, kind.
func checkEqual[T float32 | float64](t *testing.T, kind string, cases []eqCase[T]) {
	t.Helper()
	for i, tt := range cases {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("%s case %d: Equal(%v, %v) = %v, want %v", kind, i, tt.a, tt.b, got, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	nan32, nan64 := float32(math.NaN()), math.NaN()
	other32 := math.Float32frombits(math.Float32bits(nan32) ^ 1)
	other64 := math.Float64frombits(math.Float64bits(nan64) ^ 1)
	negZero32, negZero64 := float32(math.Copysign(0, -1)), math.Copysign(0, -1)
	checkEqual(t, "float32", []eqCase[float32]{
		{nil, nil, true},
		{nil, []float32{}, true},
		{[]float32{1, 2}, []float32{1, 2}, true},
		{[]float32{1, 2}, []float32{1}, false},
		{[]float32{1, 2}, []float32{1, 3}, false},
		{[]float32{0}, []float32{negZero32}, false},
		{[]float32{nan32}, []float32{nan32}, true},
		{[]float32{nan32}, []float32{other32}, false},
	})
	checkEqual(t, "float64", []eqCase[float64]{
		{[]float64{1, 2}, []float64{1, 2}, true},
		{[]float64{1, 2}, []float64{2, 1}, false},
		{[]float64{0}, []float64{negZero64}, false},
		{[]float64{nan64}, []float64{nan64}, true},
		{[]float64{nan64}, []float64{other64}, false},
	})
}
