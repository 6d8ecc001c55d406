package proptest_test

import (
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/proptest"
)

// The wrong-rule tests in float64: the same scaledSin, now computing in
// float64 (Forward64), with its rules scaled by 1+1e-6, in front of random
// float64 functions. The generators' inputs are drawn in float32 (NoTies,
// ParamsFor, InputFor) and widened. The stacks hold only the layers that
// compute in float64 in package ad and model: Dense, Flatten,
// GlobalMeanPool, the smooth activations (Tanh, Sigmoid, Softplus, Gelu,
// Swish), Skip, Parallel and Chain. Conv, ConvTranspose, the pools but the
// global mean, BatchNorm (float32 kernels only), LayerNorm and Dropout in
// training (their constants are float32) are left out. The elementwise
// functions add a softmax and a log-sum-exp to tanh. Run with
// -rapid.checks=1000 for the catch rate over 1000 points, and
// TestCheckersPassRightRules64 with -rapid.checks=2000 for the soak.

// float64Kinds are the smooth layer kinds that compute in float64.
var float64Kinds = []proptest.Kind{
	proptest.Dense, proptest.Flatten, proptest.GlobalMeanPool,
	proptest.Tanh, proptest.Sigmoid, proptest.Softplus, proptest.Gelu, proptest.Swish,
	proptest.Skip, proptest.Parallel, proptest.Chain,
}

var (
	rightSin64       = &scaledSin{1, 1, 1}
	wrongSinVJP64    = &scaledSin{1 + 1e-6, 1, 1}
	wrongSinJVP64    = &scaledSin{1, 1 + 1e-6, 1}
	wrongSinSecond64 = &scaledSin{1, 1, 1 + 1e-6}
)

// elementwise64 are the maps of u = c ⊙ sin θ that drawFunc64 draws.
var elementwise64 = []struct {
	desc string
	f    func(u ad.Var) ad.Var
}{
	{"tanh(c ⊙ sin θ)", ad.Tanh},
	{"softmax(c ⊙ sin θ)", func(u ad.Var) ad.Var { return ad.Softmax(u, 0) }},
	{"logsumexp(c ⊙ sin θ) + tanh(c ⊙ sin θ)", func(u ad.Var) ad.Var { return ad.Add(ad.LogSumExp(u, 0), ad.Tanh(u)) }},
}

// drawFunc64 draws an elementwise function or a smooth stack of the
// float64 layers, with a point.
func drawFunc64(t *rapid.T) randomFunc[float64] {
	if rapid.Bool().Draw(t, "stack") {
		return drawStackFunc64(t)
	}
	n := rapid.IntRange(1, 40).Draw(t, "n")
	θ := widen(proptest.NoTies(n).Draw(t, "θ"))
	c := widen(proptest.NoTies(n).Draw(t, "c"))
	w := widen(proptest.NoTies(n).Draw(t, "w")) // a softmax's sum is constant; a weighted sum is not
	e := rapid.SampledFrom(elementwise64).Draw(t, "map")
	out := func(s *scaledSin) func(ad.Var) ad.Var {
		return func(p ad.Var) ad.Var {
			cv := p.Tape().Const64(flat.Tensor64{Shape: []int{n}, Data: c})
			return e.f(ad.Mul(cv, ad.Apply(s, ad.Attrs{}, p)))
		}
	}
	return randomFunc[float64]{desc: e.desc, θ: θ, out: out, loss: func(s *scaledSin) func(ad.Var) ad.Var {
		y := out(s)
		return func(p ad.Var) ad.Var {
			return ad.Sum(ad.Mul(p.Tape().Const64(flat.Tensor64{Shape: []int{n}, Data: w}), y(p)))
		}
	}}
}

// drawStackFunc64 is drawStackFunc in float64: v = [θ; x] is a float64
// Param, and the stack holds float64 layers only.
func drawStackFunc64(t *rapid.T) randomFunc[float64] {
	st := proptest.Stacks(proptest.StackOptions{Smooth: true, Kinds: float64Kinds}).Draw(t, "net")
	θ := proptest.ParamsFor(st).Draw(t, "θ")
	x := proptest.InputFor(st).Draw(t, "x")
	w := widen(proptest.Floats(numel(st.Out)).Draw(t, "w"))
	nθ := len(θ)
	out := func(s *scaledSin) func(ad.Var) ad.Var {
		return func(v ad.Var) ad.Var {
			u := ad.Apply(s, ad.Attrs{}, v)
			var p ad.Var
			if nθ > 0 {
				p = ad.Slice(u, 0, nθ)
			}
			return st.Net.Apply(st.Ctx(false), p, ad.View(u, nθ, st.In...))
		}
	}
	return randomFunc[float64]{desc: st.Desc, θ: widen(append(θ, x...)), out: out, loss: func(s *scaledSin) func(ad.Var) ad.Var {
		y := out(s)
		return func(v ad.Var) ad.Var {
			wv := v.Tape().Const64(flat.Tensor64{Shape: st.Out, Data: w})
			return ad.Sum(ad.Mul(wv, y(v)))
		}
	}}
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// At every drawn point, CheckGrad with default options catches a float64
// VJP scaled by 1+1e-6, CheckJVP a JVP so scaled, and CheckHVP a Hessian
// so scaled under a right gradient. CheckTranspose, with its default
// tolerance, catches the VJP too: the JVP is right.
func TestCheckersCatchRulesWrongByOneIn1e6(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fn := drawFunc64(t)
		if _, g, err := ad.ValueAndGrad64(fn.loss(rightSin64), fn.θ); err != nil || absMax64(g) == 0 {
			t.Skipf("the loss through %s is constant (%v)", fn.desc, err)
		}
		by := "×(1+1e-6)"
		mustCatch(t, fn.desc, len(fn.θ), append(wrongChecks(fn, by, wrongSinVJP64, wrongSinJVP64, wrongSinSecond64),
			wrongCheck{"CheckTranspose, VJP " + by, "CheckTranspose: ", func(pt proptest.T) { proptest.CheckTranspose(pt, fn.out(wrongSinVJP64), fn.θ) }}))
	})
}

func absMax64(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// The same functions with right rules pass every check at a tolerance of
// 1e-8, ten times tighter than the float64 defaults.
func TestCheckersPassRightRules64(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fn := drawFunc64(t)
		tol := proptest.Tol(1e-8, 1e-8)
		proptest.CheckGrad(t, fn.loss(rightSin64), fn.θ, tol)
		proptest.CheckJVP(t, fn.out(rightSin64), fn.θ, tol)
		proptest.CheckHVP(t, fn.loss(rightSin64), fn.θ, tol)
		proptest.CheckTranspose(t, fn.out(rightSin64), fn.θ)
	})
}

// A float64 check of a function that returns a float32 value stops with
// an error that names both precisions.
func TestFloat64CheckOfFloat32Result(t *testing.T) {
	θ := []float64{0.5, -0.25}
	f := func(p ad.Var) ad.Var { return ad.Sum(ad.Convert(ad.Tanh(p), ad.Float32)) }
	r := run(func(pt proptest.T) { proptest.CheckGrad(pt, f, θ) })
	if !r.fatal || len(r.errors) != 1 || !strings.Contains(r.errors[0], "float32") || !strings.Contains(r.errors[0], "float64") {
		t.Fatalf("CheckGrad of a float32 result at a float64 θ: %q (fatal %v); want a fatal error naming float32 and float64", r.errors, r.fatal)
	}
}
