package optimisers

import (
	"maps"
	"math"
	"slices"

	"github.com/flatkit/flatkit/layout"
)

// Interval is the closed range [Lo, Hi] a parameter may take. An infinite
// end is no bound on that side: Interval{0, math.Inf(1)} is "not negative".
type Interval struct{ Lo, Hi float64 }

// Bounds are lower and upper bounds for each element of θ, for LBFGSB.
// Lower[i] ≤ θ[i] ≤ Upper[i]. A nil slice is no bound on that side for
// every element, and −Inf in Lower or +Inf in Upper is no bound for one
// element. A non-nil slice has len(θ) entries. BoundsByPath builds Bounds
// from a layout's paths.
type Bounds struct {
	Lower, Upper []float64
}

// BoundsByPath returns the Bounds that put the elements under each path of
// byPath in its interval. A path is a leaf, a tied path or a group of lay:
// its interval applies to each element of its range. Elements no path
// covers are unbounded. An element under several paths (a leaf and a group
// holding it) must satisfy all their intervals, so it gets their
// intersection.
//
// The errors: a nil layout; a path lay does not hold, as layout's
// *layout.PathError, which names the paths near it; an interval with a NaN
// end, with Lo > Hi, or empty (Lo = +Inf or Hi = −Inf); and paths whose
// intervals leave an element no value, naming both.
func BoundsByPath(lay *layout.Layout, byPath map[string]Interval) (Bounds, error) {
	if lay == nil {
		return Bounds{}, errorf("BoundsByPath: nil layout")
	}
	n := lay.Len()
	b := Bounds{Lower: make([]float64, n), Upper: make([]float64, n)}
	for i := range n {
		b.Lower[i], b.Upper[i] = math.Inf(-1), math.Inf(1)
	}
	loFrom := make([]string, n) // the path that set each element's lower bound, for errors
	hiFrom := make([]string, n)
	for _, p := range slices.Sorted(maps.Keys(byPath)) { // the first error does not depend on map order
		iv := byPath[p]
		if err := iv.check(); err != nil {
			return Bounds{}, errorf("BoundsByPath: path %q: %w", p, err)
		}
		lo, hi, err := lay.Range(p)
		if err != nil {
			return Bounds{}, errorf("BoundsByPath: %w", err)
		}
		for i := lo; i < hi; i++ {
			if iv.Lo > b.Lower[i] {
				b.Lower[i], loFrom[i] = iv.Lo, p
			}
			if iv.Hi < b.Upper[i] {
				b.Upper[i], hiFrom[i] = iv.Hi, p
			}
			if b.Lower[i] > b.Upper[i] {
				return Bounds{}, errorf("BoundsByPath: the interval [%g, %g] of %q and the interval [%g, %g] of %q leave θ[%d] no value, want intervals that overlap",
					b.Lower[i], byPath[loFrom[i]].Hi, loFrom[i], byPath[hiFrom[i]].Lo, b.Upper[i], hiFrom[i], i)
			}
		}
	}
	return b, nil
}

// check reports a NaN end, Lo > Hi, or an empty interval.
func (iv Interval) check() error {
	switch {
	case math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi):
		return errorf("interval [%g, %g] has a NaN end, want numbers or ±Inf", iv.Lo, iv.Hi)
	case iv.Lo > iv.Hi:
		return errorf("interval [%g, %g] has Lo > Hi, want Lo ≤ Hi", iv.Lo, iv.Hi)
	case math.IsInf(iv.Lo, 1) || math.IsInf(iv.Hi, -1):
		return errorf("interval [%g, %g] holds no number, want Lo < +Inf and Hi > −Inf", iv.Lo, iv.Hi)
	}
	return nil
}

// float32Box checks b for n parameters and returns the bounds as LBFGSB
// uses them: every finite bound rounded inward to a float32 value, so that
// every point the objective sees, float32 θ, is within the bounds. A
// missing bound is ±Inf. The errors name the element and the bounds.
func (b Bounds) float32Box(n int) (lower, upper []float64, err error) {
	if b.Lower != nil && len(b.Lower) != n {
		return nil, nil, errorf("Bounds.Lower has %d entries, want len(θ) = %d or nil", len(b.Lower), n)
	}
	if b.Upper != nil && len(b.Upper) != n {
		return nil, nil, errorf("Bounds.Upper has %d entries, want len(θ) = %d or nil", len(b.Upper), n)
	}
	lower, upper = make([]float64, n), make([]float64, n)
	for i := range n {
		lo, hi := math.Inf(-1), math.Inf(1)
		if b.Lower != nil {
			lo = b.Lower[i]
		}
		if b.Upper != nil {
			hi = b.Upper[i]
		}
		if err := (Interval{lo, hi}).check(); err != nil {
			return nil, nil, errorf("Bounds of θ[%d]: %w", i, err)
		}
		lower[i], upper[i] = roundUp32(lo), roundDown32(hi)
		if lower[i] > upper[i] || math.IsInf(lower[i], 1) || math.IsInf(upper[i], -1) {
			return nil, nil, errorf("Bounds of θ[%d]: [%g, %g] holds no finite float32 value, want a wider interval", i, lo, hi)
		}
	}
	return lower, upper, nil
}

// roundUp32 returns the smallest float32 value ≥ v, as a float64, and
// −Inf below float32's range. A bound beyond float32's range is no bound
// on that side: float32 θ cannot pass it anyway. (A lower bound above the
// range becomes +Inf, which float32Box refuses.)
func roundUp32(v float64) float64 {
	if v < -math.MaxFloat32 {
		return math.Inf(-1)
	}
	r := float32(v)
	if float64(r) < v {
		r = math.Nextafter32(r, float32(math.Inf(1)))
	}
	return float64(r)
}

// roundDown32 returns the largest float32 value ≤ v, as a float64, and
// +Inf beyond float32's range.
func roundDown32(v float64) float64 {
	if v > math.MaxFloat32 {
		return math.Inf(1)
	}
	r := float32(v)
	if float64(r) > v {
		r = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	return float64(r)
}
