package proptest

import (
	"fmt"
	"math"
	"strings"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// The finite differences of CheckGrad, CheckJVP and CheckHVP. Along a
// direction d they take central differences D(h) at every step h, each
// accumulated in float64. D(h) = f′·d + c₁h² + c₂h⁴ + …, so extrapolating
// the table to h = 0 (Richardson, by Neville's scheme in h²) cancels the
// leading terms: O(h⁴) from two steps, O(h⁶) from three. The differences
// between the extrapolations of the sub-tables estimate the error that
// remains. With the rounding of f, carried through the extrapolation, that
// estimate makes the tolerance. So the tolerance is tight where the
// differences are accurate, and wide only where they cannot be.

// fdEvaluator evaluates the function of a check at the points of its
// finite differences. It is the one place the differences evaluate f, so
// that a more precise evaluation can replace it.
type fdEvaluator struct {
	// at returns f(θ + t·d) in float64.
	at func(f func(ad.Var) ad.Var, θ, d []float64, t float64) ([]float64, error)
	// unit is the unit roundoff of the evaluation: f's values are rounded
	// by about unit relative to their size.
	unit float64
}

// eval32 evaluates f in float32, at θ + t·d rounded to float32. The
// directions are snapped (snapDirection) so that the default steps give
// points that are exact.
var eval32 = fdEvaluator{at: evalLine32, unit: 0x1p-24}

func evalLine32(f func(ad.Var) ad.Var, θ, d []float64, t float64) ([]float64, error) {
	x := make([]float32, len(θ))
	for i := range x {
		x[i] = float32(θ[i] + t*d[i])
	}
	y, err := evalAt(f, x)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = float64(v)
	}
	return out, nil
}

func evalAt(f func(ad.Var) ad.Var, θ []float32) ([]float32, error) {
	tp := ad.NewTape()
	y := f(tp.Param(θ))
	if err := tp.Err(); err != nil {
		return nil, err
	}
	return flat.Clone(y.Data()), nil
}

// noiseFactor is how many units of rounding relative to its values the
// evaluation of f is taken to carry at least. A value summed from terms
// that cancel is rounded by more: the noise probes measure that.
const noiseFactor = 4

// noiseProbes are the steps of the noise probes, as fractions of the
// smallest step. So small a step leaves no truncation error worth the
// name: how far its central difference is from the extrapolation is the
// rounding of f. Two of them, lest one agree by chance.
var noiseProbes = []float64{1.0 / 8, 1.0 / 32}

// unitDirection scales d by a power of two so that its largest component
// is in (1/2, 1]: the steps are then how far the largest component of θ
// moves, whatever the size of d. The scaling is exact, but for a
// component that falls below the precision's smallest normal number.
func (num *numeric) unitDirection(d []float64) []float64 {
	m := absMax64(d)
	if m == 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return d
	}
	frac, e := math.Frexp(m) // m = frac·2^e, frac in [1/2, 1)
	if frac == 0.5 {
		e-- // m is a power of two: scale it to 1
	}
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = num.round(math.Ldexp(v, -e))
	}
	return out
}

// snapDirection rounds each component of d so that θ + h·d is exact in
// θ's precision for every step h that is a power of two no smaller than
// hmin: h·d_i becomes a multiple of the spacing of numbers near
// |θ_i| + hmax·|d_i|. The change to d is of the order of that spacing over
// hmin, far below its own size for steps well above the rounding of θ. A
// point can still be rounded where θ_i + h·d_i crosses a power of two. If
// snapping would zero d, d is returned as it is.
func (num *numeric) snapDirection(θ, d []float64, hmax, hmin float64) []float64 {
	_, e := math.Frexp(hmin)
	q := math.Ldexp(1, e-1) // the largest power of two ≤ hmin
	out := make([]float64, len(d))
	zero := true
	for i, v := range d {
		top := math.Abs(θ[i]) + hmax*math.Abs(v)
		g := num.ulp(num.round(top)) / q // d_i must be a multiple of g
		out[i] = num.round(math.Round(v/g) * g)
		zero = zero && out[i] == 0
	}
	if zero {
		return d
	}
	return out
}

// fdTable is the central differences of f along d at each step, per
// output, with a bound on the rounding error of each, and the central
// differences of the noise probes.
type fdTable struct {
	h     []float64
	diff  [][]float64 // diff[k][i]: central difference of output i at step h[k]
	noise [][]float64 // noise[k][i]: its rounding error, from the size of f
	δ     []float64   // the noise probes' steps
	probe [][]float64 // probe[k][i]: central difference of output i at step δ[k]
}

// table takes the central differences of f at θ along d at the steps of
// c and at the steps of the noise probes, all times mult, with c's
// evaluator.
func (c *checkConfig) table(f func(ad.Var) ad.Var, θ, d []float64, mult float64) (*fdTable, error) {
	tb := &fdTable{}
	for _, h32 := range c.steps {
		h := mult * float64(h32)
		p, m, err := c.pair(f, θ, d, h)
		if err != nil {
			return nil, err
		}
		// Each output is taken to be rounded like the largest: an
		// output near zero is often what is left of larger values that
		// cancel (a normalised value near the mean).
		size := absMax64(p) + absMax64(m)
		diff, noise := make([]float64, len(p)), make([]float64, len(p))
		for i := range p {
			diff[i] = (p[i] - m[i]) / (2 * h)
			noise[i] = noiseFactor * c.eval.unit * size / (2 * h)
		}
		tb.h = append(tb.h, h)
		tb.diff = append(tb.diff, diff)
		tb.noise = append(tb.noise, noise)
	}
	for _, δ := range c.probeSteps() {
		δ *= mult
		p, m, err := c.pair(f, θ, d, δ)
		if err != nil {
			return nil, err
		}
		if len(p) != len(tb.diff[0]) {
			return nil, fmt.Errorf("f has %d outputs at θ+hd but %d at θ+δd, want the same number", len(tb.diff[0]), len(p))
		}
		diff := make([]float64, len(p))
		for i := range p {
			diff[i] = (p[i] - m[i]) / (2 * δ)
		}
		tb.δ = append(tb.δ, δ)
		tb.probe = append(tb.probe, diff)
	}
	return tb, nil
}

func absMax64(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// pair evaluates f at θ ± h·d.
func (c *checkConfig) pair(f func(ad.Var) ad.Var, θ, d []float64, h float64) (p, m []float64, err error) {
	if p, err = c.eval.at(f, θ, d, h); err != nil {
		return nil, nil, err
	}
	if m, err = c.eval.at(f, θ, d, -h); err != nil {
		return nil, nil, err
	}
	if len(p) != len(m) {
		return nil, nil, fmt.Errorf("f has %d outputs at θ+hd but %d at θ−hd, want the same number", len(p), len(m))
	}
	return p, m, nil
}

// stepRange returns the largest and smallest steps of c.
func (c *checkConfig) stepRange() (hmax, hmin float64) {
	hmax, hmin = math.Inf(-1), math.Inf(1)
	for _, h := range c.steps {
		hmax, hmin = math.Max(hmax, float64(h)), math.Min(hmin, float64(h))
	}
	return hmax, hmin
}

// probeSteps returns the steps of the noise probes.
func (c *checkConfig) probeSteps() []float64 {
	_, hmin := c.stepRange()
	δ := make([]float64, len(noiseProbes))
	for k, r := range noiseProbes {
		δ[k] = r * hmin
	}
	return δ
}

// extrapolate returns the extrapolation to h = 0 of the central
// differences of output i at steps a to b, and the rounding error it
// carries, given the rounding of f's values measured by the probes
// (fnoise). The extrapolation is the value at 0 of the polynomial in h²
// through the differences: a sum of them with Lagrange's weights.
func (tb *fdTable) extrapolate(i, a, b int, fnoise float64) (v, noise float64) {
	for j := a; j <= b; j++ {
		w := 1.0
		xj := tb.h[j] * tb.h[j]
		for m := a; m <= b; m++ {
			if m != j {
				xm := tb.h[m] * tb.h[m]
				w *= xm / (xm - xj)
			}
		}
		v += w * tb.diff[j][i]
		noise += math.Abs(w) * (tb.noise[j][i] + fnoise/tb.h[j])
	}
	return v, noise
}

// estimate returns the finite-difference estimate of output i's
// derivative and its estimated error. Of the extrapolations of every run
// of two or more consecutive steps, it takes the one whose error estimate
// is least. The estimate of the run a..b is how far its extrapolation is
// from those of a..b−1 and a+1..b, plus its rounding. A single step gives
// its central difference with its rounding only. The rounding is the
// larger of what f's size implies and what the noise probes measure: how
// far their central differences are from the extrapolation of all steps,
// times their step, is the rounding of f(θ+hd) − f(θ−hd) over 2.
func (tb *fdTable) estimate(i int) (v, err float64) {
	v, err = tb.estimateRuns(i)
	return v, math.Max(err, tb.quantized(i))
}

// quantized is a lower bound on the error of output i's differences when
// f's rounding quantum shows: a central difference that is exactly 0 at
// some steps (steps or noise probes) and not at others says f did not
// change by one of its rounding steps there, not that the derivative is
// 0, so the estimate is no better than the largest of the others. When
// every difference is exactly 0, f's resolution is not known (f's size
// understates it when f is what is left of larger terms, such as a
// LogSumExp of values near 4 whose small weights move f by less than
// one of its ulps), and the finite differences judge nothing: the check
// of that output then rests on the others and, in CheckHVP and
// CheckTranspose, on the comparisons of ad with itself.
func (tb *fdTable) quantized(i int) float64 {
	zeros, most := false, 0.0
	for _, d := range tb.diff {
		zeros = zeros || d[i] == 0
		most = math.Max(most, math.Abs(d[i]))
	}
	for _, d := range tb.probe {
		zeros = zeros || d[i] == 0
		most = math.Max(most, math.Abs(d[i]))
	}
	switch {
	case !zeros:
		return 0
	case most == 0:
		return math.Inf(1)
	}
	return most
}

// estimateRuns is estimate without the quantization bound.
func (tb *fdTable) estimateRuns(i int) (v, err float64) {
	n := len(tb.h)
	ref, _ := tb.extrapolate(i, 0, n-1, 0)
	fnoise := 0.0
	for k, δ := range tb.δ {
		fnoise = math.Max(fnoise, math.Abs(tb.probe[k][i]-ref)*δ)
	}
	if n == 1 {
		return tb.extrapolate(i, 0, 0, fnoise)
	}
	err = math.Inf(1)
	v = math.NaN()
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			x, noise := tb.extrapolate(i, a, b, fnoise)
			lo, _ := tb.extrapolate(i, a, b-1, 0)
			hi, _ := tb.extrapolate(i, a+1, b, 0)
			e := math.Max(math.Abs(x-lo), math.Abs(x-hi)) + noise
			if e < err || math.IsNaN(v) {
				v, err = x, e
			}
		}
	}
	return v, err
}

// tol is the tolerance of a comparison of ad with fd, whose error is
// estimated as est; scale is the size of the terms that ad sums.
func (c *checkConfig) tol(ad, fd, est, scale float64) float64 {
	return c.rel*(math.Abs(ad)+math.Abs(fd)) + errSafety*est + c.abs*scale + floorUnits*c.eval.unit
}

// floorUnits is the absolute floor of the tolerance, in units of rounding
// of the evaluation: about 1e-6 in float32, 2e-15 in float64. It passes a
// derivative that is zero but for rounding where the function's whole
// derivative is that small, and those float32 holds as subnormal numbers.
const floorUnits = 16

// errSafety is how many times its estimated error a finite difference may
// be off.
const errSafety = 2

// stepMults are the multiples of the steps tried in turn while the
// rounding of f leaves the differences too inaccurate to judge: a nearly
// flat function is differentiated better by larger steps.
var stepMults = []float64{1, 4, 16}

// fdEstimate is the finite-difference estimate of one output's
// derivative: its value, its estimated error and the table it comes from.
type fdEstimate struct {
	v, err float64
	tb     *fdTable
}

// compare reports whether want, AD's derivative of f at θ along d per
// output, matches the finite differences. scale is the size of the terms
// AD summed into one output. It takes the differences at c's steps, and
// at larger multiples of them (stepMults) while some output's estimated
// error is the larger part of its tolerance and there are several steps;
// each output keeps the estimate of least error among those that agree
// with the estimates before. If some output does not match, compare
// returns a report naming the worst, with the differences at every step,
// their estimate and the tolerance.
func (c *checkConfig) compare(f func(ad.Var) ad.Var, θ, d []float64, want []float64, scale float64) (report string, err error) {
	var best []fdEstimate
	for _, mult := range stepMults {
		tb, err := c.table(f, θ, d, mult)
		if err != nil {
			return "", err
		}
		if n := len(tb.diff[0]); n != len(want) {
			return fmt.Sprintf("AD has %d outputs, f has %d", len(want), n), nil
		}
		if best == nil {
			best = make([]fdEstimate, len(want))
		}
		rough := false
		for i := range want {
			v, e := tb.estimate(i)
			// A larger step replaces the estimate only if it is more
			// accurate and agrees with it: far from zero the terms
			// that the extrapolation drops may not be small.
			if b := best[i]; b.tb == nil || e < b.err && math.Abs(v-b.v) <= b.err+e {
				best[i] = fdEstimate{v, e, tb}
			}
			b := best[i]
			rough = rough || !(errSafety*b.err <= c.rel*(math.Abs(want[i])+math.Abs(b.v))+c.abs*scale)
		}
		if !rough || len(c.steps) == 1 {
			break // a single step has no estimate of its truncation error
		}
	}
	worst, wi := -1.0, -1
	for i, b := range best {
		a := want[i]
		off := math.Abs(a - b.v)
		tol := c.tol(a, b.v, b.err, scale)
		if off <= tol {
			continue
		}
		// The worst output is the one farthest off relative to its
		// tolerance; NaN is worst of all.
		r := off / tol
		if math.IsNaN(r) {
			r = math.Inf(1)
		}
		if r > worst {
			worst, wi = r, i
		}
	}
	if wi < 0 {
		return "", nil
	}
	a, b := want[wi], best[wi]
	steps := make([]string, len(b.tb.h))
	for k, h := range b.tb.h {
		steps[k] = fmt.Sprintf("%.6g at step %g", b.tb.diff[k][wi], float32(h))
	}
	out := ""
	if len(want) > 1 {
		out = fmt.Sprintf("output %d: ", wi)
	}
	how := "central difference"
	if len(b.tb.h) > 1 {
		how = "Richardson extrapolation"
	}
	return fmt.Sprintf("%sAD %.6g, finite differences %.6g (%s of %s; estimated error %.3g, tolerance %.3g)",
		out, a, b.v, how, strings.Join(steps, ", "), b.err, c.tol(a, b.v, b.err, scale)), nil
}

// richardson is the Richardson extrapolation of central differences
// d1 = D(h) and d2 = D(h/ratio): (ratio²·d2 − d1)/(ratio² − 1) cancels
// their h² error term.
func richardson(d1, d2, ratio float64) float64 {
	r2 := ratio * ratio
	return (r2*d2 - d1) / (r2 - 1)
}
