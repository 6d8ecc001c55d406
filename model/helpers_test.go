package model_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/wanterr"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

// Helpers shared by the package's tests.

// applyLayer runs l on x with parameters θ and context c on a fresh tape and
// returns the output values.
func applyLayer(t *testing.T, l model.Layer, c *model.Ctx, θ []float32, x flat.Tensor) flat.Tensor {
	t.Helper()
	tp := ad.NewTape()
	var p ad.Var
	if len(θ) > 0 {
		p = tp.Param(θ)
	}
	y := l.Apply(c, p, tp.Const(x))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	return flat.Tensor{Shape: slices.Clone(y.Shape()), Data: slices.Clone(y.Data())}
}

// mustLayout is l's parameter layout; it fails t if l is misconfigured.
func mustLayout(t *testing.T, l model.Layer) *layout.Layout {
	t.Helper()
	lay, err := model.Layout(l)
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// paths is lay's leaf paths in order.
func paths(t *testing.T, lay *layout.Layout) []string {
	t.Helper()
	var out []string
	for _, l := range lay.Leaves() {
		out = append(out, l.Path)
	}
	return out
}

// layerCase is a named layer and the strings a test wants of it: the
// words its configuration error mentions, or its parameters' paths.
type layerCase struct {
	name string
	net  model.Layer
	want []string
}

// checkDerivatives checks f's gradient, its transpose (VJP against JVP)
// and its Hessian-vector products at θ.
func checkDerivatives(rt *rapid.T, f func(ad.Var) ad.Var, θ []float32) {
	rt.Helper()
	proptest.CheckGrad(rt, f, θ)
	proptest.CheckTranspose(rt, f, θ)
	proptest.CheckHVP(rt, f, θ)
}

// checkMentions fails t unless err is an error whose text contains each
// of want.
func checkMentions(t *testing.T, err error, want []string) {
	t.Helper()
	wanterr.Mentions(t, err, want...)
}

// checkLayoutError checks that model.Layout rejects l with an error
// mentioning each of want, and returns that error.
func checkLayoutError(t *testing.T, l model.Layer, want []string) error {
	t.Helper()
	_, err := model.Layout(l)
	if err == nil {
		t.Fatal("Layout accepted the configuration")
	}
	checkMentions(t, err, want)
	return err
}

// checkBound fails t if a value of θ lies outside ±bound (an initialiser's
// range) and returns the sum of squares of θ[:nw], the weights.
func checkBound(t *testing.T, θ []float32, bound float64, nw int) (sum2 float64) {
	t.Helper()
	for i, v := range θ {
		if math.Abs(float64(v)) > bound {
			t.Fatalf("θ[%d] = %g outside ±%g", i, v, bound)
		}
		if i < nw {
			sum2 += float64(v) * float64(v)
		}
	}
	return sum2
}

// checkStepAllocs checks that a warm training step of l on x (Apply with c
// on tp, the gradient of Σ y², Reset) allocates nothing over runs steps;
// what names the step in the report.
func checkStepAllocs(t *testing.T, what string, l model.Layer, c *model.Ctx, tp *ad.Tape, θ []float32, x flat.Tensor, runs int) {
	t.Helper()
	step := func() {
		y := l.Apply(c, tp.Param(θ), tp.Const(x))
		if _, err := tp.Grad(ad.Sum(ad.Square(y))); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}
	step()
	if n := testing.AllocsPerRun(runs, step); n != 0 {
		t.Errorf("%s allocates %v times, want 0", what, n)
	}
}

// numel is the number of elements of a tensor of shape s.
func numel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}
