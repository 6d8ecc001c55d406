package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// Shape ops that copy: concatenation along any axis, and the Pad/Crop pair
// (zero padding and its adjoint, cropping), of which SliceAxis and PadAxis
// are the one-axis forms. All are linear; each one's rules are written with
// the others.

type (
	concatAxisPrim struct{}
	padPrim        struct{}
	cropPrim       struct{}
)

var (
	concatAxisOp = &concatAxisPrim{}
	padOp        = &padPrim{}
	cropOp       = &cropPrim{}
)

// liveShape returns x's shape, or false (with the error recorded on the
// tape) if x cannot be used.
func liveShape(op string, x Var) ([]int, bool) {
	t := x.t
	if t == nil {
		panic("ad: " + op + " of the zero Var")
	}
	if t.err != nil || !t.check(op, x) {
		return nil, false
	}
	return t.nodes[x.id].shape, true
}

// Concat joins xs along axis (negative counts from the end); the other axes
// must agree. Along axis 0 it is one copy of each input in turn. Scalars (rank-0 values, such as
// a Sum) join into a vector along axis 0 or −1: that is Stack.
func Concat(axis int, xs ...Var) Var {
	if len(xs) == 0 {
		panic("ad: Concat of no Vars")
	}
	if s, ok := liveShape("Concat", xs[0]); ok {
		if len(s) == 0 && (axis == 0 || axis == -1) {
			return Stack(xs...)
		}
		if ax, ok := normAxis(axis, len(s)); ok && ax == 0 {
			return concat0(xs...)
		}
	}
	ints := [1]int{axis}
	return Apply(concatAxisOp, Attrs{Ints: ints[:]}, xs...)
}

func (*concatAxisPrim) Name() string { return "Concat" }
func (*concatAxisPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	first := in[0]
	ax, err := axisShape(a, first)
	if err != nil {
		return dst, err
	}
	total := 0
	for i, s := range in {
		ok := len(s) == len(first)
		for j := 0; ok && j < len(s); j++ {
			ok = j == ax || s[j] == first[j]
		}
		if !ok {
			return dst, fmt.Errorf("input %d has shape %v, want %v except along axis %d like input 0", i, s, first, ax)
		}
		total += s[ax]
	}
	dst = append(dst, first...)
	dst[len(dst)-len(first)+ax] = total
	return dst, nil
}
func (*concatAxisPrim) Forward(f *Forward)   { concatAxis(f.Out, f.In, f.Attrs.Ints[0]) }
func (*concatAxisPrim) Forward64(f *Forward) { concatAxis(f.Out64, f.In64, f.Attrs.Ints[0]) }

// concatAxis copies in, joined along axis, into out.
func concatAxis[T flat.Float](out flat.TensorOf[T], in []flat.TensorOf[T], axis int) {
	ax, _ := normAxis(axis, len(out.Shape))
	outer, _, inner := axisSplit(out.Shape, ax)
	off := 0
	for o := 0; o < outer; o++ {
		for _, x := range in {
			blk := x.Shape[ax] * inner
			off += copy(out.Data[off:off+blk], x.Data[o*blk:(o+1)*blk])
		}
	}
}
func (*concatAxisPrim) JVP(r *Rule) Var {
	var buf [8]Var
	parts := buf[:0]
	if len(r.In) > len(buf) {
		parts = make([]Var, 0, len(r.In))
	}
	for i, x := range r.In {
		tv := r.Tangent(i)
		if tv.IsZero() {
			tv = FullLike(x, 0, x.Shape()...)
		}
		parts = append(parts, tv)
	}
	return Apply(concatAxisOp, r.Attrs, parts...)
}
func (*concatAxisPrim) VJP(r *Rule, c Var) {
	ax := r.Attrs.Ints[0]
	lo := 0
	for i, x := range r.In {
		n := x.Shape()[mustAxis(ax, len(x.Shape()))]
		if r.Need(i) {
			r.AddGrad(i, SliceAxis(c, ax, lo, lo+n))
		}
		lo += n
	}
}

// mustAxis normalises an axis that a Shape method has already checked.
func mustAxis(axis, r int) int {
	ax, _ := normAxis(axis, r)
	return ax
}

// Pad pads x with zeros: pads holds (before, after) for each axis of x, in
// order, all ≥ 0. Its adjoint is Crop with the same pads.
func Pad(x Var, pads ...int) Var { return Apply(padOp, Attrs{Ints: pads}, x) }

// Crop removes crops[2i] elements at the start and crops[2i+1] at the end of
// each axis i of x, in a copy. Cropping what Pad added gives x back, and
// the adjoint of Crop is Pad with the same amounts.
func Crop(x Var, crops ...int) Var { return Apply(cropOp, Attrs{Ints: crops}, x) }

// liveAxis returns x's shape and axis counted from the start (negative
// axes count from the end) for op. If x failed earlier, its rank is above
// maxRank or the axis is out of range, ok is false and bad is the failed
// Var for op to return, the error recorded on the tape.
func liveAxis(op string, x Var, axis int) (s []int, ax int, bad Var, ok bool) {
	s, ok = liveShape(op, x)
	if !ok {
		return nil, 0, x.t.failed(), false
	}
	ax, ok = normAxis(axis, len(s))
	switch {
	case len(s) > maxRank:
		return nil, 0, x.t.fail(errRank(op, s)), false
	case !ok:
		return nil, 0, x.t.fail(errorf("%s: axis %d out of range for shape %v, want %s", op, axis, s, axisWant(len(s), false))), false
	}
	return s, ax, Var{}, true
}

// SliceAxis returns elements [lo, hi) of x along axis (negative counts from
// the end), as a copy. Slice is the zero-copy form for axis 0.
func SliceAxis(x Var, axis, lo, hi int) Var {
	s, ax, bad, ok := liveAxis("SliceAxis", x, axis)
	if !ok {
		return bad
	}
	if lo < 0 || lo > hi || hi > s[ax] {
		return x.t.fail(errorf("SliceAxis: range [%d, %d) of axis %d; want 0 ≤ lo ≤ hi ≤ %d (shape %v)", lo, hi, axis, s[ax], s))
	}
	var crops [2 * maxRank]int
	crops[2*ax], crops[2*ax+1] = lo, s[ax]-hi
	return Crop(x, crops[:2*len(s)]...)
}

// PadAxis pads x with before zeros at the start and after zeros at the end
// of axis (negative counts from the end).
func PadAxis(x Var, axis, before, after int) Var {
	s, ax, bad, ok := liveAxis("PadAxis", x, axis)
	if !ok {
		return bad
	}
	var pads [2 * maxRank]int
	pads[2*ax], pads[2*ax+1] = before, after
	return Pad(x, pads[:2*len(s)]...)
}

// checkPads checks (before, after) pairs for shape s; with crop, that they
// fit inside it.
func checkPads(a Attrs, s []int, crop bool) error {
	what := "pads"
	if crop {
		what = "crops"
	}
	if len(a.Ints) != 2*len(s) {
		return fmt.Errorf("%d %s %v for shape %v; want 2 per axis, %d", len(a.Ints), what, a.Ints, s, 2*len(s))
	}
	if len(s) > maxRank {
		return fmt.Errorf("rank of %v exceeds %d", s, maxRank)
	}
	for i, d := range s {
		b, e := a.Ints[2*i], a.Ints[2*i+1]
		if b < 0 || e < 0 {
			return fmt.Errorf("%s %v for shape %v: axis %d has (%d, %d); want both ≥ 0", what, a.Ints, s, i, b, e)
		}
		if crop && b+e > d {
			return fmt.Errorf("crops %v for shape %v: axis %d crops %d+%d of %d elements, want at most %d in all", a.Ints, s, i, b, e, d, d)
		}
	}
	return nil
}

func (*padPrim) Name() string { return "Pad" }
func (*padPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if err := checkPads(a, in[0], false); err != nil {
		return dst, err
	}
	for i, d := range in[0] {
		dst = append(dst, d+a.Ints[2*i]+a.Ints[2*i+1])
	}
	return dst, nil
}

// rowMajor returns the row-major strides of shape s, and the flat offset of
// the element at the "before" corner of the (before, after) pairs.
func rowMajor(s, pairs []int) (st [maxRank]int, base int) {
	stride := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = stride
		base += pairs[2*i] * stride
		stride *= s[i]
	}
	return st, base
}

// lastDim is the length of a row of shape s (1 for a scalar).
func lastDim(s []int) int {
	if len(s) == 0 {
		return 1
	}
	return s[len(s)-1]
}

// copyWindow copies, row by row, between the dense small and the window
// of big that the (before, after) pairs leave: into the window with into
// (Pad), out of it otherwise (Crop).
func copyWindow[T flat.Float](small, big flat.TensorOf[T], pairs []int, into bool) {
	if len(small.Data) == 0 {
		return
	}
	bst, base := rowMajor(big.Shape, pairs)
	var zero [maxRank]int
	n := lastDim(small.Shape)
	s, b := small.Data, big.Data[base:]
	// One loop per direction: a test of into per row costs Pad and Crop
	// about 12% more instructions (callgrind).
	if into {
		rows(small.Shape, &bst, &zero, func(is, ib, _ int) { copy(b[ib:ib+n], s[is:is+n]) })
	} else {
		rows(small.Shape, &bst, &zero, func(is, ib, _ int) { copy(s[is:is+n], b[ib:ib+n]) })
	}
}

func (*padPrim) Forward(f *Forward)   { pad(f.In[0], f.Out, f.Attrs.Ints) }
func (*padPrim) Forward64(f *Forward) { pad(f.In64[0], f.Out64, f.Attrs.Ints) }

func pad[T flat.Float](x, out flat.TensorOf[T], pads []int) {
	clear(out.Data)
	copyWindow(x, out, pads, true)
}
func (*padPrim) JVP(r *Rule) Var    { return Pad(r.Tangent(0), r.Attrs.Ints...) }
func (*padPrim) VJP(r *Rule, c Var) { r.AddGrad(0, Crop(c, r.Attrs.Ints...)) }

func (*cropPrim) Name() string { return "Crop" }
func (*cropPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if err := checkPads(a, in[0], true); err != nil {
		return dst, err
	}
	for i, d := range in[0] {
		dst = append(dst, d-a.Ints[2*i]-a.Ints[2*i+1])
	}
	return dst, nil
}
func (*cropPrim) Forward(f *Forward)   { copyWindow(f.Out, f.In[0], f.Attrs.Ints, false) }
func (*cropPrim) Forward64(f *Forward) { copyWindow(f.Out64, f.In64[0], f.Attrs.Ints, false) }
func (*cropPrim) JVP(r *Rule) Var      { return Crop(r.Tangent(0), r.Attrs.Ints...) }
func (*cropPrim) VJP(r *Rule, c Var)   { r.AddGrad(0, Pad(c, r.Attrs.Ints...)) }
