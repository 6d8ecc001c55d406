package ad

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/wanterr"
)

// opCounts counts the ops recorded on t from node lo on, by name.
func opCounts(t *Tape, lo int) map[string]int {
	m := map[string]int{}
	for _, nd := range t.nodes[lo:] {
		if nd.kind == kindOp {
			m[nd.prim.Name()]++
		}
	}
	return m
}

// wantOneMask checks that a derivative sweep recorded exactly one
// MaskPositive and neither of the two ops it replaces.
func wantOneMask(t *testing.T, what string, got map[string]int) {
	t.Helper()
	if got["MaskPositive"] != 1 || got["Indicator"] != 0 || got["Mul"] != 0 {
		t.Errorf("%s recorded %v; want one MaskPositive and no Indicator or Mul", what, got)
	}
}

// TestReluRulesRecordOneMask checks that Relu's and ConvBiasRelu's rules,
// in both modes, mask the tangent or cotangent with one MaskPositive op
// rather than a product with an Indicator.
func TestReluRulesRecordOneMask(t *testing.T) {
	θ := []float32{-2, -0.5, 0, float32(math.Copysign(0, -1)), 0.5, 2, 3, -3, 1}
	dir := flat.Tensor{Shape: []int{len(θ)}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}}
	conv := func(p Var) Var {
		tp := p.Tape()
		w := tp.Const(flat.Tensor{Shape: []int{2, 1, 2, 2}, Data: []float32{1, -1, 0.5, 2, -1, 1, 1, -0.5}})
		b := tp.Const(flat.Tensor{Shape: []int{2}, Data: []float32{0.25, -0.25}})
		return ConvBiasRelu(Reshape(p, 1, 1, 3, 3), w, b, ConvGeom{})
	}
	for _, c := range []struct {
		name string
		f    func(Var) Var
	}{{"Relu", Relu}, {"ConvBiasRelu", conv}} {
		tp := NewTape()
		y := c.f(tp.Param(θ))
		loss := Sum(y)
		lo := tp.Len()
		if err := tp.Backward(loss); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		wantOneMask(t, c.name+"'s reverse sweep", opCounts(tp, lo))

		tp = NewTape()
		x, d := tp.Param(θ), tp.Const(dir)
		lo = tp.Len()
		JVPVar(c.f, x, d)
		if err := tp.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := opCounts(tp, lo)
		delete(got, "Relu") // JVPVar records f itself
		delete(got, "ConvBiasRelu")
		wantOneMask(t, c.name+"'s forward sweep", got)
	}
}

// TestMaskPositiveRules checks maskPositive's value and that its
// derivatives route through c only: nothing reaches y, in either mode.
func TestMaskPositiveRules(t *testing.T) {
	c := flat.Tensor{Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}
	y := flat.Tensor{Shape: []int{2, 3}, Data: []float32{-1, 0, 1, float32(math.NaN()), 2, -3}}
	tp := NewTape()
	cv, yv := tp.Param(c.Data), tp.Const(y)
	got := maskPositive(Reshape(cv, 2, 3), yv)
	if want := []float32{0, 0, 3, 0, 5, 0}; !slices.Equal(got.Data(), want) {
		t.Errorf("maskPositive = %v, want %v", got.Data(), want)
	}
	if _, err := tp.Grad(Sum(got)); err != nil {
		t.Fatal(err)
	}
	if g, want := tp.GradWrt(cv), []float32{0, 0, 1, 0, 1, 0}; !slices.Equal(g, want) {
		t.Errorf("gradient with respect to c = %v, want %v", g, want)
	}

	// With respect to y: a zero gradient and a zero tangent, with no op
	// recorded for either.
	tp = NewTape()
	cv, yp := tp.Const(c), tp.Param(y.Data)
	f := func(v Var) Var { return maskPositive(cv, Reshape(v, 2, 3)) }
	lo := tp.Len()
	g := GradVar(func(v Var) Var { return Sum(f(v)) }, yp)
	tan := JVPVar(f, yp, tp.Full(1, len(y.Data)))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(g.Data(), func(v float32) bool { return v != 0 }) ||
		slices.ContainsFunc(tan.Data(), func(v float32) bool { return v != 0 }) {
		t.Errorf("derivatives with respect to y: gradient %v, tangent %v; want zeros", g.Data(), tan.Data())
	}
	if n := opCounts(tp, lo)["MaskPositive"]; n != 2 {
		t.Errorf("recorded %d MaskPositive ops, want 2 (one per call of f)", n)
	}
}

func TestMaskPositiveShapeError(t *testing.T) {
	tp := NewTape()
	maskPositive(tp.Full(1, 2, 3), tp.Full(1, 3, 2))
	err := tp.Err()
	if err == nil {
		t.Fatal("no error for mismatched shapes")
	}
	wanterr.Mentions(t, err, "MaskPositive", "[2 3]", "[3 2]")
}
