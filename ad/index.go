package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// Gather and ScatterAdd move elements by flat index. They are linear and
// each other's adjoints, so each one's rules are written with the other:
// max-pooling and Max save their argmax as flat indices and differentiate
// through this pair.
//
// Both carry their indices in Attrs.Ints, encoded with the output shape as
// [rank, shape..., idx...]; Apply copies that slice into the tape's arena.

type (
	gatherPrim     struct{}
	scatterAddPrim struct{}
)

var (
	gatherOp     = &gatherPrim{}
	scatterAddOp = &scatterAddPrim{}
)

// Gather returns the tensor of the given shape whose element i is element
// idx[i] of x, both counted flat in row-major order:
//
//	out.flat[i] = x.flat[idx[i]]
//
// idx must have one index per element of shape, and each must lie in
// [0, x.Size()). idx is copied onto the tape.
func Gather(x Var, idx []int, shape ...int) Var {
	return applyIndexed(gatherOp, x, idx, shape)
}

// ScatterAdd returns a tensor of the given shape, zero except that element
// u.flat[i] is added at flat position idx[i]; repeated indices add up. It
// is the adjoint of Gather. idx must have one index per element of u, and
// each must lie in [0, n), n the size of shape. idx is copied onto the
// tape.
func ScatterAdd(u Var, idx []int, shape ...int) Var {
	return applyIndexed(scatterAddOp, u, idx, shape)
}

// applyIndexed applies an index primitive to x with the attributes
// [rank, shape..., idx...], assembled in the tape's arena (no heap
// allocation once the arena is warm).
func applyIndexed(p Primitive, x Var, idx, shape []int) Var {
	t := x.t
	if t == nil || t.err != nil {
		return Apply(p, Attrs{}, x) // panics on the zero Var, or returns the failed Var
	}
	ints := t.ints.alloc(1 + len(shape) + len(idx))
	ints[0] = len(shape)
	copy(ints[1:], shape)
	copy(ints[1+len(shape):], idx)
	return Apply(p, Attrs{Ints: ints}, x)
}

// indexAttrs splits the attributes of an index primitive into the output
// shape and the indices, or reports that they are malformed.
func indexAttrs(a Attrs) (shape, idx []int, err error) {
	if len(a.Ints) == 0 {
		return nil, nil, fmt.Errorf("attributes are empty; want [rank, shape..., idx...]")
	}
	r := a.Ints[0]
	if r < 0 || 1+r > len(a.Ints) {
		return nil, nil, fmt.Errorf("rank %d in attributes of length %d; want [rank, shape..., idx...]", r, len(a.Ints))
	}
	return a.Ints[1 : 1+r], a.Ints[1+r:], nil
}

// checkIndexed validates an index primitive's attributes for an input of
// shape in. For Gather there is one index per output element, each in
// [0, size of in); for ScatterAdd one per input element, each in
// [0, size of the output). It appends the output shape to dst, which it
// returns as it was on an error (the primitives' Shape).
func checkIndexed(dst []int, a Attrs, in []int, gather bool) ([]int, error) {
	shape, idx, err := indexAttrs(a)
	if err != nil {
		return dst, err
	}
	if len(shape) > maxRank {
		return dst, fmt.Errorf("rank of shape %v exceeds %d", shape, maxRank)
	}
	for i, d := range shape {
		if d < 0 {
			return dst, fmt.Errorf("dimension %d of shape %v is %d, want ≥ 0", i, shape, d)
		}
	}
	n := sizeOf(shape)
	count, bound := n, sizeOf(in)
	if !gather {
		count, bound = bound, n
	}
	if len(idx) != count {
		if gather {
			return dst, fmt.Errorf("%d indices for output shape %v, want %d", len(idx), shape, count)
		}
		return dst, fmt.Errorf("%d indices for input shape %v, want %d", len(idx), in, count)
	}
	for i, j := range idx {
		if uint(j) >= uint(bound) {
			if gather {
				return dst, fmt.Errorf("index %d (position %d) is out of range [0, %d) of input shape %v", j, i, bound, in)
			}
			return dst, fmt.Errorf("index %d (position %d) is out of range [0, %d) of output shape %v", j, i, bound, shape)
		}
	}
	return append(dst, shape...), nil
}

func (*gatherPrim) Name() string { return "Gather" }
func (*gatherPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	return checkIndexed(dst, a, in[0], true)
}
func (*gatherPrim) Forward(f *Forward)   { gather(f.Out.Data, f.In[0].Data, f.Attrs) }
func (*gatherPrim) Forward64(f *Forward) { gather(f.Out64.Data, f.In64[0].Data, f.Attrs) }

// indices returns the indices of an index primitive's attributes, which
// its Shape has checked: indexAttrs without the checks, for the kernels.
func indices(a Attrs) []int { return a.Ints[1+a.Ints[0]:] }

// gather sets out[i] = x[idx[i]] for the indices of a.
func gather[T flat.Float](out, x []T, a Attrs) {
	idx := indices(a)
	out = out[:len(idx)]
	for i, j := range idx {
		out[i] = x[j]
	}
}
func (*gatherPrim) JVP(r *Rule) Var {
	shape, idx, _ := indexAttrs(r.Attrs)
	return Gather(r.Tangent(0), idx, shape...)
}
func (*gatherPrim) VJP(r *Rule, c Var) {
	_, idx, _ := indexAttrs(r.Attrs)
	r.AddGrad(0, ScatterAdd(c, idx, r.In[0].Shape()...))
}

func (*scatterAddPrim) Name() string { return "ScatterAdd" }
func (*scatterAddPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	return checkIndexed(dst, a, in[0], false)
}
func (*scatterAddPrim) Forward(f *Forward)   { scatterAdd(f.Out.Data, f.In[0].Data, f.Attrs) }
func (*scatterAddPrim) Forward64(f *Forward) { scatterAdd(f.Out64.Data, f.In64[0].Data, f.Attrs) }

// scatterAdd sets out to zero and adds u[i] to out[idx[i]] for the indices
// of a.
func scatterAdd[T flat.Float](out, u []T, a Attrs) {
	idx := indices(a)
	clear(out)
	u = u[:len(idx)]
	for i, j := range idx {
		out[j] += u[i]
	}
}
func (*scatterAddPrim) JVP(r *Rule) Var {
	shape, idx, _ := indexAttrs(r.Attrs)
	return ScatterAdd(r.Tangent(0), idx, shape...)
}
func (*scatterAddPrim) VJP(r *Rule, c Var) {
	_, idx, _ := indexAttrs(r.Attrs)
	r.AddGrad(0, Gather(c, idx, r.In[0].Shape()...))
}
