package ad

import (
	"slices"
)

// Stack joins xs, all of one shape s, along a new leading axis: the result
// has shape (n, s…) for n values. Scalars (rank-0 values, such as a Sum or a
// Mean) stack into a vector:
//
//	losses := ad.Stack(ad.Sum(a), ad.Sum(b), ad.Mean(c)) // shape [3]
//
// It is a Reshape of each input and a Concat, so its derivatives are theirs.
func Stack(xs ...Var) Var {
	if len(xs) == 0 {
		panic("ad: Stack of no Vars")
	}
	s0, ok := liveShape("Stack", xs[0])
	if !ok {
		return xs[0].failedOn("Stack")
	}
	var dims [maxRank + 1]int
	shape := append(append(dims[:0], 1), s0...)
	var buf [16]Var
	ys := buf[:0]
	if len(xs) > len(buf) {
		ys = make([]Var, 0, len(xs))
	}
	for i, x := range xs {
		s, ok := liveShape("Stack", x)
		if !ok {
			return x.failedOn("Stack")
		}
		if !slices.Equal(s, s0) {
			return x.t.fail(errorf("Stack: input %d has shape %v, want %v like input 0", i, s, s0))
		}
		ys = append(ys, Reshape(x, shape...))
	}
	return concat0(ys...)
}
