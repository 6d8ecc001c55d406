package relerr

import (
	"fmt"
	"math"
)

// Check returns nil if got has want's length and every got[i] is within
// tol·(1 + |want[i]|) of want[i]. A NaN compares as within, because the
// comparison's > is false for it. Otherwise Check returns an error naming
// what and the first index that is not within: "what[i] = got, want
// want".
func Check(what string, got []float32, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol*(1+math.Abs(want[i])) {
			return fmt.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}
