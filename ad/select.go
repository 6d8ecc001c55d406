package ad

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/flat"
)

// Selection by a condition: Where, and maskPositive, the mask of ReLU's
// rules. The derivative with respect to the condition is structurally
// zero, at every order.

// maskPositive returns c where y > 0 and +0 elsewhere (NaN y included),
// elementwise, for c and y of the same shape: ReLU's derivative applied to
// c in one pass. Where the mask is off the result is 0 whatever c is (a NaN
// or infinite c included, as PyTorch's threshold_backward), which a product
// c·[y > 0] would not give. The mask is piecewise constant, so nothing flows
// to y, at any order.
func maskPositive(c, y Var) Var { return Apply(maskPositiveOp, Attrs{}, c, y) }

type maskPositivePrim struct{}

var maskPositiveOp = &maskPositivePrim{}

func (*maskPositivePrim) Name() string { return "MaskPositive" }
func (*maskPositivePrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	if !slices.Equal(in[0], in[1]) {
		return dst, fmt.Errorf("c has shape %v and y %v; want equal shapes", in[0], in[1])
	}
	return append(dst, in[0]...), nil
}
func (*maskPositivePrim) Forward(f *Forward) {
	splitElems(elemJob{kind: elemMask, out: f.Out.Data, a: f.In[0].Data, b: f.In[1].Data})
}
func (*maskPositivePrim) Forward64(f *Forward) {
	maskPositiveGo(f.Out64.Data, f.In64[0].Data, f.In64[1].Data)
}

// maskPositiveGo is maskPositive's kernel in plain Go, for either
// precision: float64's, and the reference of float32's SIMD one
// (vmath.MaskPositive), which gives the same bits.
func maskPositiveGo[T flat.Float](out, c, y []T) {
	out, y = out[:len(c)], y[:len(c)]
	for i, v := range c {
		if y[i] > 0 {
			out[i] = v
		} else {
			out[i] = 0
		}
	}
}

// JVP: maskPositive(ċ, y); y's tangent contributes nothing.
func (*maskPositivePrim) JVP(r *Rule) Var {
	tc := r.Tangent(0)
	if tc.IsZero() {
		return Var{}
	}
	return maskPositive(tc, r.In[1])
}

// VJP: maskPositive(ḡ, y) to c, since the map is its own transpose;
// nothing to y.
func (*maskPositivePrim) VJP(r *Rule, g Var) {
	if r.Need(0) {
		r.AddGrad(0, maskPositive(g, r.In[1]))
	}
}

// Where returns a where cond > 0 and b elsewhere, elementwise. The three
// shapes broadcast together by numpy's rules (the result has the broadcast
// shape). The derivative with respect to cond is zero; with respect to a
// and b it is the selected branch's, so Where routes gradients. Like every
// op, it takes its inputs in one precision, the condition's included: to
// select among float64 values by a float32 mask, Convert the mask.
func Where(cond, a, b Var) Var { return Apply(whereOp, Attrs{}, cond, a, b) }

type wherePrim struct{}

var whereOp = &wherePrim{}

func (*wherePrim) Name() string { return "Where" }
func (*wherePrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	n := len(dst)
	dst, err := broadcastShape(dst, in[1], in[2])
	if err == nil {
		// buf must not reach a leaking parameter (broadcastShape's error
		// reports its inputs), or it moves to the heap.
		var buf [maxRank]int
		var out []int
		if out, err = broadcastShape(buf[:0], in[0], dst[n:]); err == nil {
			return append(dst[:n], out...), nil
		}
	}
	return dst[:n], fmt.Errorf("cond has shape %v, a %v and b %v; want shapes that broadcast together: %w", in[0], in[1], in[2], err)
}
func (*wherePrim) Forward(f *Forward) { where(f.In[0], f.In[1], f.In[2], f.Out) }
func (*wherePrim) Forward64(f *Forward) {
	where(f.In64[0], f.In64[1], f.In64[2], f.Out64)
}

// where sets out to a where c > 0 and to b elsewhere, broadcasting.
func where[T flat.Float](c, a, b, out flat.TensorOf[T]) {
	n := len(out.Data)
	if len(c.Data) == n && len(a.Data) == n && len(b.Data) == n {
		cd, av, bv, od := c.Data[:n], a.Data[:n], b.Data[:n], out.Data[:n]
		for i := range od {
			if cd[i] > 0 {
				od[i] = av[i]
			} else {
				od[i] = bv[i]
			}
		}
		return
	}
	shape := out.Shape
	sc, sa, sb := bstrides(c.Shape, shape), bstrides(a.Shape, shape), bstrides(b.Shape, shape)
	var idx [maxRank]int
	ic, ia, ib := 0, 0, 0
	for o := range out.Data {
		if c.Data[ic] > 0 {
			out.Data[o] = a.Data[ia]
		} else {
			out.Data[o] = b.Data[ib]
		}
		for ax := len(shape) - 1; ax >= 0; ax-- {
			idx[ax]++
			ic += sc[ax]
			ia += sa[ax]
			ib += sb[ax]
			if idx[ax] < shape[ax] {
				break
			}
			ic -= sc[ax] * shape[ax]
			ia -= sa[ax] * shape[ax]
			ib -= sb[ax] * shape[ax]
			idx[ax] = 0
		}
	}
}

// JVP: Where(cond, ta, tb), a zero tangent standing in for a missing one.
func (*wherePrim) JVP(r *Rule) Var {
	ta, tb := r.Tangent(1), r.Tangent(2)
	if ta.IsZero() && tb.IsZero() {
		return Var{}
	}
	if ta.IsZero() {
		ta = ScalarLike(r.Out, 0)
	}
	if tb.IsZero() {
		tb = ScalarLike(r.Out, 0)
	}
	return BroadcastTo(Where(r.In[0], ta, tb), r.Out.Shape()...)
}

// VJP: nothing to cond, and each branch gets the cotangent where it was
// chosen, summed back to its shape:
//
//	ā = SumTo(Where(cond, c, 0))
//	b̄ = SumTo(Where(cond, 0, c))
func (*wherePrim) VJP(r *Rule, c Var) {
	cond := r.In[0]
	if r.Need(1) {
		r.AddGrad(1, SumTo(Where(cond, c, ScalarLike(c, 0)), r.In[1].Shape()...))
	}
	if r.Need(2) {
		r.AddGrad(2, SumTo(Where(cond, ScalarLike(c, 0), c), r.In[2].Shape()...))
	}
}
