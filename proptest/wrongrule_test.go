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

// The default checkers against finite differences must catch a rule
// wrong by 1 %, at every point, and pass right rules. These tests put a
// correct primitive, sin, with its rules scaled by 1.01, in front of a
// random function of the existing generators: elementwise functions of
// NoTies inputs, and random smooth stacks of layers (Stacks, ParamsFor,
// InputFor). Since every input goes through it first, a VJP scaled by
// 1.01 scales the whole gradient, a JVP the whole J·d, and a VJP rule
// whose derivative is scaled the whole Hessian. (A stack whose output
// reads only padding is constant; it is skipped.) Run with
// -rapid.checks=1000 for the catch rate over 1000 points, and
// TestCheckersPassRightRules with -rapid.checks=2000 for the soak.

// scaledSin is sin elementwise, a right primitive whose rules are scaled:
// its VJP by vjp, its JVP by jvp, and the derivative of its VJP rule by
// second, which leaves the rule's value right. 1 is right.
type scaledSin struct{ vjp, jvp, second float64 }

func (*scaledSin) Name() string { return "ScaledSin" }
func (*scaledSin) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*scaledSin) Forward(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = float32(math.Sin(float64(x)))
	}
}
func (*scaledSin) Forward64(f *ad.Forward) {
	for i, x := range f.In64[0].Data {
		f.Out64.Data[i] = math.Sin(x)
	}
}
func (s *scaledSin) JVP(r *ad.Rule) ad.Var {
	return ad.Scale(ad.Mul(r.Tangent(0), ad.Cos(r.In[0])), s.jvp)
}
func (s *scaledSin) VJP(r *ad.Rule, cot ad.Var) {
	g := ad.Mul(cot, ad.Cos(r.In[0]))
	if s.second != 1 {
		// g + (second−1)·(g − g held constant) has g's value and
		// second times its derivative.
		g = ad.Add(g, ad.Scale(ad.Sub(g, ad.StopGradient(g)), s.second-1))
	}
	r.AddGrad(0, ad.Scale(g, s.vjp))
}

var (
	rightSin       = &scaledSin{1, 1, 1}
	wrongSinVJP    = &scaledSin{1.01, 1, 1}
	wrongSinJVP    = &scaledSin{1, 1.01, 1}
	wrongSinSecond = &scaledSin{1, 1, 1.01}
)

// randomFunc is a random function of θ through a scaledSin: a map, and a
// scalar loss of it.
type randomFunc[F flat.Float] struct {
	desc string
	θ    []F
	out  func(s *scaledSin) func(ad.Var) ad.Var
	loss func(s *scaledSin) func(ad.Var) ad.Var
}

// drawFunc draws an elementwise function or a smooth stack of layers, with
// a point.
func drawFunc(t *rapid.T) randomFunc[float32] {
	if rapid.Bool().Draw(t, "stack") {
		return drawStackFunc(t)
	}
	n := rapid.IntRange(1, 40).Draw(t, "n")
	θ := proptest.NoTies(n).Draw(t, "θ")
	c := proptest.NoTies(n).Draw(t, "c")
	out := func(s *scaledSin) func(ad.Var) ad.Var {
		return func(p ad.Var) ad.Var {
			cv := p.Tape().Const(flat.Tensor{Shape: []int{n}, Data: c})
			return ad.Tanh(ad.Mul(cv, ad.Apply(s, ad.Attrs{}, p)))
		}
	}
	return randomFunc[float32]{desc: "tanh(c ⊙ sin θ)", θ: θ, out: out, loss: func(s *scaledSin) func(ad.Var) ad.Var {
		y := out(s)
		return func(p ad.Var) ad.Var { return ad.Sum(y(p)) }
	}}
}

// drawStackFunc draws a smooth stack s and v = [θ; x], and maps v to
// s.Net applied to sin v: the parameters sin θ and the input sin x.
func drawStackFunc(t *rapid.T) randomFunc[float32] {
	st := proptest.Stacks(proptest.StackOptions{Smooth: true}).Draw(t, "net")
	θ := proptest.ParamsFor(st).Draw(t, "θ")
	x := proptest.InputFor(st).Draw(t, "x")
	w := proptest.Floats(numel(st.Out)).Draw(t, "w")
	train := rapid.Bool().Draw(t, "train")
	nθ := len(θ)
	out := func(s *scaledSin) func(ad.Var) ad.Var {
		return func(v ad.Var) ad.Var {
			u := ad.Apply(s, ad.Attrs{}, v)
			var p ad.Var
			if nθ > 0 {
				p = ad.Slice(u, 0, nθ)
			}
			return st.Net.Apply(st.Ctx(train), p, ad.View(u, nθ, st.In...))
		}
	}
	return randomFunc[float32]{desc: st.Desc, θ: append(θ, x...), out: out, loss: func(s *scaledSin) func(ad.Var) ad.Var {
		y := out(s)
		return func(v ad.Var) ad.Var {
			wv := v.Tape().Const(flat.Tensor{Shape: st.Out, Data: w})
			return ad.Sum(ad.Mul(wv, y(v)))
		}
	}}
}

// At every drawn point, CheckGrad with default options catches a VJP
// scaled by 1.01, CheckJVP a JVP so scaled, and CheckHVP a Hessian so
// scaled under a right gradient.
func TestCheckersCatchRulesWrongByOnePercent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fn := drawFunc(t)
		// Some stacks are constant: their output reads only padding.
		// A scaled zero is zero; there is nothing to catch.
		if _, g, err := ad.ValueAndGrad(fn.loss(rightSin), fn.θ); err != nil || absMax32(g) == 0 {
			t.Skipf("the loss through %s is constant (%v)", fn.desc, err)
		}
		mustCatch(t, fn.desc, len(fn.θ), wrongChecks(fn, "×1.01", wrongSinVJP, wrongSinJVP, wrongSinSecond))
	})
}

// wrongCheck is a check of a wrong rule, and what its report must say.
type wrongCheck struct {
	name, want string
	check      func(proptest.T)
}

// wrongChecks are CheckGrad of fn's loss through vjp, CheckJVP of its map
// through jvp, and CheckHVP of its loss through second: each rule is
// wrong by the factor by.
func wrongChecks[F flat.Float](fn randomFunc[F], by string, vjp, jvp, second *scaledSin) []wrongCheck {
	// float32: the sharp tolerance, SharpTol; float64: the defaults.
	var opts []proptest.FDCheckOption
	if _, f32 := any(fn.θ).([]float32); f32 {
		opts = append(opts, proptest.SharpTol())
	}
	return []wrongCheck{
		{"CheckGrad, VJP " + by, "CheckGrad: ", func(pt proptest.T) { proptest.CheckGrad(pt, fn.loss(vjp), fn.θ, opts...) }},
		{"CheckJVP, JVP " + by, "CheckJVP: ", func(pt proptest.T) { proptest.CheckJVP(pt, fn.out(jvp), fn.θ, opts...) }},
		{"CheckHVP, HVP " + by, "finite differences of the gradient", func(pt proptest.T) { proptest.CheckHVP(pt, fn.loss(second), fn.θ, opts...) }},
	}
}

// mustCatch fails t unless every check fails with a report that says
// what it wants, through the function desc at θ of n values.
func mustCatch(t *rapid.T, desc string, n int, checks []wrongCheck) {
	for _, c := range checks {
		r := run(c.check)
		if len(r.errors) == 0 {
			t.Fatalf("%s passed through %s at θ of %d values", c.name, desc, n)
		}
		if !strings.Contains(r.errors[0], c.want) {
			t.Fatalf("%s through %s: report %q, want one that says %q", c.name, desc, r.errors[0], c.want)
		}
	}
}

func absMax32(x []float32) float32 {
	m := float32(0)
	for _, v := range x {
		m = max(m, abs(v))
	}
	return m
}

// The same functions with right rules pass every check.
func TestCheckersPassRightRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fn := drawFunc(t)
		proptest.CheckGrad(t, fn.loss(rightSin), fn.θ)
		proptest.CheckJVP(t, fn.out(rightSin), fn.θ)
		proptest.CheckHVP(t, fn.loss(rightSin), fn.θ)
	})
}
