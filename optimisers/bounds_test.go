package optimisers

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
)

func TestBoundsByPath(t *testing.T) {
	lay := trLayout(t) // rate [2], g.frac [2], g.soft [1], free [2]
	inf := math.Inf(1)
	b, err := BoundsByPath(lay, map[string]Interval{
		"rate":   {0, inf},
		"g":      {-1, 1},
		"g.soft": {0.5, 2}, // intersected with g's: [0.5, 1]
	})
	if err != nil {
		t.Fatal(err)
	}
	wantLo := []float64{0, 0, -1, -1, 0.5, -inf, -inf}
	wantHi := []float64{inf, inf, 1, 1, 1, inf, inf}
	for i := range wantLo {
		if b.Lower[i] != wantLo[i] || b.Upper[i] != wantHi[i] {
			t.Errorf("θ[%d] in [%g, %g], want [%g, %g]", i, b.Lower[i], b.Upper[i], wantLo[i], wantHi[i])
		}
	}
	for _, c := range []struct {
		name string
		by   map[string]Interval
		want string
	}{
		{"Lo > Hi", map[string]Interval{"rate": {2, 1}}, `path "rate": interval [2, 1] has Lo > Hi`},
		{"NaN", map[string]Interval{"free": {math.NaN(), 1}}, `path "free": interval [NaN, 1] has a NaN end`},
		{"empty", map[string]Interval{"free": {-inf, -inf}}, "holds no number"},
		{"disjoint", map[string]Interval{"g": {0, 1}, "g.soft": {2, 3}}, `the interval [2, 3] of "g.soft" and the interval [0, 1] of "g" leave θ[4] no value`},
	} {
		_, err := BoundsByPath(lay, c.by)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	_, err = BoundsByPath(lay, map[string]Interval{"g.fracc": {0, 1}})
	var pe *layout.PathError
	if !errors.As(err, &pe) || !errors.Is(err, layout.ErrUnknownPath) || pe.Path != "g.fracc" || !strings.Contains(err.Error(), "g.frac") {
		t.Errorf("unknown path: %v, want a *layout.PathError for %q naming the paths near it", err, "g.fracc")
	}
	if _, err := BoundsByPath(nil, nil); err == nil {
		t.Error("nil layout: no error")
	}
}

// TestBoundsFloat32 rounds bounds inward to float32 values.
func TestBoundsFloat32(t *testing.T) {
	lo, hi, err := Bounds{Lower: []float64{0.1, -0.1, math.Inf(-1), -1e39}, Upper: []float64{0.3, 0.1, 1e39, 2}}.float32Box(4)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lo {
		if float64(float32(lo[i])) != lo[i] || float64(float32(hi[i])) != hi[i] {
			t.Errorf("θ[%d]: [%v, %v] are not float32 values", i, lo[i], hi[i])
		}
	}
	if !(lo[0] >= 0.1 && lo[0]-0.1 < 1e-8 && hi[0] <= 0.3 && 0.3-hi[0] < 3e-8 && lo[1] >= -0.1 && hi[1] <= 0.1) {
		t.Errorf("bounds [%v, %v], [%v, %v]: want the nearest float32 values inside", lo[0], hi[0], lo[1], hi[1])
	}
	if !math.IsInf(lo[2], -1) || !math.IsInf(hi[2], 1) || !math.IsInf(lo[3], -1) {
		t.Errorf("beyond float32's range: [%v, %v], lower %v; want no bound", lo[2], hi[2], lo[3])
	}
	if _, _, err := (Bounds{Lower: []float64{1e39}}).float32Box(1); err == nil {
		t.Error("a lower bound above float32's range: no error")
	}
}
