package ad_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/proptest"
)

// opCase is one row of the per-op table: a function of a flat parameter
// vector of size n, built from the op under test, checked in the style of
// JAX's check_grads (first and second order, both modes, one random
// direction, plus the transpose identity).
type opCase struct {
	name string
	n    int
	// f maps the parameter Var to the op's output; c holds constants drawn
	// for this case (same length as the op's second operand, if any).
	f  func(p ad.Var, c []float32) ad.Var
	nc int // number of constants
}

func constOf(p ad.Var, c []float32, shape ...int) ad.Var {
	return p.Tape().Const(flat.Tensor{Shape: shape, Data: c})
}

var coreOps = []opCase{
	{name: "Add same shape", n: 6, nc: 6, f: func(p ad.Var, c []float32) ad.Var {
		return ad.Add(ad.Reshape(p, 2, 3), constOf(p, c, 2, 3))
	}},
	{name: "Add trailing broadcast", n: 6, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Add(ad.View(p, 0, 2, 2), ad.View(p, 4, 2)) // (2,2) + (2)
	}},
	{name: "Add per-channel broadcast", n: 2*3*2*2 + 3, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Add(ad.View(p, 0, 2, 3, 2, 2), ad.View(p, 24, 3, 1, 1)) // (N,C,H,W) + (C,1,1)
	}},
	{name: "Sub broadcast both ways", n: 5, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Sub(ad.View(p, 0, 3, 1), ad.View(p, 3, 1, 2)) // (3,1) − (1,2) → (3,2)
	}},
	{name: "Mul", n: 6, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Mul(ad.View(p, 0, 3), ad.View(p, 3, 3))
	}},
	{name: "Mul broadcast", n: 8, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Mul(ad.View(p, 0, 2, 3), ad.View(p, 6, 2, 1))
	}},
	{name: "Div", n: 6, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Div(ad.View(p, 0, 3), ad.Add(ad.Mul(ad.View(p, 3, 3), ad.View(p, 3, 3)), p.Tape().Scalar(1)))
	}},
	{name: "Neg", n: 4, f: func(p ad.Var, _ []float32) ad.Var { return ad.Neg(p) }},
	{name: "Scale", n: 4, f: func(p ad.Var, _ []float32) ad.Var { return ad.Scale(p, -2.5) }},
	{name: "Sum all", n: 6, f: func(p ad.Var, _ []float32) ad.Var { return ad.Sum(ad.Reshape(p, 2, 3)) }},
	{name: "Sum axis 0", n: 6, f: func(p ad.Var, _ []float32) ad.Var { return ad.Sum(ad.Reshape(p, 2, 3), 0) }},
	{name: "Sum axes 0,2", n: 24, f: func(p ad.Var, _ []float32) ad.Var { return ad.Sum(ad.Reshape(p, 2, 3, 4), 0, 2) }},
	{name: "Mean axis -1", n: 6, f: func(p ad.Var, _ []float32) ad.Var { return ad.Mean(ad.Reshape(p, 2, 3), -1) }},
	{name: "SumTo", n: 12, f: func(p ad.Var, _ []float32) ad.Var { return ad.SumTo(ad.Reshape(p, 2, 3, 2), 3, 1) }},
	{name: "BroadcastTo", n: 3, f: func(p ad.Var, _ []float32) ad.Var { return ad.BroadcastTo(ad.Reshape(p, 3, 1), 2, 3, 4) }},
	{name: "Tanh", n: 5, f: func(p ad.Var, _ []float32) ad.Var { return ad.Tanh(p) }},
	{name: "MatMul", n: 6 + 12, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMul(ad.View(p, 0, 2, 3), ad.View(p, 6, 3, 4))
	}},
	{name: "MatMulT aᵀ", n: 6 + 12, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMulT(ad.View(p, 0, 3, 2), ad.View(p, 6, 3, 4), true, false)
	}},
	{name: "MatMulT bᵀ", n: 6 + 12, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMulT(ad.View(p, 0, 2, 3), ad.View(p, 6, 4, 3), false, true)
	}},
	{name: "MatMulT aᵀbᵀ", n: 6 + 12, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMulT(ad.View(p, 0, 3, 2), ad.View(p, 6, 4, 3), true, true)
	}},
	{name: "MatMul batched", n: 12 + 24, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMul(ad.View(p, 0, 2, 2, 3), ad.View(p, 12, 2, 3, 4))
	}},
	{name: "MatMul batched × shared", n: 12 + 12, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.MatMulT(ad.View(p, 0, 2, 2, 3), ad.View(p, 12, 4, 3), false, true)
	}},
	{name: "MatMul with a constant", n: 6, nc: 12, f: func(p ad.Var, c []float32) ad.Var {
		return ad.MatMul(ad.Reshape(p, 2, 3), constOf(p, c, 3, 4))
	}},
	{name: "Transpose", n: 24, f: func(p ad.Var, _ []float32) ad.Var { return ad.Transpose(ad.Reshape(p, 2, 3, 4), 2, 0, 1) }},
	{name: "Transpose of a matrix", n: 6, f: func(p ad.Var, _ []float32) ad.Var { return ad.Transpose(ad.Reshape(p, 2, 3), 1, 0) }},
	{name: "Reshape -1", n: 6, f: func(p ad.Var, _ []float32) ad.Var { return ad.Reshape(p, 3, -1) }},
	{name: "View", n: 10, f: func(p ad.Var, _ []float32) ad.Var { return ad.View(p, 3, 2, 2) }},
	{name: "Slice of a product", n: 8, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Slice(ad.Reshape(ad.Mul(p, p), 4, 2), 1, 3)
	}},
	{name: "Concat along axis 0", n: 9, f: func(p ad.Var, _ []float32) ad.Var {
		return ad.Concat(0, ad.View(p, 0, 1, 3), ad.Mul(ad.View(p, 3, 1, 3), ad.View(p, 3, 1, 3)), ad.View(p, 6, 1, 3))
	}},
}

// TestCoreOps runs every row of the table as a rapid property.
func TestCoreOps(t *testing.T) {
	for _, tc := range coreOps {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				θ := proptest.NoTies(tc.n).Draw(rt, "θ")
				c := proptest.NoTies(tc.nc).Draw(rt, "c")
				f := func(p ad.Var) ad.Var { return tc.f(p, c) }
				proptest.CheckJVP(rt, f, θ)
				proptest.CheckTranspose(rt, f, θ)
				// Σ y² weighs every output by itself, so no output's
				// derivative can hide behind another's, and makes linear ops
				// have a nonzero second derivative to check.
				sumsq := func(p ad.Var) ad.Var { y := f(p); return ad.Sum(ad.Mul(y, y)) }
				proptest.CheckGrad(rt, sumsq, θ)
				proptest.CheckHVP(rt, sumsq, θ)
			})
		})
	}
}
