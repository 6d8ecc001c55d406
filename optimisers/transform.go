package optimisers

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/flatkit/flatkit/layout"
)

// Transform maps an unconstrained value z to a parameter value θ = T(z) in
// a range, so that an unconstrained method such as LBFGS fits a constrained
// parameter. Positive, PositiveSoftplus and Between make them; the zero
// Transform is invalid. TransformsByPath assigns them to a layout's paths.
type Transform struct {
	kind   transformKind
	lo, hi float64 // Between's interval
}

type transformKind uint8

const (
	transformNone transformKind = iota
	transformExp
	transformSoftplus
	transformSigmoid
)

// Positive is θ = exp(z), for θ > 0: z is log θ. It suits rates and
// scales, whose size matters in ratios: a step in z is the same relative
// change at any size.
func Positive() Transform { return Transform{kind: transformExp} }

// PositiveSoftplus is θ = log(1 + exp(z)), for θ > 0. It is close to z
// for large z (within exp(−z)) and to exp(z) for very negative z, so it
// keeps the loss's curvature in θ where θ is well above 0.
func PositiveSoftplus() Transform { return Transform{kind: transformSoftplus} }

// Between is θ = lo + (hi − lo)·σ(z), σ(z) = 1/(1 + exp(−z)) the
// logistic sigmoid, for lo < θ < hi: z is the logit of θ's place in the
// interval. lo and hi must be finite with lo < hi; TransformsByPath checks.
func Between(lo, hi float64) Transform { return Transform{kind: transformSigmoid, lo: lo, hi: hi} }

// String returns the constructor call that makes t, such as "Between(0, 1)".
func (t Transform) String() string {
	switch t.kind {
	case transformExp:
		return "Positive()"
	case transformSoftplus:
		return "PositiveSoftplus()"
	case transformSigmoid:
		return fmt.Sprintf("Between(%g, %g)", t.lo, t.hi)
	}
	return "Transform{}"
}

// Range returns the open interval T maps onto: (0, +Inf) or (lo, hi).
func (t Transform) Range() Interval {
	if t.kind == transformSigmoid {
		return Interval{t.lo, t.hi}
	}
	return Interval{0, math.Inf(1)}
}

func (t Transform) check() error {
	switch t.kind {
	case transformExp, transformSoftplus:
		return nil
	case transformSigmoid:
		if !(t.lo < t.hi) || math.IsInf(t.lo, 0) || math.IsInf(t.hi, 0) {
			return errorf("%v: want finite lo < hi", t)
		}
		return nil
	}
	return errorf("the zero Transform, want one made by Positive, PositiveSoftplus or Between")
}

// user returns θ = T(z) and dθ/dz, in float64.
func (t Transform) user(z float64) (θ, dθ float64) {
	switch t.kind {
	case transformExp:
		θ = math.Exp(z)
		return θ, θ
	case transformSoftplus:
		if z > 0 {
			θ = z + math.Log1p(math.Exp(-z))
		} else {
			θ = math.Log1p(math.Exp(z))
		}
		return θ, sigmoid(z)
	default:
		w := t.hi - t.lo
		s := sigmoid(z)
		if z > 0 { // from the nearer end, so that θ near hi keeps its digits
			θ = t.hi - w*sigmoid(-z)
		} else {
			θ = t.lo + w*s
		}
		return θ, w * s * (1 - s)
	}
}

// unconstrained returns z = T⁻¹(θ) for θ inside the range.
func (t Transform) unconstrained(θ float64) float64 {
	switch t.kind {
	case transformExp:
		return math.Log(θ)
	case transformSoftplus:
		return θ + math.Log(-math.Expm1(-θ)) // log(exp(θ) − 1) without overflow
	default:
		a, b := θ-t.lo, t.hi-θ
		return math.Log(a) - math.Log(b)
	}
}

// user32 rounds T(z) to float32, kept inside the open range: a value that
// rounds onto an end (exp of a very negative z to 0, the sigmoid of a large
// z to hi) moves to the nearest float32 inside.
func (t Transform) user32(z float64) (float32, float64) {
	v, d := t.user(z)
	r := float32(v)
	iv := t.Range()
	if float64(r) <= iv.Lo {
		r = float32(roundUp32(iv.Lo))
		if float64(r) <= iv.Lo {
			r = math.Nextafter32(r, float32(math.Inf(1)))
		}
	}
	if float64(r) >= iv.Hi {
		r = float32(roundDown32(iv.Hi))
		if float64(r) >= iv.Hi {
			r = math.Nextafter32(r, float32(math.Inf(-1)))
		}
	}
	return r, d
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Transforms maps a whole unconstrained vector z to θ in the user's units,
// each element by its path's Transform; elements no path names are the
// same in both. Make it with TransformsByPath. Wrap turns an objective in
// θ into one in z, for Minimize; FromUser and ToUser convert a vector each
// way:
//
//	tr, err := optimisers.TransformsByPath(lay, map[string]optimisers.Transform{
//		"beta": optimisers.Positive(), "gamma": optimisers.Between(0, 1)})
//	z := make([]float32, len(θ))
//	err = tr.FromUser(z, θ)                          // the start, unconstrained
//	res, err := optimisers.Minimize(tr.Wrap(fg), z, nil, nil)
//	err = tr.ToUser(θ, z)                            // the fit, in the user's units
//
// Precision: z lives in a float32 buffer, and θ = T(z) is computed in
// float64 and rounded to float32. A float32 z is resolved to 2⁻²⁴·|z|, so
// under Positive, θ = exp(z) moves in relative steps of about 2⁻²⁴·|log θ|:
// as fine as float32 itself for θ within e of 1, and |log θ| times coarser
// beyond (14 float32 steps at θ = 10⁻⁶). The same holds for Between near
// its ends, where z is about log of the distance to the end. A round trip
// FromUser then ToUser returns θ within that resolution
// (TestTransformRoundTrip). The unconstrained gradient is the user's
// scaled by dθ/dz, so a Settings.GradientThreshold is in z's units.
type Transforms struct {
	n    int
	segs []transformSeg // in buffer order, not overlapping
}

type transformSeg struct {
	lo, hi int
	path   string
	t      Transform
}

// TransformsByPath returns the Transforms that map the elements under each
// path of byPath by its Transform. A path is a leaf, a tied path or a group
// of lay; its Transform applies to each element of its range.
//
// The errors: a nil layout; a path lay does not hold, as layout's
// *layout.PathError, which names the paths near it; an invalid Transform
// (the zero value, or Between with lo ≥ hi or an infinite end); and two
// paths over the same element (a leaf and a group holding it), naming
// both, since transforms do not compose.
func TransformsByPath(lay *layout.Layout, byPath map[string]Transform) (Transforms, error) {
	if lay == nil {
		return Transforms{}, errorf("TransformsByPath: nil layout")
	}
	ts := Transforms{n: lay.Len()}
	for _, p := range slices.Sorted(maps.Keys(byPath)) { // the first error does not depend on map order
		t := byPath[p]
		if err := t.check(); err != nil {
			return Transforms{}, errorf("TransformsByPath: path %q: %w", p, err)
		}
		lo, hi, err := lay.Range(p)
		if err != nil {
			return Transforms{}, errorf("TransformsByPath: %w", err)
		}
		if lo == hi {
			continue
		}
		for _, s := range ts.segs {
			if lo < s.hi && s.lo < hi {
				return Transforms{}, errorf("TransformsByPath: paths %q (θ[%d:%d]) and %q (θ[%d:%d]) overlap, want one Transform per element", s.path, s.lo, s.hi, p, lo, hi)
			}
		}
		ts.segs = append(ts.segs, transformSeg{lo: lo, hi: hi, path: p, t: t})
	}
	slices.SortFunc(ts.segs, func(a, b transformSeg) int { return a.lo - b.lo })
	return ts, nil
}

func (ts Transforms) checkLen(op string, a, b []float32) error {
	if len(a) != ts.n || len(b) != ts.n {
		return errorf("Transforms.%s: buffers have %d and %d floats, want %d (the layout's Len)", op, len(a), len(b), ts.n)
	}
	return nil
}

// ToUser writes θ = T(z) into θ. θ and z may be the same slice. Each value
// is rounded to float32 and kept strictly inside its Transform's range.
// The error is a length other than the layout's.
func (ts Transforms) ToUser(θ, z []float32) error {
	if err := ts.checkLen("ToUser", θ, z); err != nil {
		return err
	}
	ts.toUser(θ, z, nil)
	return nil
}

// toUser writes T(z) into θ and, if dθ is non-nil, dθ/dz into it.
func (ts Transforms) toUser(θ, z []float32, dθ []float64) {
	at := 0
	for _, s := range ts.segs {
		for i := at; i < s.lo; i++ {
			θ[i] = z[i]
			if dθ != nil {
				dθ[i] = 1
			}
		}
		for i := s.lo; i < s.hi; i++ {
			v, d := s.t.user32(float64(z[i]))
			θ[i] = v
			if dθ != nil {
				dθ[i] = d
			}
		}
		at = s.hi
	}
	for i := at; i < len(θ); i++ {
		θ[i] = z[i]
		if dθ != nil {
			dθ[i] = 1
		}
	}
}

// FromUser writes z = T⁻¹(θ) into z. z and θ may be the same slice. A
// value outside its Transform's open range (θ ≤ 0 under Positive, θ
// outside (lo, hi) under Between) is an error naming the element and its
// path, as is a length other than the layout's; z is then unchanged.
func (ts Transforms) FromUser(z, θ []float32) error {
	if err := ts.checkLen("FromUser", z, θ); err != nil {
		return err
	}
	for _, s := range ts.segs {
		iv := s.t.Range()
		for i := s.lo; i < s.hi; i++ {
			if v := float64(θ[i]); !(v > iv.Lo && v < iv.Hi) {
				return errorf("Transforms.FromUser: θ[%d] (under %q) = %v is outside (%g, %g), the range of %v; want a value inside", i, s.path, θ[i], iv.Lo, iv.Hi, s.t)
			}
		}
	}
	at := 0
	for _, s := range ts.segs {
		copy(z[at:s.lo], θ[at:s.lo])
		for i := s.lo; i < s.hi; i++ {
			z[i] = float32(s.t.unconstrained(float64(θ[i])))
		}
		at = s.hi
	}
	copy(z[at:], θ[at:])
	return nil
}

// Wrap returns fg as an objective of the unconstrained z: it evaluates fg
// at θ = T(z) (ToUser) and chains the gradient through, grad_z =
// T'(z)·grad_θ, computed in float64 and rounded to float32. fg's error is
// returned unchanged, so errors.Is and errors.As reach it; a z of the wrong
// length is an error. The objective keeps buffers for θ and its gradient,
// made once, so an evaluation allocates nothing; like any Objective, it is
// not safe for concurrent use.
func (ts Transforms) Wrap(fg Objective) Objective {
	θ := make([]float32, ts.n)
	gθ := make([]float32, ts.n)
	dθ := make([]float64, ts.n)
	return func(z, grad []float32) (float64, error) {
		if len(z) != ts.n || grad != nil && len(grad) != ts.n {
			return 0, errorf("Transforms.Wrap: z has %d floats and grad %d, want %d (the layout's Len)", len(z), len(grad), ts.n)
		}
		ts.toUser(θ, z, dθ)
		var g []float32
		if grad != nil {
			g = gθ
		}
		f, err := fg(θ, g)
		if err != nil || grad == nil {
			return f, err
		}
		for i, v := range gθ {
			grad[i] = float32(dθ[i] * float64(v))
		}
		return f, nil
	}
}
