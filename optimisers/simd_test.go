package optimisers_test

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/optimisers"
	"github.com/flatkit/flatkit/proptest"
)

// The vector kernels of the fused Adam and AdamW steps give exactly the Go
// loop's bits, for every length (tails included) and any float32 values:
// NaN, infinities, zeros and subnormals. (Only the payload of a NaN may
// differ, where both operands of an instruction are NaN: the compiler may
// order the operands of a commutative operation either way.)
func TestAdamSIMDMatchesGo(t *testing.T) {
	best := optimisers.SIMD()
	if best == 0 {
		t.Skip("no vector kernel on this machine")
	}
	defer optimisers.SetSIMD(best)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 80).Draw(t, "n")
		var vals *rapid.Generator[[]float32]
		if rapid.Bool().Draw(t, "any bits") {
			vals = proptest.AnyFloats(n)
		} else {
			vals = proptest.Floats(n)
		}
		θ0, g := vals.Draw(t, "θ"), vals.Draw(t, "g")
		m0, v0 := vals.Draw(t, "m"), proptest.Floats(n).Draw(t, "v")
		for i := range v0 {
			v0[i] = float32(math.Abs(float64(v0[i])))
		}
		var rule optimisers.Fused = optimisers.Adam(rapid.Float64Range(0, 1).Draw(t, "lr"))
		if rapid.Bool().Draw(t, "AdamW") {
			rule = optimisers.AdamW(rapid.Float64Range(0, 1).Draw(t, "lr"), rapid.Float64Range(0, 1).Draw(t, "wd"))
		}
		step := rapid.IntRange(1, 1000).Draw(t, "t")
		var out [][3][]float32
		for level := 0; level <= best; level++ {
			optimisers.SetSIMD(level)
			θ, m, v := slices.Clone(θ0), slices.Clone(m0), slices.Clone(v0)
			rule.Fuse([][]float32{m, v}, θ, g, step)
			out = append(out, [3][]float32{θ, m, v})
		}
		for level := 1; level < len(out); level++ {
			for k, name := range []string{"θ", "m", "v"} {
				if !sameValues(out[0][k], out[level][k]) {
					t.Fatalf("kernel level %d: %s = %v, the Go loop gives %v", level, name, out[level][k], out[0][k])
				}
			}
		}
	})
}

// sameValues is bitwise.Equal, except that any two NaNs are equal.
func sameValues(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
