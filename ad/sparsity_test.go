package ad_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// sparsityCases are functions of x, of 12 elements, covering every op
// with a sparsity rule. Their patterns must equal the union of the
// non-zeros of their Jacobians at random points.
var sparsityCases = []struct {
	name string
	f    func(x ad.Var) ad.Var
}{
	{"elementwise", func(x ad.Var) ad.Var {
		y := ad.Add(ad.Exp(x), ad.Tanh(ad.Sin(x)))
		y = ad.Sub(y, ad.Sigmoid(ad.Cos(x)))
		y = ad.Mul(y, ad.Gelu(ad.Erf(ad.Softplus(ad.Swish(x)))))
		y = ad.Add(y, ad.Neg(ad.Square(x)))
		y = ad.Add(y, ad.Log(ad.Abs(ad.Add(x, x.Tape().Scalar(3)))))
		y = ad.Add(y, ad.Sqrt(ad.Log1p(ad.Square(x))))
		y = ad.Add(y, ad.Pow(ad.Add(ad.Square(x), x.Tape().Scalar(1)), 1.5))
		return ad.Div(y, ad.Add(ad.Relu(x), x.Tape().Scalar(2)))
	}},
	{"piecewise", func(x ad.Var) ad.Var {
		y := ad.Add(ad.LeakyRelu(x, 0.1), ad.Elu(x, 1))
		y = ad.Add(y, ad.Clamp(x, -0.5, 0.5))
		return ad.Add(y, ad.Mul(ad.Sign(x), ad.Indicator(x, -1, 1))) // no dependency
	}},
	{"broadcast", func(x ad.Var) ad.Var {
		m := ad.Reshape(x, 3, 4)
		row := ad.Reshape(ad.Slice(x, 0, 4), 1, 4)
		col := ad.Reshape(ad.Slice(x, 8, 11), 3, 1)
		return ad.Add(ad.Mul(m, row), ad.Div(ad.BroadcastTo(col, 3, 4), ad.Add(ad.Exp(m), m.Tape().Scalar(1))))
	}},
	{"where", func(x ad.Var) ad.Var {
		a, b := ad.Slice(x, 0, 6), ad.Slice(x, 6, 12)
		return ad.Where(ad.Sub(a, b), ad.Square(a), ad.Exp(b))
	}},
	{"stop gradient", func(x ad.Var) ad.Var {
		return ad.Mul(ad.StopGradient(x), ad.Reshape(ad.Slice(ad.Reshape(x, 2, 6), 1, 2), 6).Tape().Scalar(2))
	}},
	{"reductions", func(x ad.Var) ad.Var {
		m := ad.Reshape(x, 2, 3, 2)
		return ad.Concat(0,
			ad.Reshape(ad.Sum(m, 1), 4), ad.Reshape(ad.Mean(m, 0, 2), 3),
			ad.Reshape(ad.Max(m, 2), 6), ad.Reshape(ad.Min(m, 0), 6),
			ad.Reshape(ad.LogSumExp(m, 1), 4), ad.Reshape(ad.Softmax(m, -1), 12),
			ad.Reshape(ad.SumTo(m, 3, 1), 3), ad.Reshape(ad.Sum(m), 1))
	}},
	{"matmul", func(x ad.Var) ad.Var {
		a := ad.Reshape(ad.Slice(x, 0, 6), 2, 3)
		b := ad.Reshape(ad.Slice(x, 6, 12), 3, 2)
		bt := ad.Reshape(ad.Slice(x, 6, 12), 2, 3)
		batch := ad.Reshape(x, 2, 2, 3)
		return ad.Concat(0,
			ad.Reshape(ad.MatMul(a, b), 4),
			ad.Reshape(ad.MatMulT(a, bt, false, true), 4),
			ad.Reshape(ad.MatMulT(a, bt, true, false), 9),
			ad.Reshape(ad.MatMulT(batch, a, false, true), 8),
			ad.MatMul(a, ad.Slice(x, 9, 12)))
	}},
	{"shapes", func(x ad.Var) ad.Var {
		m := ad.Reshape(x, 3, 4)
		y := ad.Transpose(ad.Reshape(x, 2, 3, 2), 2, 0, 1)
		p := ad.Crop(ad.Pad(m, 1, 0, 2, 1), 0, 1, 1, 0)
		return ad.Concat(0,
			ad.Reshape(ad.Concat(1, m, ad.Square(m)), 24),
			ad.Reshape(y, 12),
			ad.Reshape(ad.SliceAxis(m, 1, 1, 3), 6),
			ad.Reshape(ad.PadAxis(m, 0, 1, 1), 20),
			ad.Reshape(p, 18),
			ad.Reshape(ad.Stack(ad.Sum(x), ad.Mean(x)), 2),
			ad.View(x, 5, 3))
	}},
	{"index", func(x ad.Var) ad.Var {
		g := ad.Gather(x, []int{3, 3, 0, 11, 7, 2, 5}, 7)
		s := ad.ScatterAdd(ad.Exp(x), []int{0, 1, 1, 4, 4, 4, 2, 0, 3, 3, 1, 4}, 5)
		return ad.Concat(0, ad.Mul(g, ad.Gather(x, []int{1, 2, 3, 4, 5, 6, 7}, 7)), s)
	}},
}

// TestJacobianPatternCases checks each case's pattern against the union
// of the non-zeros of its Jacobian at random points, and the Jacobian's
// non-zeros at every point are in it.
func TestJacobianPatternCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range sparsityCases {
		t.Run(c.name, func(t *testing.T) {
			θ := make([]float32, 12)
			tp := ad.NewTape()
			x := tp.Param(θ)
			rowPtr, colIdx, err := tp.JacobianPattern(c.f(x), x)
			if err != nil {
				t.Fatal(err)
			}
			m := len(rowPtr) - 1
			pat := make(map[[2]int]bool)
			for i := range m {
				for k := rowPtr[i]; k < rowPtr[i+1]; k++ {
					if k > rowPtr[i] && colIdx[k] <= colIdx[k-1] {
						t.Fatalf("row %d: columns %v not strictly ascending", i, colIdx[rowPtr[i]:rowPtr[i+1]])
					}
					pat[[2]int{i, colIdx[k]}] = true
				}
			}
			union := make(map[[2]int]bool)
			for range 16 {
				for j := range θ {
					θ[j] = float32(rng.Float64()*4 - 2)
				}
				J, err := ad.Jacobian(c.f, θ)
				if err != nil {
					t.Fatal(err)
				}
				if J.Shape[0] != m {
					t.Fatalf("pattern has %d rows, the Jacobian %d", m, J.Shape[0])
				}
				for i := range m {
					for j := range θ {
						if J.Data[i*len(θ)+j] != 0 {
							if !pat[[2]int{i, j}] {
								t.Fatalf("∂y%d/∂x%d = %g at x = %v is missing from the pattern", i, j, J.Data[i*len(θ)+j], θ)
							}
							union[[2]int{i, j}] = true
						}
					}
				}
			}
			for e := range pat {
				if !union[e] {
					t.Errorf("entry %v of the pattern is zero at every point", e)
				}
			}
		})
	}
}

// A product whose factor is zero at the recorded point still depends on
// the factor's input: the pattern is structural.
func TestJacobianPatternZeroFactor(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Param([]float32{1, 2, 3, 0, 0, 0})
	y := ad.Mul(ad.Slice(x, 0, 3), ad.Slice(x, 3, 6)) // ∂y/∂x[0:3] = x[3:6] = 0
	rowPtr, colIdx, err := tp.JacobianPattern(y, x)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 3}, {1, 4}, {2, 5}}
	for i, w := range want {
		if got := colIdx[rowPtr[i]:rowPtr[i+1]]; !slices.Equal(got, w) {
			t.Errorf("row %d: columns %v, want %v", i, got, w)
		}
	}
}

// An output that does not depend on x has an empty pattern, and values
// recorded before x are constants.
func TestJacobianPatternIndependent(t *testing.T) {
	tp := ad.NewTape()
	c := tp.Param([]float32{1, 2})
	x := tp.Param([]float32{3, 4})
	y := ad.Concat(0, ad.Exp(c), ad.Mul(x, c))
	rowPtr, colIdx, err := tp.JacobianPattern(y, x)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rowPtr, []int{0, 0, 0, 1, 2}) || !slices.Equal(colIdx, []int{0, 1}) {
		t.Errorf("got rowPtr %v colIdx %v, want [0 0 0 1 2] and [0 1]", rowPtr, colIdx)
	}
	rowPtr, colIdx, err = tp.JacobianPattern(c, x)
	if err != nil || len(rowPtr) != 3 || len(colIdx) != 0 {
		t.Errorf("y before x: got %v %v %v, want an empty pattern of 2 rows", rowPtr, colIdx, err)
	}
}

// An op without a rule on the path from x is an error naming it.
func TestJacobianPatternNoRule(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Param(make([]float32, 1*1*4*4))
	w := tp.Const(flat.Tensor{Shape: []int{1, 1, 3, 3}, Data: make([]float32, 9)})
	y := ad.Conv(ad.Reshape(x, 1, 1, 4, 4), w, ad.ConvGeom{})
	_, _, err := tp.JacobianPattern(y, x)
	if !errors.Is(err, ad.ErrNoSparsityRule) || !strings.Contains(err.Error(), "Conv") {
		t.Fatalf("got %v, want an error wrapping ErrNoSparsityRule that names Conv", err)
	}
	// The same op on constants only needs no rule.
	tp2 := ad.NewTape()
	x2 := tp2.Param([]float32{1})
	c := tp2.Const(flat.Tensor{Shape: []int{1, 1, 4, 4}, Data: make([]float32, 16)})
	y2 := ad.Mul(ad.Sum(ad.Conv(c, tp2.Const(flat.Tensor{Shape: []int{1, 1, 3, 3}, Data: make([]float32, 9)}), ad.ConvGeom{})), x2)
	if _, _, err := tp2.JacobianPattern(y2, x2); err != nil {
		t.Fatalf("Conv of constants: %v, want no error", err)
	}
}

// TestJacobianPatternRandom draws random programs of the ops with rules
// and checks that the pattern has every non-zero of the Jacobian at
// random points (it may have more: the branches not taken, and sums that
// cancel).
func TestJacobianPatternRandom(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 8).Draw(rt, "n")
		type step struct{ op, a, b, c, m int }
		nsteps := rapid.IntRange(1, 6).Draw(rt, "steps")
		steps := make([]step, nsteps)
		idxs, idxs2 := make([][]int, nsteps), make([][]int, nsteps)
		sizes := []int{n}
		for s := range steps {
			st := step{op: rapid.IntRange(0, 7).Draw(rt, "op")}
			k := len(sizes)
			st.a, st.b, st.c = rapid.IntRange(0, k-1).Draw(rt, "a"), rapid.IntRange(0, k-1).Draw(rt, "b"), rapid.IntRange(0, k-1).Draw(rt, "c")
			st.m = rapid.IntRange(1, 8).Draw(rt, "m")
			size := sizes[st.a]
			switch st.op {
			case 1, 3: // a ⊙ gathered b; Where(a, gathered b, gathered c)
				idxs[s] = rapid.SliceOfN(rapid.IntRange(0, sizes[st.b]-1), size, size).Draw(rt, "idx")
				idxs2[s] = rapid.SliceOfN(rapid.IntRange(0, sizes[st.c]-1), size, size).Draw(rt, "idx2")
			case 2: // ScatterAdd of a into m
				size = st.m
				idxs[s] = rapid.SliceOfN(rapid.IntRange(0, st.m-1), sizes[st.a], sizes[st.a]).Draw(rt, "idx")
			case 5: // a·B, B of m columns gathered from b
				idxs[s] = rapid.SliceOfN(rapid.IntRange(0, sizes[st.b]-1), size*st.m, size*st.m).Draw(rt, "idx")
				size = st.m
			case 6: // Max over a reshaped (2, size/2)
				if size%2 == 0 {
					size /= 2
				}
			}
			steps[s] = st
			sizes = append(sizes, size)
		}
		f := func(x ad.Var) ad.Var {
			vals := []ad.Var{x}
			for s, st := range steps {
				a := vals[st.a]
				var y ad.Var
				switch st.op {
				case 0:
					y = ad.Tanh(ad.Add(ad.Square(a), ad.Relu(a)))
				case 1:
					y = ad.Mul(a, ad.Gather(vals[st.b], idxs[s], len(idxs[s])))
				case 2:
					y = ad.ScatterAdd(ad.Sin(a), idxs[s], st.m)
				case 3:
					y = ad.Where(a, ad.Gather(vals[st.b], idxs[s], len(idxs[s])), ad.Gather(vals[st.c], idxs2[s], len(idxs2[s])))
				case 4:
					y = ad.Add(ad.Abs(a), ad.Sum(vals[st.b]))
				case 5:
					y = ad.MatMul(a, ad.Reshape(ad.Gather(vals[st.b], idxs[s], len(idxs[s])), a.Size(), st.m))
				case 6:
					if sz := a.Size(); sz%2 == 0 {
						y = ad.Reshape(ad.Max(ad.Reshape(a, 2, sz/2), 0), sz/2)
					} else {
						y = ad.Transpose(ad.Reshape(a, 1, sz), 1, 0)
						y = ad.Reshape(y, sz)
					}
				case 7:
					y = ad.Reshape(ad.Crop(ad.Pad(a, 2, 1), 1, 2), a.Size())
				}
				vals = append(vals, y)
			}
			return vals[len(vals)-1]
		}
		θ := make([]float32, n)
		tp := ad.NewTape()
		x := tp.Param(θ)
		rowPtr, colIdx, err := tp.JacobianPattern(f(x), x)
		if err != nil {
			rt.Fatal(err)
		}
		has := func(i, j int) bool {
			for _, c := range colIdx[rowPtr[i]:rowPtr[i+1]] {
				if c == j {
					return true
				}
			}
			return false
		}
		for p := range 4 {
			for j := range θ {
				θ[j] = float32((j*7+p*3)%11)/3 - 1.6
			}
			J, err := ad.Jacobian(f, θ)
			if err != nil {
				rt.Fatal(err)
			}
			for i := range J.Shape[0] {
				for j := range n {
					if v := J.Data[i*n+j]; v != 0 && !has(i, j) {
						rt.Fatalf("∂y%d/∂x%d = %g at %v is missing from the pattern", i, j, v, θ)
					}
				}
			}
		}
	})
}
