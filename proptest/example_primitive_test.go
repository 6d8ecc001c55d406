package proptest_test

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/proptest"
)

// Cube is a user's own op, x³ elementwise, with its forward-mode and
// reverse-mode rules written with ad ops (so that they have derivatives
// too, and the checkers can test second order).
type Cube struct{}

func (Cube) Name() string { return "Cube" }

func (Cube) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}

func (Cube) Forward(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = x * x * x
	}
}

// dCube is 3x², the elementwise derivative, written with ad ops.
func dCube(x ad.Var) ad.Var { return ad.Scale(ad.Mul(x, x), 3) }

// JVP: the output's tangent is 3x²·ẋ.
func (Cube) JVP(r *ad.Rule) ad.Var { return ad.Mul(r.Tangent(0), dCube(r.In[0])) }

// VJP: the input's cotangent is 3x²·ȳ.
func (Cube) VJP(r *ad.Rule, cot ad.Var) { r.AddGrad(0, ad.Mul(cot, dCube(r.In[0]))) }

// badCube is Cube with a wrong reverse-mode rule (x² instead of 3x²).
type badCube struct{ Cube }

func (badCube) VJP(r *ad.Rule, cot ad.Var) { r.AddGrad(0, ad.Mul(cot, ad.Mul(r.In[0], r.In[0]))) }

// countT is a proptest.T that counts the checkers' reports; in a test, pass
// the *testing.T (or the *rapid.T of rapid.Check) instead, which prints
// them: index, direction, step and tolerance.
type countT struct{ reports int }

func (*countT) Helper()                     {}
func (c *countT) Errorf(string, ...any)     { c.reports++ }
func (c *countT) Fatalf(f string, a ...any) { c.Errorf(f, a...) }

// A user's Primitive and the checkers that test its rules: CheckJVP and
// CheckTranspose on the op itself, CheckGrad and CheckHVP on a scalar loss
// through it. In a test, draw θ with rapid (proptest.NoTies, Positive)
// inside rapid.Check and pass the *rapid.T.
func Example_primitive() {
	cube := func(p ad.Var) ad.Var { return ad.Apply(Cube{}, ad.Attrs{}, p) }
	loss := func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(cube(p))) }
	θ := []float32{0.3, -0.7, 0.9, 0.5}

	t := &countT{}
	proptest.CheckJVP(t, cube, θ)
	proptest.CheckTranspose(t, cube, θ)
	proptest.CheckGrad(t, loss, θ)
	proptest.CheckHVP(t, loss, θ)
	fmt.Println("reports for Cube:", t.reports)

	bad := func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(ad.Apply(badCube{}, ad.Attrs{}, p))) }
	t = &countT{}
	proptest.CheckGrad(t, bad, θ)
	fmt.Println("reports for a wrong VJP:", t.reports)
	// Output:
	// reports for Cube: 0
	// reports for a wrong VJP: 1
}
