package ad_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// Backward overwrites its gradient buffers (they are not zeroed first):
// ranges of a Param that Views cover are copied from the Views' cotangents,
// or computed there by the rule (a MatMul of a View), and the rest is
// zeroed; a Param used otherwise, or through overlapping Views, is summed
// as before. These tests compare Backward with AddVJP on the same
// recording, which adds every contribution onto zeros, on a tape whose
// memory was first filled with NaN, so an element Backward fails to write
// shows.

type backwardCase struct {
	name string
	// record records the loss on tp from Params of the given buffers.
	record func(tp *ad.Tape, bufs [][]float32) (loss ad.Var, params []ad.Var)
	sizes  []int
}

func randBuf(r *rand.Rand, n int) []float32 {
	b := make([]float32, n)
	for i := range b {
		b[i] = float32(r.NormFloat64())
	}
	return b
}

var backwardCases = []backwardCase{
	{
		name:  "dense batch 1, θ and x, unused tail of θ",
		sizes: []int{6*5 + 6 + 7, 5},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p, xp := tp.Param(bufs[0]), tp.Param(bufs[1])
			w, b := ad.View(p, 0, 6, 5), ad.View(p, 30, 6)
			y := ad.Tanh(ad.Add(ad.MatMulT(ad.View(xp, 0, 1, 5), w, false, true), b))
			return ad.Sum(ad.Mul(y, y)), []ad.Var{p, xp}
		},
	},
	{
		name:  "dense batch 3, every transpose",
		sizes: []int{4*3 + 3*4 + 4*3 + 3*4, 3 * 4},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p, xp := tp.Param(bufs[0]), tp.Param(bufs[1])
			x := ad.View(xp, 0, 3, 4)
			a := ad.MatMulT(x, ad.View(p, 0, 4, 3), false, false)         // (3,3)
			b := ad.MatMulT(ad.View(p, 12, 3, 4), x, false, true)         // (3,3)
			c := ad.MatMulT(ad.View(p, 24, 4, 3), ad.Tanh(x), true, true) // (3,3)
			d := ad.MatMulT(ad.Sin(x), ad.View(p, 36, 3, 4), true, false) // (4,4)
			return ad.Add(ad.Sum(ad.Mul(ad.Add(a, b), c)), ad.Sum(ad.Mul(d, d))), []ad.Var{p, xp}
		},
	},
	{
		name:  "a View used twice",
		sizes: []int{9 + 3},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p := tp.Param(bufs[0])
			w := ad.View(p, 0, 3, 3)
			y := ad.MatMul(w, w)
			return ad.Sum(ad.Add(y, ad.View(p, 9, 3))), []ad.Var{p}
		},
	},
	{
		name:  "tied: two Views of the same range",
		sizes: []int{4 * 4},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p := tp.Param(bufs[0])
			x := tp.Const(flat.Tensor{Shape: []int{1, 4}, Data: []float32{1, -2, 3, 0.5}})
			h := ad.Tanh(ad.MatMulT(x, ad.View(p, 0, 4, 4), false, true))
			return ad.Sum(ad.MatMulT(h, ad.View(p, 0, 4, 4), false, true)), []ad.Var{p}
		},
	},
	{
		name:  "overlapping Views of different ranges",
		sizes: []int{20},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p := tp.Param(bufs[0])
			a := ad.MatMul(ad.View(p, 0, 2, 3), ad.View(p, 4, 3, 2))
			return ad.Sum(ad.Mul(a, ad.View(p, 14, 2, 2))), []ad.Var{p}
		},
	},
	{
		name:  "the Param used directly and through Views",
		sizes: []int{12},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p := tp.Param(bufs[0])
			a := ad.MatMul(ad.View(p, 0, 2, 2), ad.View(p, 4, 2, 4))
			return ad.Add(ad.Sum(ad.Mul(a, a)), ad.Sum(ad.Mul(p, p))), []ad.Var{p}
		},
	},
	{
		name:  "a Param the loss ignores and one recorded after it",
		sizes: []int{6, 3, 2},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p, q := tp.Param(bufs[0]), tp.Param(bufs[1])
			loss := ad.Sum(ad.MatMul(ad.View(p, 0, 1, 2), ad.View(p, 2, 2, 2)))
			_ = ad.Sum(q)
			return loss, []ad.Var{p, q, tp.Param(bufs[2])}
		},
	},
	{
		name:  "batched 3-D MatMul of Views",
		sizes: []int{2 * 3 * 4, 4 * 2},
		record: func(tp *ad.Tape, bufs [][]float32) (ad.Var, []ad.Var) {
			p, q := tp.Param(bufs[0]), tp.Param(bufs[1])
			y := ad.MatMul(ad.View(p, 0, 2, 3, 4), ad.View(q, 0, 4, 2))
			return ad.Sum(ad.Mul(y, y)), []ad.Var{p, q}
		},
	},
}

func TestBackwardOverwritesGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tp := ad.NewTape()
	for _, c := range backwardCases {
		bufs := make([][]float32, len(c.sizes))
		for i, n := range c.sizes {
			bufs[i] = randBuf(r, n)
		}
		for step := range 3 {
			// Fill the tape's memory with NaN, so that the gradients
			// Backward allocates start as garbage.
			tp.Reset()
			flat.Fill(tp.Full(0, 1<<16).Data(), float32(math.NaN()))
			tp.Reset()
			loss, params := c.record(tp, bufs)
			if err := tp.Backward(loss); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := make([][]float32, len(params))
			want := make([][]float32, len(params))
			for k, p := range params {
				got[k] = flat.Clone(tp.GradWrt(p))
				want[k] = make([]float32, len(bufs[k]))
			}
			if err := tp.AddVJP(loss, []float32{1}, params, want); err != nil {
				t.Fatalf("%s: AddVJP: %v", c.name, err)
			}
			for k := range params {
				for i := range want[k] {
					g, w := got[k][i], want[k][i]
					if math.Float32bits(g) != math.Float32bits(w) && !(g == 0 && w == 0) {
						t.Fatalf("%s, step %d: gradient %d element %d is %v, adding onto zeros gives %v", c.name, step, k, i, g, w)
					}
				}
			}
		}
	}
}

// TestBackwardMatchesVJPReusedTape checks the dense case against ad.VJP
// (a fresh tape) bit for bit, on a tape reused for many steps with
// alternating parameter vectors.
func TestBackwardDenseMatchesVJP(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const in, out = 33, 17
	θs := [2][]float32{randBuf(r, out*in+out), randBuf(r, out*in+out)}
	x := flat.Tensor{Shape: []int{1, in}, Data: randBuf(r, in)}
	f := func(p ad.Var) ad.Var {
		y := ad.Add(ad.MatMulT(p.Tape().Const(x), ad.View(p, 0, out, in), false, true), ad.View(p, out*in, out))
		return ad.Sum(ad.Mul(y, y))
	}
	tp := ad.NewTape()
	for step := range 6 {
		θ := θs[step%2]
		got, err := tp.Grad(f(tp.Param(θ)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ad.VJP(f, θ, []float32{1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] == 0 && want[i] == 0) {
				t.Fatalf("step %d: element %d is %v, VJP gives %v", step, i, got[i], want[i])
			}
		}
		tp.Reset()
	}
}
