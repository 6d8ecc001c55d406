package proptest_test

import (
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/proptest"
)

// scaledCopy is y = x with a VJP that scales the cotangent by vjp (1 for
// the right rule): a linear op whose transpose can be wrong by a rounding.
type scaledCopy struct{ vjp float32 }

func (*scaledCopy) Name() string { return "ScaledCopy" }
func (*scaledCopy) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*scaledCopy) Forward(f *ad.Forward)        { copy(f.Out.Data, f.In[0].Data) }
func (*scaledCopy) JVP(r *ad.Rule) ad.Var        { return r.Tangent(0) }
func (c *scaledCopy) VJP(r *ad.Rule, cot ad.Var) { r.AddGrad(0, ad.Scale(cot, float64(c.vjp))) }
func scaledCopyMap(c *scaledCopy) func(ad.Var) ad.Var {
	return func(p ad.Var) ad.Var { return ad.Scale(ad.Apply(c, ad.Attrs{}, p), 0.5) }
}

// dyadicθ is n multiples of 1/8 in [−8, 8].
func dyadicθ(n int) []float32 {
	θ := make([]float32, n)
	for i := range θ {
		θ[i] = float32((i*37)%129-64) / 8
	}
	return θ
}

// Exact passes a right linear rule on a dyadic θ, along coordinate
// directions (small θ) and dyadic random ones (large θ), and catches a
// transpose wrong by a factor 1 + 2⁻²⁰, which the default tolerance lets
// through; TransposeTol tightens the inexact check as asked.
func TestCheckTransposeExact(t *testing.T) {
	right := &scaledCopy{vjp: 1}
	off := &scaledCopy{vjp: 1 + 0x1p-20}
	for _, n := range []int{5, 40} {
		θ := dyadicθ(n)
		if r := run(func(t proptest.T) { proptest.CheckTranspose(t, scaledCopyMap(right), θ, proptest.Exact()) }); len(r.errors) > 0 {
			t.Errorf("n=%d: Exact failed a right rule: %v", n, r.errors)
		}
		if r := run(func(t proptest.T) { proptest.CheckTranspose(t, scaledCopyMap(off), θ) }); len(r.errors) > 0 {
			t.Errorf("n=%d: the default tolerance failed a transpose off by 2⁻²⁰: %v", n, r.errors)
		}
		r := run(func(t proptest.T) { proptest.CheckTranspose(t, scaledCopyMap(off), θ, proptest.Exact()) })
		if len(r.errors) != 1 || !strings.Contains(r.errors[0], "tolerance 0") {
			t.Errorf("n=%d: Exact on a transpose off by 2⁻²⁰ reported %v, want one failure at tolerance 0", n, r.errors)
		}
		r = run(func(t proptest.T) {
			proptest.CheckTranspose(t, scaledCopyMap(off), θ, proptest.TransposeTol(1e-7, 0))
		})
		if len(r.errors) != 1 {
			t.Errorf("n=%d: TransposeTol(1e-7, 0) on a transpose off by 2⁻²⁰ reported %v, want one failure", n, r.errors)
		}
	}
}
