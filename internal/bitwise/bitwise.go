package bitwise

import "math"

// Equal reports whether a and b have the same length and the same bits
// at every index.
func Equal[T float32 | float64](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	switch a := any(a).(type) {
	case []float32:
		b := any(b).([]float32)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
	case []float64:
		b := any(b).([]float64)
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
	}
	return true
}
