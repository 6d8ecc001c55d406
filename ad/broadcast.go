package ad

import "fmt"

// maxRank bounds the rank of broadcasting ops, so their index arithmetic
// lives in fixed arrays on the stack.
const maxRank = 8

// broadcastShape appends to dst the numpy broadcast of shapes a and b:
// aligned at the trailing axis, each pair of dimensions equal or one of
// them 1.
func broadcastShape(dst, a, b []int) ([]int, error) {
	r := max(len(a), len(b))
	if r > maxRank {
		return dst, fmt.Errorf("rank %d exceeds %d", r, maxRank)
	}
	for i := 0; i < r; i++ {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			dst = append(dst, da)
		case da == 1:
			dst = append(dst, db)
		default:
			return dst, fmt.Errorf("shapes %v and %v do not broadcast (axis %d: %d vs %d), want equal dimensions or one of them 1", a, b, i, da, db)
		}
	}
	return dst, nil
}

// bstrides are the element strides of an input of shape in, read as the
// output shape out under broadcasting: 0 along broadcast axes.
func bstrides(in, out []int) (st [maxRank]int) {
	r := len(out)
	stride := 1
	for i := len(in) - 1; i >= 0; i-- {
		j := i + r - len(in)
		if in[i] != 1 || out[j] == 1 {
			st[j] = stride
		}
		stride *= in[i]
	}
	return st
}

// rows walks the output of shape out row by row (the last axis), calling
// fn with the offsets of the row's first element in the output and in two
// inputs with strides sa and sb. Within a row the inputs advance by
// sa[last] and sb[last].
func rows(out []int, sa, sb *[maxRank]int, fn func(o, ia, ib int)) {
	r := len(out)
	if r == 0 {
		fn(0, 0, 0)
		return
	}
	n := 1
	for _, d := range out[:r-1] {
		n *= d
	}
	inner := out[r-1]
	var idx [maxRank]int
	ia, ib := 0, 0
	for row := 0; row < n; row++ {
		fn(row*inner, ia, ib)
		// Advance the multi-index over the outer axes.
		for ax := r - 2; ax >= 0; ax-- {
			idx[ax]++
			ia += sa[ax]
			ib += sb[ax]
			if idx[ax] < out[ax] {
				break
			}
			ia -= sa[ax] * out[ax]
			ib -= sb[ax] * out[ax]
			idx[ax] = 0
		}
	}
}

// coalesce merges adjacent axes of the shape out that two stride arrays
// walk as one axis (for each, the outer axis's stride is the inner axis's
// stride times its size), dropping axes of size 1, so that rows walks long
// rows: (N, C, H, W) + (C, 1, 1) becomes (N, C, H·W). It returns the merged
// shape in *shape and the merged strides in *ma and *mb; the innermost
// merged axis keeps the strides of out's last axis.
func coalesce(out []int, sa, sb *[maxRank]int, shape, ma, mb *[maxRank]int) []int {
	n := 0
	for j, d := range out {
		if d == 1 && j < len(out)-1 {
			continue
		}
		if n > 0 && ma[n-1] == sa[j]*d && mb[n-1] == sb[j]*d {
			shape[n-1] *= d
			ma[n-1], mb[n-1] = sa[j], sb[j]
			continue
		}
		shape[n], ma[n], mb[n] = d, sa[j], sb[j]
		n++
	}
	return shape[:n]
}
