package ad_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/proptest"
)

// MatMul with a 1-D operand: values against a plain loop, every derivative
// against the proptest checkers (θ holds the matrix and the vector).
func TestMatMulVector(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(1, 4).Draw(t, "m")
		k := rapid.IntRange(1, 4).Draw(t, "k")
		trans := rapid.Bool().Draw(t, "transA")
		θ := proptest.NoTies(m*k+k).Draw(t, "θ")
		mat := func(p ad.Var) ad.Var {
			if trans {
				return ad.View(p, 0, k, m)
			}
			return ad.View(p, 0, m, k)
		}
		vec := func(p ad.Var) ad.Var { return ad.View(p, m*k, k) }
		mv := func(p ad.Var) ad.Var { return ad.MatMulT(mat(p), vec(p), trans, false) }
		vm := func(p ad.Var) ad.Var { return ad.MatMulT(vec(p), mat(p), false, !trans) } // (k)·(k, m)
		dot := func(p ad.Var) ad.Var { return ad.MatMul(vec(p), ad.View(p, 0, k)) }

		tp := ad.NewTape()
		p := tp.Param(θ)
		y, z, d := mv(p), vm(p), dot(p)
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y.Shape(), []int{m}) || !slices.Equal(z.Shape(), []int{m}) || len(d.Shape()) != 0 {
			t.Fatalf("shapes %v, %v, %v; want [%d], [%d], []", y.Shape(), z.Shape(), d.Shape(), m, m)
		}
		a := func(i, j int) float64 { // element (i, j) of the m×k matrix
			if trans {
				return float64(θ[j*m+i])
			}
			return float64(θ[i*k+j])
		}
		for i := range m {
			want := 0.0
			for j := range k {
				want += a(i, j) * float64(θ[m*k+j])
			}
			if got := float64(y.Data()[i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("(A·x)[%d] = %v, want %v", i, got, want)
			}
			if got := float64(z.Data()[i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("(xᵀ·Aᵀ)[%d] = %v, want %v", i, got, want)
			}
		}
		want := 0.0
		for j := range k {
			want += float64(θ[m*k+j]) * float64(θ[j])
		}
		if got := float64(d.Item()); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("x·y = %v, want %v", got, want)
		}
		for _, f := range []func(ad.Var) ad.Var{mv, vm} {
			checkRules(t, f, θ, ad.Tanh)
		}
		proptest.CheckGrad(t, dot, θ)
		proptest.CheckHVP(t, dot, θ)
	})
}

// A batched matrix times a vector, and the errors.
func TestMatMulVectorBatchAndErrors(t *testing.T) {
	tp := ad.NewTape()
	a := tp.Const(flat.Tensor{Shape: []int{2, 2, 3}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}})
	x := tp.Const(flat.Tensor{Shape: []int{3}, Data: []float32{1, 0, -1}})
	y := ad.MatMul(a, x)
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y.Shape(), []int{2, 2}) || !slices.Equal(y.Data(), []float32{-2, -2, -2, -2}) {
		t.Errorf("(2,2,3)·(3) = %v %v; want [2 2] [-2 -2 -2 -2]", y.Shape(), y.Data())
	}
	bad := ad.MatMul(a, tp.Const(flat.Tensor{Shape: []int{2}, Data: []float32{1, 2}}))
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "MatMul") || !strings.Contains(err.Error(), "inner dimensions differ") || !bad.IsZero() && bad.Shape() != nil {
		t.Errorf("(2,2,3)·(2): %v", err)
	}
}

// The matrix-vector product on a reused tape allocates nothing.
func TestMatMulVectorAllocatesNothing(t *testing.T) {
	θ := make([]float32, 64*64+64)
	for i := range θ {
		θ[i] = float32(i%7) * 0.01
	}
	pinGradAllocs(t, 1, 50, θ, func(p ad.Var) ad.Var {
		y := ad.MatMul(ad.View(p, 0, 64, 64), ad.View(p, 64*64, 64))
		return ad.Sum(ad.Square(y))
	})
}

// Scalars (from Sum) stack, and concatenate, into a vector, with the
// derivatives of their parts.
func TestStackAndConcatScalars(t *testing.T) {
	f := func(p ad.Var) ad.Var {
		a := ad.Sum(ad.Square(ad.View(p, 0, 2)))
		b := ad.Mean(ad.Tanh(ad.View(p, 2, 2)))
		c := ad.Sum(ad.Mul(ad.View(p, 0, 2), ad.View(p, 2, 2)))
		return ad.Stack(a, b, c)
	}
	g := func(p ad.Var) ad.Var {
		a := ad.Sum(ad.Square(ad.View(p, 0, 2)))
		b := ad.Mean(ad.Tanh(ad.View(p, 2, 2)))
		return ad.Concat(-1, a, b, ad.Sum(p))
	}
	rapid.Check(t, func(t *rapid.T) {
		θ := proptest.NoTies(4).Draw(t, "θ")
		for _, h := range []func(ad.Var) ad.Var{f, g} {
			checkRules(t, h, θ, ad.Square)
		}
	})
	tp := ad.NewTape()
	θ := []float32{1, 2, 3, 4}
	y := f(tp.Param(θ))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	want := []float32{5, float32((math.Tanh(3) + math.Tanh(4)) / 2), 11}
	if !slices.Equal(y.Shape(), []int{3}) || math.Abs(float64(y.Data()[1]-want[1])) > 1e-6 || y.Data()[0] != 5 || y.Data()[2] != 11 {
		t.Errorf("Stack = %v %v, want [3] %v", y.Shape(), y.Data(), want)
	}
	// Rows stack into a matrix; mismatched shapes are an error naming both.
	p := tp.Param(θ)
	m := ad.Stack(ad.View(p, 0, 2), ad.View(p, 2, 2))
	if !slices.Equal(m.Shape(), []int{2, 2}) || !slices.Equal(m.Data(), θ) {
		t.Errorf("Stack of rows = %v %v", m.Shape(), m.Data())
	}
	ad.Stack(ad.View(p, 0, 2), ad.View(p, 0, 3))
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "Stack: input 1 has shape [3], want [2]") {
		t.Errorf("mismatched Stack: %v", err)
	}
	tp2 := ad.NewTape()
	ad.Concat(1, ad.Sum(tp2.Param(θ)), ad.Sum(tp2.Param(θ)))
	if err := tp2.Err(); err == nil {
		t.Errorf("Concat of scalars along axis 1: no error")
	}
}

// checkRules runs the proptest checkers on f: its JVP and transpose, and
// the gradient and HVP of Σ outer(f(θ)).
func checkRules(t proptest.T, f func(ad.Var) ad.Var, θ []float32, outer func(ad.Var) ad.Var) {
	t.Helper()
	proptest.CheckJVP(t, f, θ)
	proptest.CheckTranspose(t, f, θ)
	loss := func(p ad.Var) ad.Var { return ad.Sum(outer(f(p))) }
	proptest.CheckGrad(t, loss, θ)
	proptest.CheckHVP(t, loss, θ)
}
