package proptest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// The AD checkers compare a function's derivatives computed by package ad
// with finite differences and with each other, in the style of JAX's
// check_grads: one random direction, central differences with
// float32-safe steps, both modes, orders 1 and 2. The direction is drawn
// from a generator seeded by θ, so a failing case replays exactly.

// Steps are the finite-difference steps tried, largest first: a derivative
// passes if it agrees with the central difference at any of them, so a
// function whose curvature spoils one step or whose rounding spoils the
// other is still checked fairly.
var Steps = []float32{1e-2, 3e-3}

// Tolerance of the finite-difference comparisons: |ad − fd| must be within
// RelTol·(|ad| + |fd|) + AbsTol·scale, where scale is 1 plus the size of the
// values involved.
var (
	RelTol float64 = 2e-2
	AbsTol float64 = 2e-3
)

func directionFor(θ []float32, salt uint64, n int) []float32 {
	// FNV-1a over the bits of θ: the same θ gives the same direction in
	// every process, so a failure replays exactly.
	h := uint64(14695981039346656037)
	for _, x := range θ {
		h ^= uint64(math.Float32bits(x))
		h *= 1099511628211
	}
	rng := rand.New(rand.NewPCG(h, salt))
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return d
}

func evalAt(f func(ad.Var) ad.Var, θ []float32) ([]float32, error) {
	tp := ad.NewTape()
	y := f(tp.Param(θ))
	if err := tp.Err(); err != nil {
		return nil, err
	}
	return flat.Clone(y.Data()), nil
}

func shifted(θ, d []float32, h float32) []float32 {
	x := flat.Clone(θ)
	flat.Axpy(h, d, x)
	return x
}

// centralDiff returns (f(θ+hd) − f(θ−hd)) / 2h in float64, elementwise.
func centralDiff(f func(ad.Var) ad.Var, θ, d []float32, h float32) ([]float64, error) {
	p, err := evalAt(f, shifted(θ, d, h))
	if err != nil {
		return nil, err
	}
	m, err := evalAt(f, shifted(θ, d, -h))
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(p))
	for i := range p {
		out[i] = (float64(p[i]) - float64(m[i])) / (2 * float64(h))
	}
	return out, nil
}

func near(a, b, scale float64) bool {
	return math.Abs(a-b) <= RelTol*(math.Abs(a)+math.Abs(b))+AbsTol*(1+scale)
}

func absMax(x []float32) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// agreesAtSomeStep reports whether want (AD, per output) matches the
// central difference of f along d at one of Steps, and returns the worst
// mismatch at the last step for the report.
func agreesAtSomeStep(f func(ad.Var) ad.Var, θ, d []float32, want []float32, scale float64) (ok bool, report string, err error) {
	for _, h := range Steps {
		fd, err := centralDiff(f, θ, d, h)
		if err != nil {
			return false, "", err
		}
		ok = len(fd) == len(want)
		worst, wi := 0.0, -1
		for i := range fd {
			if i >= len(want) {
				break
			}
			if !near(float64(want[i]), fd[i], scale) {
				ok = false
				if e := math.Abs(float64(want[i]) - fd[i]); e >= worst {
					worst, wi = e, i
				}
			}
		}
		if ok {
			return true, "", nil
		}
		if wi >= 0 {
			report = fmt.Sprintf("output %d: AD %v, central difference (step %g) %v", wi, want[wi], h, fd[wi])
		} else {
			report = fmt.Sprintf("AD has %d outputs, f has %d", len(want), len(fd))
		}
	}
	return false, report, nil
}

// CheckGrad checks the reverse-mode gradient of the scalar function f at θ
// against central finite differences along one random direction.
func CheckGrad(t T, f func(ad.Var) ad.Var, θ []float32) {
	t.Helper()
	v, g, err := ad.ValueAndGrad(f, θ)
	if err != nil {
		t.Fatalf("CheckGrad: %v", err)
	}
	d := directionFor(θ, 1, len(θ))
	gd := []float32{flat.Dot(g, d)}
	scale := math.Abs(float64(v)) + absMax(g)*absMax(d)
	ok, rep, err := agreesAtSomeStep(f, θ, d, gd, scale)
	if err != nil {
		t.Fatalf("CheckGrad: %v", err)
	}
	if !ok {
		t.Errorf("CheckGrad: ⟨∇f, d⟩ disagrees with finite differences: %s", rep)
	}
}

// CheckJVP checks the forward-mode derivative J·d of f at θ, for any output
// shape, against central finite differences along one random direction.
func CheckJVP(t T, f func(ad.Var) ad.Var, θ []float32) {
	t.Helper()
	d := directionFor(θ, 2, len(θ))
	jv, err := ad.JVP(f, θ, d)
	if err != nil {
		t.Fatalf("CheckJVP: %v", err)
	}
	y, err := evalAt(f, θ)
	if err != nil {
		t.Fatalf("CheckJVP: %v", err)
	}
	ok, rep, err := agreesAtSomeStep(f, θ, d, jv, absMax(y)+absMax(jv))
	if err != nil {
		t.Fatalf("CheckJVP: %v", err)
	}
	if !ok {
		t.Errorf("CheckJVP: J·d disagrees with finite differences: %s", rep)
	}
}

// CheckTranspose checks that reverse mode is the transpose of forward mode:
// ⟨J v, u⟩ = ⟨v, Jᵀ u⟩ for random v and u.
func CheckTranspose(t T, f func(ad.Var) ad.Var, θ []float32) {
	t.Helper()
	v := directionFor(θ, 3, len(θ))
	jv, err := ad.JVP(f, θ, v)
	if err != nil {
		t.Fatalf("CheckTranspose: JVP: %v", err)
	}
	u := directionFor(θ, 4, len(jv))
	jtu, err := ad.VJP(f, θ, u)
	if err != nil {
		t.Fatalf("CheckTranspose: VJP: %v", err)
	}
	lhs, rhs := dot64(jv, u), dot64(v, jtu)
	scale := absDot64(jv, u) + absDot64(v, jtu)
	if math.Abs(lhs-rhs) > 1e-4*scale+1e-6 {
		t.Errorf("CheckTranspose: ⟨J v, u⟩ = %v but ⟨v, Jᵀ u⟩ = %v", lhs, rhs)
	}
}

// CheckHVP checks second derivatives of the scalar f at θ: the
// forward-over-reverse HVP against reverse-over-reverse, against central
// differences of the gradient, and the symmetry ⟨H u, v⟩ = ⟨u, H v⟩.
func CheckHVP(t T, f func(ad.Var) ad.Var, θ []float32) {
	t.Helper()
	u := directionFor(θ, 5, len(θ))
	v := directionFor(θ, 6, len(θ))
	hu, err := ad.HVP(f, θ, u)
	if err != nil {
		t.Fatalf("CheckHVP: HVP: %v", err)
	}
	hu2, err := ad.HVPReverse(f, θ, u)
	if err != nil {
		t.Fatalf("CheckHVP: HVPReverse: %v", err)
	}
	scale := absMax(hu) + absMax(hu2)
	for i := range hu {
		if math.Abs(float64(hu[i]-hu2[i])) > 1e-4*scale+1e-6 {
			t.Errorf("CheckHVP: component %d: forward-over-reverse %v, reverse-over-reverse %v", i, hu[i], hu2[i])
			break
		}
	}
	grad := func(p ad.Var) ad.Var { return ad.GradVar(f, p) }
	ok, rep, err := agreesAtSomeStep(grad, θ, u, hu, absMax(hu))
	if err != nil {
		t.Fatalf("CheckHVP: %v", err)
	}
	if !ok {
		t.Errorf("CheckHVP: H·u disagrees with finite differences of the gradient: %s", rep)
	}
	hv, err := ad.HVP(f, θ, v)
	if err != nil {
		t.Fatalf("CheckHVP: HVP: %v", err)
	}
	a, b := dot64(hu, v), dot64(u, hv)
	if math.Abs(a-b) > 1e-3*(absDot64(hu, v)+absDot64(u, hv))+1e-5 {
		t.Errorf("CheckHVP: Hessian not symmetric: ⟨H u, v⟩ = %v, ⟨u, H v⟩ = %v", a, b)
	}
}

func dot64(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func absDot64(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

// NoTies draws n values in ±[0.1, 2] whose magnitudes differ pairwise by at
// least 0.19/n and which stay 0.1 away from zero: inputs for which no max
// has a tie and no ReLU, abs or clamp at 0 sits on its kink.
func NoTies(n int) *rapid.Generator[[]float32] {
	return rapid.Custom(func(t *rapid.T) []float32 {
		perm := rapid.Permutation(indices(n)).Draw(t, "order")
		v := make([]float32, n)
		step := 1.9 / float32(max(n, 1))
		for i, p := range perm {
			x := 0.1 + step*float32(p) + step*0.5*rapid.Float32Range(0, 0.9).Draw(t, "jitter")
			if rapid.Bool().Draw(t, "neg") {
				x = -x
			}
			v[i] = x
		}
		return v
	})
}

func indices(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Positive draws n values in [lo, hi] with lo > 0, for functions defined on
// the positive reals (Log, Sqrt, Pow).
func Positive(n int, lo, hi float32) *rapid.Generator[[]float32] {
	return rapid.SliceOfN(rapid.Float32Range(lo, hi), n, n)
}
