package bitwise

import (
	"math"
	"testing"
)

func TestEqual(t *testing.T) {
	nan32, nan64 := float32(math.NaN()), math.NaN()
	other32 := math.Float32frombits(math.Float32bits(nan32) ^ 1)
	other64 := math.Float64frombits(math.Float64bits(nan64) ^ 1)
	negZero32, negZero64 := float32(math.Copysign(0, -1)), math.Copysign(0, -1)
	tests32 := []struct {
		a, b []float32
		want bool
	}{
		{nil, nil, true},
		{nil, []float32{}, true},
		{[]float32{1, 2}, []float32{1, 2}, true},
		{[]float32{1, 2}, []float32{1}, false},
		{[]float32{1, 2}, []float32{1, 3}, false},
		{[]float32{0}, []float32{negZero32}, false},
		{[]float32{nan32}, []float32{nan32}, true},
		{[]float32{nan32}, []float32{other32}, false},
	}
	for i, tt := range tests32 {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("float32 case %d: Equal(%v, %v) = %v, want %v", i, tt.a, tt.b, got, tt.want)
		}
	}
	tests64 := []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 2}, []float64{1, 2}, true},
		{[]float64{1, 2}, []float64{2, 1}, false},
		{[]float64{0}, []float64{negZero64}, false},
		{[]float64{nan64}, []float64{nan64}, true},
		{[]float64{nan64}, []float64{other64}, false},
	}
	for i, tt := range tests64 {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("float64 case %d: Equal(%v, %v) = %v, want %v", i, tt.a, tt.b, got, tt.want)
		}
	}
}
