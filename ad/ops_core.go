package ad

import (
	"fmt"
	"math"
	"slices"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
)

// The structural ops: views, reshapes, broadcasting, and the linear ops
// that are their adjoints. Each is a primitive with both rules, written with
// ops of the set.

type (
	viewPrim        struct{}
	embedPrim       struct{}
	reshapePrim     struct{}
	identityPrim    struct{}
	concatPrim      struct{}
	sumToPrim       struct{}
	broadcastToPrim struct{}
)

var (
	viewOp        = &viewPrim{}
	embedOp       = &embedPrim{}
	reshapeOp     = &reshapePrim{}
	identityOp    = &identityPrim{}
	concatOp      = &concatPrim{}
	sumToOp       = &sumToPrim{}
	broadcastToOp = &broadcastToPrim{}
)

func sizeOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// View returns the values of v from flat offset off on, viewed with the
// given shape, without copying. Its cotangent flows back into exactly that
// range of v's gradient: viewing a Param gives each layer its parameters.
func View(v Var, off int, shape ...int) Var {
	var ints [maxRank + 1]int
	if len(shape) > maxRank {
		return v.t.fail(errorf("View: rank %d exceeds %d", len(shape), maxRank))
	}
	// A view of a view is recorded as one view of the underlying value:
	// the same memory, and the cotangent then flows straight into that
	// value's range (for a Param, as a piece of the flat gradient) instead
	// of being embedded into a zero tensor of every intermediate view's
	// size, which made nested containers cost O(params) per layer.
	if t := v.t; t != nil && t.err == nil && t.live(v) {
		if nd := &t.nodes[v.id]; nd.prim == viewOp {
			if n, ok := viewSize(shape); ok && off >= 0 && off+n <= nd.size() {
				off += nd.attrs.Ints[0]
				v = Var{t: t, id: nd.in[0], gen: t.gen}
			}
		}
	}
	ints[0] = off
	copy(ints[1:], shape)
	return Apply(viewOp, Attrs{Ints: ints[:1+len(shape)]}, v)
}

// viewSize is the number of elements of shape, and false if a dimension is
// negative or the product exceeds the int range of a slice (the cases that
// flat.SizeOf reports as errors, without keeping shape reachable).
func viewSize(shape []int) (int, bool) {
	n := 1
	for _, d := range shape {
		if d < 0 || d > 0 && n > math.MaxInt32/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func (*viewPrim) Name() string { return "View" }
func (*viewPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	off, shape := a.Ints[0], a.Ints[1:]
	n, err := flat.SizeOf(shape)
	if err != nil {
		return dst, err
	}
	if size := sizeOf(in[0]); off < 0 || off+n > size {
		return dst, fmt.Errorf("range [%d, %d) for shape %v lies outside the input's %d elements (shape %v), want a range within [0, %d)", off, off+n, shape, size, in[0], size)
	}
	return append(dst, shape...), nil
}
func (*viewPrim) Forward(*Forward)                              {}
func (*viewPrim) Alias(in []flat.Tensor, a Attrs) []float32     { return viewOf(in[0].Data, a) }
func (*viewPrim) Alias64(in []flat.Tensor64, a Attrs) []float64 { return viewOf(in[0].Data, a) }

func viewOf[T flat.Float](x []T, a Attrs) []T {
	off := a.Ints[0]
	end := off + sizeOf(a.Ints[1:])
	return x[off:end:end]
}
func (*viewPrim) JVP(r *Rule) Var { return View(r.Tangent(0), r.Attrs.Ints[0], r.Attrs.Ints[1:]...) }
func (*viewPrim) VJP(r *Rule, c Var) {
	r.AddGrad(0, embed(c, r.Attrs.Ints[0], r.In[0].Shape()))
}

// ViewPath is View of the leaf at path of lay, for p holding a buffer laid
// out by lay.
func ViewPath(p Var, lay *layout.Layout, path string) Var {
	t := p.t
	if t == nil || t.err != nil {
		return Var{t: t, id: -1}
	}
	if got := p.Size(); got != lay.Len() {
		return t.fail(errorf("ViewPath %q: the Var holds %d floats, want %d (the layout's length)", path, got, lay.Len()))
	}
	lf, ok := lay.Find(path)
	if !ok {
		_, _, err := lay.Range(path)
		if err == nil {
			err = fmt.Errorf("%q is a group, not a leaf", path)
		}
		return t.fail(errorf("ViewPath: %w", err))
	}
	return View(p, lf.Offset, lf.Shape...)
}

// Slice returns rows [lo, hi) of v along its first axis, without copying.
func Slice(v Var, lo, hi int) Var {
	s := v.Shape()
	if v.t != nil && v.t.err == nil && (len(s) == 0 || lo < 0 || hi > s[0] || lo > hi) {
		if len(s) == 0 {
			return v.t.fail(errorf("Slice [%d, %d) of shape %v, want rank ≥ 1", lo, hi, s))
		}
		return v.t.fail(errorf("Slice [%d, %d) of shape %v, want 0 ≤ lo ≤ hi ≤ %d", lo, hi, s, s[0]))
	}
	if s == nil {
		return View(v, 0)
	}
	var shape [maxRank]int
	copy(shape[:], s)
	shape[0] = hi - lo
	return View(v, lo*sizeOf(s[1:]), shape[:len(s)]...)
}

// embed places x at flat offset off of a zero tensor of the given shape.
func embed(x Var, off int, shape []int) Var {
	var ints [maxRank + 1]int
	ints[0] = off
	copy(ints[1:], shape)
	return Apply(embedOp, Attrs{Ints: ints[:1+len(shape)]}, x)
}

func (*embedPrim) Name() string { return "Embed" }
func (*embedPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	off, shape := a.Ints[0], a.Ints[1:]
	if n, size := sizeOf(in[0]), sizeOf(shape); off < 0 || off+n > size {
		return dst, fmt.Errorf("%d elements at offset %d do not fit in shape %v", n, off, shape)
	}
	return append(dst, shape...), nil
}
func (*embedPrim) Forward(f *Forward)   { embedInto(f.Out.Data, f.In[0].Data, f.Attrs.Ints[0]) }
func (*embedPrim) Forward64(f *Forward) { embedInto(f.Out64.Data, f.In64[0].Data, f.Attrs.Ints[0]) }

func embedInto[T flat.Float](out, x []T, off int) {
	clear(out)
	copy(out[off:], x)
}
func (*embedPrim) JVP(r *Rule) Var { return embed(r.Tangent(0), r.Attrs.Ints[0], r.Attrs.Ints[1:]) }
func (*embedPrim) VJP(r *Rule, c Var) {
	r.AddGrad(0, View(c, r.Attrs.Ints[0], r.In[0].Shape()...))
}

// Reshape returns v with a new shape holding the same number of elements,
// without copying. One dimension may be -1.
func Reshape(v Var, shape ...int) Var {
	return Apply(reshapeOp, Attrs{Ints: shape}, v)
}

func (*reshapePrim) Name() string { return "Reshape" }
func (*reshapePrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	n := sizeOf(in[0])
	infer, known := -1, 1
	for i, d := range a.Ints {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return dst, fmt.Errorf("shape %v: dimension %d is %d, want ≥ 0 (or -1 in one dimension)", a.Ints, i, d)
		default:
			known *= d
		}
	}
	dst = append(dst, a.Ints...)
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return dst, fmt.Errorf("cannot infer -1 in %v for %d elements (input %v), want the other dimensions' product (%d) nonzero and dividing %d", a.Ints, n, in[0], known, n)
		}
		dst[len(dst)-len(a.Ints)+infer] = n / known
		return dst, nil
	}
	if known != n {
		return dst, fmt.Errorf("input %v has %d elements, shape %v holds %d, want %d", in[0], n, a.Ints, known, n)
	}
	return dst, nil
}
func (*reshapePrim) Forward(*Forward)                              {}
func (*reshapePrim) Alias(in []flat.Tensor, _ Attrs) []float32     { return in[0].Data }
func (*reshapePrim) Alias64(in []flat.Tensor64, _ Attrs) []float64 { return in[0].Data }
func (*reshapePrim) JVP(r *Rule) Var                               { return Reshape(r.Tangent(0), r.Out.Shape()...) }
func (*reshapePrim) VJP(r *Rule, c Var)                            { r.AddGrad(0, Reshape(c, r.In[0].Shape()...)) }

// identity is a fresh node with v's value: GradVar differentiates with
// respect to it, so that uses of v captured by closures stay constants.
func identity(v Var) Var { return Apply(identityOp, Attrs{}, v) }

func (*identityPrim) Name() string { return "Identity" }
func (*identityPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*identityPrim) Forward(*Forward)                              {}
func (*identityPrim) Alias(in []flat.Tensor, _ Attrs) []float32     { return in[0].Data }
func (*identityPrim) Alias64(in []flat.Tensor64, _ Attrs) []float64 { return in[0].Data }
func (*identityPrim) JVP(r *Rule) Var                               { return r.Tangent(0) }
func (*identityPrim) VJP(r *Rule, c Var)                            { r.AddGrad(0, c) }

// concat0 joins vs along their first axis; the other axes must agree: the
// contiguous case of Concat(0, vs...), a copy of each input in turn.
func concat0(vs ...Var) Var { return Apply(concatOp, Attrs{}, vs...) }

func (*concatPrim) Name() string { return "Concat" }
func (*concatPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	first := in[0]
	if len(first) == 0 {
		return dst, fmt.Errorf("input 0 is a scalar; want rank ≥ 1")
	}
	rows := 0
	for i, s := range in {
		if len(s) != len(first) || !slices.Equal(s[1:], first[1:]) {
			return dst, fmt.Errorf("input %d has shape %v, want [_ %v] like input 0", i, s, first[1:])
		}
		rows += s[0]
	}
	dst = append(dst, rows)
	return append(dst, first[1:]...), nil
}
func (*concatPrim) Forward(f *Forward)   { concatInto(f.Out.Data, f.In) }
func (*concatPrim) Forward64(f *Forward) { concatInto(f.Out64.Data, f.In64) }

func concatInto[T flat.Float](out []T, in []flat.TensorOf[T]) {
	off := 0
	for _, x := range in {
		off += copy(out[off:], x.Data)
	}
}
func (*concatPrim) JVP(r *Rule) Var {
	t := r.t
	parts := t.varScratch(len(r.In))
	for i := range r.In {
		if tv := r.Tangent(i); !tv.IsZero() {
			parts[i] = tv
		} else {
			parts[i] = FullLike(r.In[i], 0, r.In[i].Shape()...)
		}
	}
	return concat0(parts...)
}
func (*concatPrim) VJP(r *Rule, c Var) {
	off := 0
	for i, x := range r.In {
		n := x.Size()
		if r.Need(i) {
			r.AddGrad(i, View(c, off, x.Shape()...))
		}
		off += n
	}
}

// varScratch returns a scratch slice of n Vars, valid until the next call:
// for rules that build the input list of one op.
func (t *Tape) varScratch(n int) []Var {
	if cap(t.varBuf) < n {
		t.varBuf = make([]Var, n)
	}
	t.varBuf = t.varBuf[:n]
	clear(t.varBuf)
	return t.varBuf
}

// SumTo sums v over the axes along which shape was broadcast to v's shape:
// it is the adjoint of BroadcastTo. Summing to v's own shape returns v.
func SumTo(v Var, shape ...int) Var {
	s := v.Shape()
	if slices.Equal(s, shape) {
		return v
	}
	// Summing over axes of size 1 only (a bias's cotangent at batch 1:
	// (1, n) to (n)) adds nothing up: it is a Reshape, which copies nothing.
	if s != nil && onlyUnitAxes(shape, s) {
		return Reshape(v, shape...)
	}
	return Apply(sumToOp, Attrs{Ints: shape}, v)
}

// onlyUnitAxes reports whether shape broadcasts to s along axes of size 1
// only (so the two hold the same elements in the same order). It records
// nothing, so that neither slice escapes.
func onlyUnitAxes(shape, s []int) bool {
	if len(shape) > len(s) || sizeOf(shape) != sizeOf(s) {
		return false
	}
	lead := len(s) - len(shape)
	for i, d := range shape {
		if d != s[lead+i] && d != 1 {
			return false
		}
	}
	return true
}

func (*sumToPrim) Name() string { return "SumTo" }
func (*sumToPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if err := checkBroadcastsTo(a.Ints, in[0]); err != nil {
		return dst, err
	}
	return append(dst, a.Ints...), nil
}
func (*sumToPrim) Forward(f *Forward)   { sumTo(f.In[0], f.Out) }
func (*sumToPrim) Forward64(f *Forward) { sumTo(f.In64[0], f.Out64) }

func sumTo[T flat.Float](x, out flat.TensorOf[T]) {
	clear(out.Data)
	so := bstrides(out.Shape, x.Shape)
	var zero, ms, mo, mz [maxRank]int
	shape := coalesce(x.Shape, &so, &zero, &ms, &mo, &mz)
	inner, last := 1, 0
	if r := len(shape); r > 0 {
		inner, last = shape[r-1], mo[r-1]
	}
	rows(shape, &mo, &mz, func(ix, io, _ int) {
		row := x.Data[ix : ix+inner]
		if last == 0 {
			out.Data[io] += sumOf(row)
			return
		}
		addInto(out.Data[io:io+inner], row)
	})
}
func (*sumToPrim) JVP(r *Rule) Var    { return SumTo(r.Tangent(0), r.Attrs.Ints...) }
func (*sumToPrim) VJP(r *Rule, c Var) { r.AddGrad(0, BroadcastTo(c, r.In[0].Shape()...)) }

// BroadcastTo repeats v along axes of size 1 (and new leading axes) to the
// given shape, by numpy's rules.
func BroadcastTo(v Var, shape ...int) Var {
	if slices.Equal(v.Shape(), shape) {
		return v
	}
	return Apply(broadcastToOp, Attrs{Ints: shape}, v)
}

func checkBroadcastsTo(from, to []int) error {
	var buf [maxRank]int
	got, err := broadcastShape(buf[:0], from, to)
	if err != nil || !slices.Equal(got, to) {
		return fmt.Errorf("shape %v does not broadcast to %v, want rank ≤ %d and each dimension, aligned at the end, 1 or the target's", from, to, len(to))
	}
	return nil
}

func (*broadcastToPrim) Name() string { return "BroadcastTo" }
func (*broadcastToPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if err := checkBroadcastsTo(in[0], a.Ints); err != nil {
		return dst, err
	}
	return append(dst, a.Ints...), nil
}
func (*broadcastToPrim) Forward(f *Forward)   { broadcastTo(f.In[0], f.Out) }
func (*broadcastToPrim) Forward64(f *Forward) { broadcastTo(f.In64[0], f.Out64) }

func broadcastTo[T flat.Float](x, out flat.TensorOf[T]) {
	sx := bstrides(x.Shape, out.Shape)
	var zero [maxRank]int
	inner, last := 1, 0
	if r := len(out.Shape); r > 0 {
		inner, last = out.Shape[r-1], sx[r-1]
	}
	rows(out.Shape, &sx, &zero, func(o, ix, _ int) {
		row := out.Data[o : o+inner]
		if last == 0 {
			v := x.Data[ix]
			for i := range row {
				row[i] = v
			}
			return
		}
		copy(row, x.Data[ix:ix+inner])
	})
}
func (*broadcastToPrim) JVP(r *Rule) Var    { return BroadcastTo(r.Tangent(0), r.Attrs.Ints...) }
func (*broadcastToPrim) VJP(r *Rule, c Var) { r.AddGrad(0, SumTo(c, r.In[0].Shape()...)) }

// sumOf returns the sum of x: flat's SIMD Sum for float32, a plain loop
// for float64.
func sumOf[T flat.Float](x []T) T {
	if x32, ok := any(x).([]float32); ok {
		return T(flat.Sum(x32))
	}
	var s T
	for _, v := range x {
		s += v
	}
	return s
}
