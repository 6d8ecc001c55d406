package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

type transposePrim struct{}

var transposeOp = &transposePrim{}

// Transpose permutes the axes of v: axis i of the result is axis perm[i] of
// v (numpy's transpose, PyTorch's permute). It copies.
func Transpose(v Var, perm ...int) Var { return Apply(transposeOp, Attrs{Ints: perm}, v) }

func (*transposePrim) Name() string { return "Transpose" }
func (*transposePrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	s, perm := in[0], a.Ints
	if len(perm) != len(s) || len(s) > maxRank {
		return dst, fmt.Errorf("permutation %v for shape %v, want a permutation of its %d axes", perm, s, len(s))
	}
	var seen [maxRank]bool
	for _, p := range perm {
		if p < 0 || p >= len(s) || seen[p] {
			return dst, fmt.Errorf("%v is not a permutation of the %d axes of %v", perm, len(s), s)
		}
		seen[p] = true
		dst = append(dst, s[p])
	}
	return dst, nil
}

func (*transposePrim) Forward(f *Forward)   { transpose(f.In[0], f.Out, f.Attrs.Ints) }
func (*transposePrim) Forward64(f *Forward) { transpose(f.In64[0], f.Out64, f.Attrs.Ints) }

// transpose copies x into out with its axes permuted by perm.
func transpose[T flat.Float](x, out flat.TensorOf[T], perm []int) {
	r := len(perm)
	if r == 0 {
		out.Data[0] = x.Data[0]
		return
	}
	// Strides of x read in the output's axis order.
	var xs, st [maxRank]int
	stride := 1
	for i := r - 1; i >= 0; i-- {
		xs[i] = stride
		stride *= x.Shape[i]
	}
	for i, p := range perm {
		st[i] = xs[p]
	}
	var zero [maxRank]int
	inner, last := out.Shape[r-1], st[r-1]
	rows(out.Shape, &st, &zero, func(o, ix, _ int) {
		row := out.Data[o : o+inner]
		for j := range row {
			row[j] = x.Data[ix+j*last]
		}
	})
}

func (*transposePrim) JVP(r *Rule) Var { return Transpose(r.Tangent(0), r.Attrs.Ints...) }
func (*transposePrim) VJP(r *Rule, c Var) {
	var inv [maxRank]int
	for i, p := range r.Attrs.Ints {
		inv[p] = i
	}
	r.AddGrad(0, Transpose(c, inv[:len(r.Attrs.Ints)]...))
}
