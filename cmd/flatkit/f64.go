package main

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/kinetics"
	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
	"github.com/flatkit/flatkit/ode/odead"
)

// Scenario f64: the derivative products of a right-hand side written
// with ad ops, against the same function written by hand in float64 Go,
// per call (issue 33's "Speed"). Two chemical kinetics networks of
// internal/kinetics:
//
//	robertson  3 species, 3 reactions (cvsRoberts_ASAi_dns)
//	pollu      20 species, 25 reactions (the Test Set's POLLU)
//
// Each is timed for F, JVP and VJP (state directions only, as the stiff
// methods call them), JVP+p and VJP+p (with the rates' directions, as
// the sensitivity methods call them), the dense Jacobian Jac and, for
// POLLU, its CSR Jacobian JacSparse (ode.SparseJacobian, by colour-seeded
// forward sweeps on the ad side). The ad side goes through the ode/odead
// bridge, as a solve calls it, replayed (odead.Replayable, case
// "<problem>/<product>") and recorded at every call ("…/record"). The
// hand side is kinetics.Robertson and stiffprob.Pollu.
//
// Each line carries median (the ad side, ns per call), hand_median (the
// hand-written side, ns per call, measured just before it), ratio
// (median ÷ hand_median), allocs (the ad side's, per call), hand_allocs,
// precision (of the ad side's values), replay, and max_rel_diff, the
// largest difference of the two sides' results relative to the largest
// hand-written value: they compute the same thing.
//
// The ad side computes in float64 (odead.Derivs64), as the hand-written
// side does.

func init() {
	register(scenario{
		name:  "f64",
		about: "ad-written Robertson and POLLU vs hand-written Go: F, JVP, VJP, Jac per call, replayed and recorded",
		run:   runF64,
	})
}

// f64Float is the element type of the ad side's states.
type f64Float = float64

// f64Precision names f64Float in the lines.
const f64Precision = "float64"

// f64Bridge makes the ad side's problem from a right-hand side written
// with ad ops: F, Jac, JVP and VJP in float64, and Jac in the CSR storage
// of pat when pat is not nil.
func f64Bridge(f func(u, p ad.Var, t float64) ad.Var, n int, replay bool, pat *linalg.Pattern) ode.Problem[f64Float] {
	var opts []odead.Option
	if replay {
		opts = append(opts, odead.Replayable())
	}
	if pat != nil {
		opts = append(opts, odead.JacPattern(pat))
	}
	return odead.Derivs64(f, n, opts...)
}

// f64Problem is one problem of the scenario: its ad right-hand side, its
// hand-written products and the point they are evaluated at.
type f64Problem struct {
	name    string
	ad      func(u, p ad.Var, t float64) ad.Var
	hand    ode.Problem[float64]                         // F, Jac, JVP, VJP
	sparse  func(J, u []float64, p []float32, t float64) // the CSR Jacobian, or nil
	pattern *linalg.Pattern                              // its pattern
	u       []float64                                    // the state
	p       []float32                                    // the rates
}

func f64Problems() []f64Problem {
	var rob kinetics.Robertson[float64]
	var pl stiffprob.Pollu[float64]
	// POLLU half-way from y0 to y(60), off its quasi-equilibrium, so that
	// F does not cancel to rounding.
	pu := pl.U0()
	for i := range pu {
		pu[i] = (pu[i] + stiffprob.PolluRef[i]) / 2
	}
	return []f64Problem{
		{name: "robertson", ad: kinetics.RobertsonAD, hand: ode.Problem[float64]{F: rob.F, Jac: rob.Jac, JVP: rob.JVP, VJP: rob.VJP},
			u: []float64{0.7, 2e-5, 0.3}, p: kinetics.RobertsonRates()},
		{name: "pollu", ad: kinetics.PolluAD, hand: ode.Problem[float64]{F: pl.F, Jac: pl.Jac, JVP: pl.JVP, VJP: pl.VJP},
			sparse: pl.JacSparse, pattern: pl.Pattern(), u: pu, p: stiffprob.PolluRates()},
	}
}

// f64Op is one product timed on both sides: ad and hand each make one
// call, and adOut and handOut are the results they leave, compared for
// max_rel_diff.
type f64Op struct {
	name     string
	ad, hand func()
	adOut    []f64Float
	handOut  []float64
}

// f64Ops returns the products of pr with the ad side ap (and sp, its
// sparse-Jacobian problem, when pr has a pattern), at pr's point and
// fixed directions.
func f64Ops(pr f64Problem, ap, sp ode.Problem[f64Float]) []f64Op {
	n, np := len(pr.u), len(pr.p)
	u, p, h := pr.u, pr.p, pr.hand
	v, w, dp := make([]float64, n), make([]float64, n), make([]float64, np)
	for i := range v {
		v[i], w[i] = math.Sin(float64(i)+1), math.Cos(float64(i)+1)
	}
	for i := range dp {
		dp[i] = float64(p[i]) * math.Sin(float64(i)+2)
	}
	u32, v32, w32, dp32 := f64Convert(u), f64Convert(v), f64Convert(w), f64Convert(dp)
	// VJP adds into its outputs: each call clears them first, on both
	// sides alike.
	b := func(k int) ([]f64Float, []float64) { return make([]f64Float, k), make([]float64, k) }
	fa, fh := b(n)
	ja, jh := b(n * n)
	jva, jvh := b(n)
	jpa, jph := b(n)
	vja, vjh := b(n)
	vpa, vph := b(n + np)
	ops := []f64Op{
		{"F", func() { ap.F(fa, u32, p, 0) }, func() { h.F(fh, u, p, 0) }, fa, fh},
		{"JVP", func() { ap.JVP(jva, u32, v32, p, nil, 0) }, func() { h.JVP(jvh, u, v, p, nil, 0) }, jva, jvh},
		{"VJP", func() { clear(vja); ap.VJP(vja, nil, w32, u32, p, 0) },
			func() { clear(vjh); h.VJP(vjh, nil, w, u, p, 0) }, vja, vjh},
		{"JVP+p", func() { ap.JVP(jpa, u32, v32, p, dp32, 0) }, func() { h.JVP(jph, u, v, p, dp, 0) }, jpa, jph},
		{"VJP+p", func() { clear(vpa); ap.VJP(vpa[:n], vpa[n:], w32, u32, p, 0) },
			func() { clear(vph); h.VJP(vph[:n], vph[n:], w, u, p, 0) }, vpa, vph},
		{"Jac", func() { ap.Jac(ja, u32, p, 0) }, func() { h.Jac(jh, u, p, 0) }, ja, jh},
	}
	if pr.pattern != nil {
		sa, sh := b(pr.pattern.NNZ())
		ops = append(ops, f64Op{"JacSparse", func() { sp.Jac(sa, u32, p, 0) }, func() { pr.sparse(sh, u, p, 0) }, sa, sh})
	}
	return ops
}

// f64Convert converts x to the ad side's element type.
func f64Convert(x []float64) []f64Float {
	y := make([]f64Float, len(x))
	for i, v := range x {
		y[i] = f64Float(v)
	}
	return y
}

// f64Result is a figure with the scenario's extra fields.
type f64Result struct {
	result
	HandMedian float64 `json:"hand_median"`
	HandAllocs float64 `json:"hand_allocs"`
	Ratio      float64 `json:"ratio"`
	Precision  string  `json:"precision"`
	Replay     bool    `json:"replay"`
	MaxRelDiff float64 `json:"max_rel_diff"`
}

func runF64(b *bencher) error {
	for _, pr := range f64Problems() {
		n := len(pr.u)
		for _, replay := range []bool{true, false} {
			ap := f64Bridge(pr.ad, n, replay, nil)
			var sp ode.Problem[f64Float]
			if pr.pattern != nil {
				sp = f64Bridge(pr.ad, n, replay, pr.pattern)
			}
			for _, op := range f64Ops(pr, ap, sp) {
				if err := b.f64Figure(pr.name, op, replay, ap, sp); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// f64Figure times one product on both sides, checks that they agree, and
// emits its line.
func (b *bencher) f64Figure(problem string, op f64Op, replay bool, probs ...ode.Problem[f64Float]) error {
	name := problem + "/" + op.name
	if !replay {
		name += "/record"
	}
	hs := b.measure(op.hand)
	as := b.measure(op.ad)
	for _, pr := range probs {
		if pr.Err == nil {
			continue
		}
		if err := pr.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	diff, scale := 0.0, 0.0
	for i, h := range op.handOut {
		diff = max(diff, math.Abs(float64(op.adOut[i])-h))
		scale = max(scale, math.Abs(h))
	}
	if scale > 0 {
		diff /= scale
	}
	r := f64Result{result: result{Case: name, Median: as.median, Min: as.min, Max: as.max, Unit: "ns",
		Allocs: as.allocs, Samples: as.samples, Inner: as.inner, N: len(op.handOut)},
		HandMedian: round3(hs.median), HandAllocs: round3(hs.allocs), Ratio: round3(as.median / hs.median),
		Precision: f64Precision, Replay: replay, MaxRelDiff: diff}
	if !(diff <= 1e-3) { // float32 against float64: a few roundings
		return fmt.Errorf("%s: the ad and hand-written results differ by %.3g of their largest value", name, diff)
	}
	b.emitExtra(&r.result, &r)
	return nil
}
