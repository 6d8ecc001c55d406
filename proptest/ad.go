package proptest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// The AD checkers compare a function's derivatives computed by package ad
// with finite differences and with each other, in the style of JAX's
// check_grads. They take central differences at steps whose points are
// exact in θ's precision, in both modes, at orders 1 and 2. One random direction misses a wrong rule
// whenever the error happens to be nearly orthogonal to it. So every check
// runs along several directions. When θ is small these are all coordinate
// directions, for the full gradient or Jacobian; otherwise several random
// directions. Random directions are drawn from a generator seeded by θ, so
// a failing case replays exactly.

// probe is one direction a check runs along.
type probe struct {
	d     []float64
	coord int // the coordinate of a coordinate direction, or -1
	label string
}

// probes returns the directions of a check of θ: the coordinate
// directions if θ is small, else random ones drawn with the given salt.
// An Exact CheckTranspose draws dyadic ones.
func (c *checkConfig) probes(θ []float64, salt uint64) []probe {
	n := len(θ)
	if n <= c.full {
		ps := make([]probe, n)
		for i := range ps {
			d := make([]float64, n)
			d[i] = 1
			ps[i] = probe{d: d, coord: i, label: fmt.Sprintf("along coordinate direction e_%d (|d| = 1)", i)}
		}
		return ps
	}
	ps := make([]probe, c.dirs)
	for k := range ps {
		d := c.direction(θ, salt<<16|uint64(k), n)
		ps[k] = probe{d: d, coord: -1, label: fmt.Sprintf("along random direction %d of %d (|d| = %.3g)", k+1, c.dirs, norm64(d))}
	}
	return ps
}

// fdProbes returns the directions of a check against finite differences:
// those of probes, each scaled by a power of two so that its largest
// component is in (1/2, 1], then snapped so that θ plus every default
// step along it is exact in θ's precision (snapDirection). The steps are then
// how far θ's most moved component goes.
func (c *checkConfig) fdProbes(θ []float64, salt uint64) []probe {
	ps := c.probes(θ, salt)
	hmax, _ := c.stepRange()
	hmax *= slices.Max(stepMults)
	δ := c.probeSteps()
	for k := range ps {
		ps[k].d = c.num.snapDirection(θ, c.num.unitDirection(ps[k].d), hmax, slices.Min(δ))
		if ps[k].coord < 0 {
			ps[k].label = fmt.Sprintf("along random direction %d of %d (|d| = %.3g)", k+1, c.dirs, norm64(ps[k].d))
		}
	}
	return ps
}

// direction is a random direction of length n for θ and salt: normal, or
// dyadic when the check is exact.
func (c *checkConfig) direction(θ []float64, salt uint64, n int) []float64 {
	if c.exact {
		return dyadicFor(c.num, θ, salt, n)
	}
	return directionFor(c.num, θ, salt, n)
}

// rngFor is a generator seeded by an FNV-1a hash of θ's bits in its
// precision and by salt. The same θ gives the same directions in every
// process, so a failure replays exactly.
func rngFor(num *numeric, θ []float64, salt uint64) *rand.Rand {
	h := uint64(14695981039346656037)
	for _, x := range θ {
		h ^= num.bits(x)
		h *= 1099511628211
	}
	return rand.New(rand.NewPCG(h, salt))
}

// directionFor draws n normal numbers in θ's precision.
func directionFor(num *numeric, θ []float64, salt uint64, n int) []float64 {
	rng := rngFor(num, θ, salt)
	d := make([]float64, n)
	for i := range d {
		d[i] = num.round(rng.NormFloat64())
	}
	return d
}

// dyadicFor draws n multiples of 1/8 in [−8, 8]: sums and products of a
// few of them are exact in float32 and float64.
func dyadicFor(num *numeric, θ []float64, salt uint64, n int) []float64 {
	rng := rngFor(num, θ, salt)
	d := make([]float64, n)
	for i := range d {
		d[i] = float64(rng.IntN(129)-64) / 8
	}
	return d
}

func norm64(x []float64) float64 { return math.Sqrt(dot64(x, x)) }

// checkGrad runs CheckGrad's comparisons and returns a report of the first
// failure with the number of failing directions, or "" if all agree.
func checkGrad(f func(ad.Var) ad.Var, θ []float64, c *checkConfig) (report string, err error) {
	g, err := c.num.grad(f, θ)
	if err != nil {
		return "", err
	}
	ps := c.fdProbes(θ, 1)
	gc := *c
	gc.abs = c.gradAbs
	var d disagreements
	for _, p := range ps {
		gd := []float64{dot64(g, p.d)}
		rep, err := gc.compare(f, θ, p.d, gd, absDot64(g, p.d))
		if err != nil {
			return "", err
		}
		if rep == "" {
			continue
		}
		what := "⟨∇f, d⟩"
		if p.coord >= 0 {
			what = fmt.Sprintf("∂f/∂θ[%d]", p.coord)
		}
		d.add(fmt.Sprintf("%s %s disagrees with finite differences: %s", what, p.label, rep))
	}
	return d.report(len(ps)), nil
}

// disagreements counts the probe directions on which a check disagrees
// and keeps the report of the first.
type disagreements struct {
	failed int
	first  string
}

// add counts a disagreeing direction with its report.
func (d *disagreements) add(report string) {
	if d.failed == 0 {
		d.first = report
	}
	d.failed++
}

// report is the first direction's report and how many of n disagree, or
// "" if none does.
func (d *disagreements) report(n int) string {
	if d.failed == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%d of %d directions disagree)", d.first, d.failed, n)
}

// CheckGrad checks the reverse-mode gradient of the scalar function f at θ
// against central finite differences. It checks component by component
// when θ has at most FullUpTo elements, else along several random
// directions. A failure names the component or direction, the direction's
// size, the steps and the tolerance.
//
// θ is float32 or float64, and f computes in its precision. A float32 θ is
// recorded with Tape.Param and differentiated by ad.ValueAndGrad. A
// float64 θ is recorded with Tape.Param64 and differentiated by
// ad.ValueAndGrad64; f must return a float64 Var (make its constants with
// ad.ScalarLike or ad.FullLike). The finite differences evaluate f in
// θ's precision, and the default steps and tolerances are θ's precision's
// (Steps, Tol). A float32 f is not evaluated in float64 even where it
// could be: the tolerance must then still allow for the float32 rounding
// of the derivatives, which is as large as that of the differences.
func CheckGrad[F flat.Float](t T, f func(ad.Var) ad.Var, θ []F, opts ...FDCheckOption) {
	t.Helper()
	gradChecked(t, "CheckGrad", f, widen(θ), numericOf[F](), opts, "")
}

// gradChecked configures the check name from opts. It checks f's gradient
// at θ as CheckGrad does, and reports a wrong one as "name: " + wrong +
// the report. It returns the configuration and whether the gradient was
// right.
func gradChecked(t T, name string, f func(ad.Var) ad.Var, θ []float64, num *numeric, opts []FDCheckOption, wrong string) (checkConfig, bool) {
	t.Helper()
	c := configure(num, opts)
	rep, err := checkGrad(f, θ, &c)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if rep != "" {
		t.Errorf("%s: %s%s", name, wrong, rep)
	}
	return c, rep == ""
}

// CheckJVP checks the forward-mode derivative J·d of f at θ, for any output
// shape, against central finite differences. When θ has at most FullUpTo
// elements it checks along every coordinate direction, each column of J.
// Otherwise it checks along several random directions. θ is float32 or
// float64, as for CheckGrad; in float64 J·d comes from ad.JVP64.
func CheckJVP[F flat.Float](t T, f func(ad.Var) ad.Var, θ []F, opts ...FDCheckOption) {
	t.Helper()
	checkJVP(t, f, widen(θ), configure(numericOf[F](), opts))
}

func checkJVP(t T, f func(ad.Var) ad.Var, θ []float64, c checkConfig) {
	t.Helper()
	ps := c.fdProbes(θ, 2)
	// A column that is zero but for rounding is judged against the
	// size of the whole Jacobian: scale is the largest J·d.
	jvs := make([][]float64, len(ps))
	scale := 0.0
	for k, p := range ps {
		jv, err := c.num.jvp(f, θ, p.d)
		if err != nil {
			t.Fatalf("CheckJVP: %v", err)
		}
		jvs[k] = jv
		scale = math.Max(scale, absMax64(jv))
	}
	var d disagreements
	for k, p := range ps {
		rep, err := c.compare(f, θ, p.d, jvs[k], scale)
		if err != nil {
			t.Fatalf("CheckJVP: %v", err)
		}
		if rep != "" {
			d.add(fmt.Sprintf("J·d %s disagrees with finite differences: %s", p.label, rep))
		}
	}
	if rep := d.report(len(ps)); rep != "" {
		t.Errorf("CheckJVP: %s", rep)
	}
}

// CheckTranspose checks that reverse mode is the transpose of forward mode:
// ⟨J v, u⟩ = ⟨v, Jᵀ u⟩. When θ has at most FullUpTo elements, v runs along
// every coordinate direction; otherwise v is several random directions.
// Each v meets a random u. The check holds to the tolerance of
// TransposeTol, or exactly with Exact. θ is float32 or float64, as for
// CheckGrad; in float64 the products come from ad.JVP64 and ad.VJP64, and
// the default tolerance is float64's.
func CheckTranspose[F flat.Float](t T, f func(ad.Var) ad.Var, θ []F, opts ...TransposeCheckOption) {
	t.Helper()
	checkTranspose(t, f, widen(θ), configure(numericOf[F](), opts))
}

func checkTranspose(t T, f func(ad.Var) ad.Var, θ []float64, c checkConfig) {
	t.Helper()
	ps := c.probes(θ, 3)
	var d disagreements
	for k, p := range ps {
		jv, err := c.num.jvp(f, θ, p.d)
		if err != nil {
			t.Fatalf("CheckTranspose: JVP: %v", err)
		}
		u := c.direction(θ, 4<<16|uint64(k), len(jv))
		jtu, err := c.num.vjp(f, θ, u)
		if err != nil {
			t.Fatalf("CheckTranspose: VJP: %v", err)
		}
		lhs, rhs := dot64(jv, u), dot64(p.d, jtu)
		scale := absDot64(jv, u) + absDot64(p.d, jtu)
		tol := c.trel*scale + c.tabs
		if c.exact {
			tol = 0
		}
		if !(math.Abs(lhs-rhs) <= tol) {
			d.add(fmt.Sprintf("v %s, random u (|u| = %.3g): ⟨J v, u⟩ = %.6g but ⟨v, Jᵀ u⟩ = %.6g (tolerance %.3g)", p.label, norm64(u), lhs, rhs, tol))
		}
	}
	if rep := d.report(len(ps)); rep != "" {
		t.Errorf("CheckTranspose: %s", rep)
	}
}

// CheckHVP checks second derivatives of the scalar f at θ. It checks the
// gradient first, as CheckGrad does, and stops with a first-order report
// if that is wrong. Then it compares the forward-over-reverse HVP with
// reverse-over-reverse and with central differences of the gradient. It
// checks along every coordinate direction when θ has at most FullUpTo
// elements, each column of the Hessian; otherwise along several random
// directions. It also checks the symmetry ⟨H u, v⟩ = ⟨u, H v⟩ for every
// pair of directions. θ is float32 or float64, as for CheckGrad; in
// float64 the products come from ad.HVP64 and ad.HVPReverse64.
func CheckHVP[F flat.Float](t T, f func(ad.Var) ad.Var, θ []F, opts ...FDCheckOption) {
	t.Helper()
	checkHVP(t, f, widen(θ), numericOf[F](), opts)
}

func checkHVP(t T, f func(ad.Var) ad.Var, θ []float64, num *numeric, opts []FDCheckOption) {
	t.Helper()
	c, ok := gradChecked(t, "CheckHVP", f, θ, num, opts, "the first derivative is wrong, so the second was not checked: ")
	if !ok {
		return
	}
	grad := func(p ad.Var) ad.Var { return ad.GradVar(f, p) }
	ps := c.fdProbes(θ, 5)
	// A column that is zero but for rounding is judged against the
	// size of the whole Hessian: scale is the largest H·u of both modes.
	hus, hus2 := make([][]float64, len(ps)), make([][]float64, len(ps))
	scale := 0.0
	for k, p := range ps {
		hu, err := c.num.hvp(f, θ, p.d)
		if err != nil {
			t.Fatalf("CheckHVP: HVP: %v", err)
		}
		hu2, err := c.num.hvpR(f, θ, p.d)
		if err != nil {
			t.Fatalf("CheckHVP: HVPReverse: %v", err)
		}
		hus[k], hus2[k] = hu, hu2
		scale = math.Max(scale, absMax64(hu)+absMax64(hu2))
	}
	var d disagreements
	for k, p := range ps {
		hu, hu2 := hus[k], hus2[k]
		bad := "" // the direction's first disagreement
		for i := range hu {
			if tol := c.num.modesRel*scale + c.num.modesAbs; !(math.Abs(hu[i]-hu2[i]) <= tol) {
				bad = fmt.Sprintf("H·u %s, component %d: forward-over-reverse %.6g, reverse-over-reverse %.6g (tolerance %.3g)", p.label, i, hu[i], hu2[i], tol)
				break
			}
		}
		rep, err := c.compare(grad, θ, p.d, hu, scale/2)
		if err != nil {
			t.Fatalf("CheckHVP: %v", err)
		}
		if rep != "" && bad == "" {
			bad = fmt.Sprintf("H·u %s disagrees with finite differences of the gradient: %s", p.label, rep)
		}
		if bad != "" {
			d.add(bad)
		}
	}
	if rep := d.report(len(ps)); rep != "" {
		t.Errorf("CheckHVP: %s", rep)
		return
	}
	for a := range ps {
		for b := a + 1; b < len(ps); b++ {
			x, y := dot64(hus[a], ps[b].d), dot64(ps[a].d, hus[b])
			if tol := c.num.symRel*(absDot64(hus[a], ps[b].d)+absDot64(ps[a].d, hus[b])) + c.num.symAbs; !(math.Abs(x-y) <= tol) {
				t.Errorf("CheckHVP: Hessian not symmetric: ⟨H u, v⟩ = %.6g, ⟨u, H v⟩ = %.6g (tolerance %.3g), u %s, v %s", x, y, tol, ps[a].label, ps[b].label)
				return
			}
		}
	}
}

// float64s is x in float64.
func float64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func dot64(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func absDot64(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(a[i] * b[i])
	}
	return s
}

// NoTies draws n values in ±[0.1, 2] whose magnitudes differ pairwise by at
// least 0.19/n, and which stay 0.1 away from zero. They are inputs for
// which no max has a tie, and no ReLU, abs or clamp at 0 sits on its kink.
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
