package ad

import (
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/flatkit/flatkit/flat"
)

var nan32 = float32(math.NaN())

// Attrs are the parameters of one application of a primitive. Ints hold
// axes, offsets, shapes and indices; Floats hold slopes and bounds, in
// float64 so that a float64 op keeps them exactly (a float32 kernel rounds
// them to float32). Apply copies them onto the tape.
type Attrs struct {
	Ints   []int
	Floats []float64
}

// Primitive is an operation with a forward kernel. Every op of the package is
// a Primitive applied with Apply, and a user's op is added the same way.
//
// Derivative rules are optional interfaces: a primitive that is a JVPRule
// can be differentiated in forward mode, a VJPRule in reverse mode. Rules are
// written with ops (Apply of primitives), never raw loops, so the derivative
// of a rule is again recorded and differentiable: if every primitive a rule
// uses has rules, derivatives of any order compose. A sweep that meets a
// primitive without the rule it needs records an error naming the primitive
// and the order; it never returns a silent zero.
//
// A primitive value is stored on the tape at each application; use a pointer
// or a zero-size type so that storing it does not allocate.
type Primitive interface {
	// Name names the op in errors.
	Name() string
	// Shape appends the output shape for inputs of the given shapes to dst,
	// or returns an error saying what was expected and what came.
	Shape(dst []int, in [][]int, a Attrs) ([]int, error)
	// Forward computes f.Out from f.In. f.Out.Data has unspecified contents
	// and must be written in full.
	Forward(f *Forward)
}

// JVPRule is a Primitive with a forward-mode rule: it returns the tangent of
// the output given the tangents of the inputs (r.Tangent), or the zero Var
// if the output's tangent is zero by construction.
type JVPRule interface {
	JVP(r *Rule) Var
}

// VJPRule is a Primitive with a reverse-mode rule: given the cotangent of the
// output, it adds the cotangent of each input that needs one (r.Need,
// r.AddGrad).
type VJPRule interface {
	VJP(r *Rule, cot Var)
}

// Aliaser is a Primitive whose output shares the memory of its inputs
// (reshape, view): Alias returns the output's data and Forward is not called.
type Aliaser interface {
	Alias(in []flat.Tensor, a Attrs) []float32
}

// Forward is what a primitive's kernel reads and writes: In and Out for
// float32 values (Forward), In64 and Out64 for float64 ones (Forward64 of a
// Float64Kernel). The fields of the other precision are nil. Convert is the
// one op whose input and output precisions differ.
type Forward struct {
	In    []flat.Tensor
	Out   flat.Tensor
	In64  []flat.Tensor64
	Out64 flat.Tensor64
	Attrs Attrs
	t     *Tape
	saved []int
}

// Save returns n ints kept with the output, for residuals such as the
// argmax of a max; rules read them as Rule.Saved.
func (f *Forward) Save(n int) []int {
	if t := f.t; t.savedAt == 0 {
		t.savedAt = int32(len(t.nodes)) + 1
	}
	f.saved = f.t.ints.alloc(n)
	return f.saved
}

// Rule is what a derivative rule reads: the inputs and output of the op as
// Vars, its attributes and saved residuals, and (in forward mode) the input
// tangents.
type Rule struct {
	In    []Var
	Out   Var
	Attrs Attrs
	Saved []int

	t        *Tape
	prim     Primitive
	order    int
	tangents []Var
	need     []bool
	inIDs    []int32
	cot      []int32 // the reverse sweep's cotangent slots
	lo       int32   // first node of the sweep

	// In a sweep that overwrites raw buffers (Backward): direct maps a node
	// of the sweep to its entry of dests, or -1; nil in other sweeps.
	direct []int32
	dests  []gradDest
	raw    [][]float32
}

// gradDest is a View of a node the sweep differentiates with respect to
// (the wrt-th), covering [off, off+len) of it. ok marks a view whose
// cotangent may be written straight into that range of the raw buffer: it
// is used once, and no other use of the wrt node overlaps it.
type gradDest struct {
	wrt, off, len int
	node          int32
	ok            bool
}

// gradDest returns the range of the raw gradient buffer that input i's
// cotangent is copied into at the end of the sweep, when it can be computed
// there directly instead: in a Backward, when input i is a View of a Param
// that nothing else uses and that no other use of the Param overlaps. The
// rule then computes the cotangent with applyInto(dst, …) and passes that
// Var (or a Reshape of it) to AddGrad(i, …) as usual, and uses it for
// nothing else: the copy at the end sees the same memory and is skipped.
// It returns nil otherwise, and at most once per input.
func (r *Rule) gradDest(i int) []float32 {
	if r.direct == nil || !r.need[i] {
		return nil
	}
	in := r.inIDs[i]
	if in < r.lo {
		return nil
	}
	j := r.direct[in-r.lo]
	if j < 0 {
		return nil
	}
	r.direct[in-r.lo] = -1
	d := r.dests[j]
	return r.raw[d.wrt][d.off : d.off+d.len : d.off+d.len]
}

// Tangent returns the tangent of input i, or the zero Var if it has none.
func (r *Rule) Tangent(i int) Var { return r.tangents[i] }

// Need reports whether input i needs a cotangent; rules may skip the others.
func (r *Rule) Need(i int) bool { return r.need[i] }

// AddGrad adds g to the cotangent of input i. A zero g is ignored. g must
// have the shape of input i.
func (r *Rule) AddGrad(i int, g Var) {
	if g.IsZero() || !r.need[i] {
		return
	}
	t := r.t
	if !t.live(g) && !t.check(r.prim.Name()+" VJP", g) {
		return
	}
	target := r.inIDs[i]
	if got, want := t.nodes[g.id].shape, t.nodes[target].shape; !slices.Equal(got, want) {
		t.fail(errorf("the VJP rule of %s gave input %d a cotangent of shape %v, want %v", r.prim.Name(), i, got, want))
		return
	}
	slot := &r.cot[target-r.lo]
	if *slot < 0 {
		*slot = g.id
		return
	}
	*slot = Add(Var{t: t, id: *slot, gen: t.gen}, g).id
}

// Tape returns the tape the rule records on.
func (r *Rule) Tape() *Tape { return r.t }

// Apply records prim applied to the inputs with the given attributes and
// returns its output. If the tape already holds an error, or an input is
// invalid, or the shapes do not fit, it returns a failed Var and the error is
// kept on the tape.
func Apply(p Primitive, a Attrs, in ...Var) Var { return apply(nil, p, a, in) }

// applyInto is Apply with dst as the output's storage, when dst has the
// output's size and p computes its output (is not an Aliaser); otherwise it
// is Apply. Rules use it to write a cotangent straight into the gradient
// buffer of a Backward (see Rule.gradDest); the op is recorded as usual.
func applyInto(dst []float32, p Primitive, a Attrs, in ...Var) Var { return apply(dst, p, a, in) }

// applySharedInts is Apply with a.Ints kept as given rather than copied:
// for ints that already live in the tape's arena until the next Reset,
// such as a rule's Saved residuals, which may be long (one per output of
// a max-pool).
// The ints reach apply through the tape (Tape.sharedInts), not through
// its Attrs: an Attrs whose Ints apply could keep would make every
// caller's attribute array escape to the heap.
func applySharedInts(p Primitive, ints []int, in ...Var) Var {
	t := in[0].t
	t.sharedInts = ints
	v := apply(nil, p, Attrs{}, in)
	t.sharedInts = nil
	return v
}

// asRule returns p as the optional interface I (Aliaser, VJPRule, JVPRule)
// if its type implements it. It is the assertion p.(I) written in generic
// code on purpose: an assertion to an interface type named at the call site
// keeps a per-site cache of the types it has seen, and now and then (about
// one miss in a thousand) the runtime grows that cache, which allocates; a
// tape cycles through a few dozen primitive types, so steady-state steps
// allocated once in a few dozen until every site's cache held them all. An
// assertion to a type parameter asks the runtime's itab table directly (a
// hash look-up) and never allocates once the itab exists.
func asRule[I any](p Primitive) (I, bool) {
	r, ok := p.(I)
	return r, ok
}

// aliaserOf is asRule[Aliaser] with the answer remembered per primitive
// type. Every apply asks, and most types are not Aliasers, so the common
// case skips the itab look-up, which shows in bench deepchain's forward. aliasKnown is direct-mapped by the type's key
// (primKey): an entry holds the key, its low bit set for an Aliaser. A
// collision only costs a look-up; writing an entry allocates nothing.
// A type remembered as an Aliaser is asserted without writing its entry
// again: the atomic store is a locked exchange, paid on every view of a
// chain of views.
func aliaserOf(p Primitive) (Aliaser, bool) {
	key := primKey(p)
	e := &aliasKnown[(key>>4)%uintptr(len(aliasKnown))]
	if v := e.Load(); v&^1 == key && key != 0 {
		if v&1 == 0 {
			return nil, false
		}
		return asRule[Aliaser](p)
	}
	al, ok := asRule[Aliaser](p)
	if ok {
		e.Store(key | 1)
	} else {
		e.Store(key)
	}
	return al, ok
}

var aliasKnown [64]atomic.Uintptr

// primKey identifies p's dynamic type: the first word of the interface
// value, its type descriptor for (Primitive, dynamic type), the same for
// every value of that type and 8-byte aligned. It is only compared, never
// followed.
func primKey(p Primitive) uintptr { return (*[2]uintptr)(unsafe.Pointer(&p))[0] }

func apply(dst []float32, p Primitive, a Attrs, in []Var) Var {
	if len(in) == 0 {
		panic("ad: Apply " + p.Name() + " with no inputs; use Tape.Const for constants")
	}
	t := in[0].t
	if t == nil {
		// No tape to record on: find one among the other inputs.
		for _, v := range in {
			if v.t != nil {
				t = v.t
				break
			}
		}
		if t == nil {
			panic("ad: Apply " + p.Name() + " to zero Vars only")
		}
	}
	if t.err != nil {
		return t.failed()
	}
	shapes := t.shapeArgs[:0]
	ids := t.ids.alloc(len(in))
	any64 := false
	for i, v := range in {
		if !t.check(p.Name(), v) {
			return t.failed()
		}
		ids[i] = v.id
		nd := &t.nodes[v.id]
		shapes = append(shapes, nd.shape)
		any64 = any64 || nd.f64
	}
	t.shapeArgs = shapes
	ca := Attrs{Ints: t.ints.copyOf(a.Ints)}
	if len(a.Floats) > 0 { // a float32-only tape need not start a float64 arena
		ca.Floats = t.f64.copyOf(a.Floats)
	}
	if t.sharedInts != nil {
		ca.Ints, t.sharedInts = t.sharedInts, nil
	}
	out, err := p.Shape(t.outShape[:0], shapes, ca)
	if err != nil {
		return t.fail(errorf("%s: %w", p.Name(), err))
	}
	t.outShape = out
	n := 1
	for _, d := range out {
		n *= d
	}
	shape := t.ints.copyOf(out)
	if any64 || p == Primitive(convertOp) {
		return t.apply64(p, ca, ids, shape, n)
	}
	// The scratch below lives in the tape (on the heap, so that passing it
	// to the primitive allocates nothing); it is written and cleared field
	// by field, which is cheaper than whole-struct copies of
	// pointer-holding structs.
	if cap(t.fwdArgs) < len(ids) {
		t.fwdArgs = make([]flat.Tensor, len(ids))
	}
	args := t.fwdArgs[:len(ids)]
	for i, id := range ids {
		nd := &t.nodes[id]
		args[i].Shape, args[i].Data = nd.shape, nd.data
	}
	nd := node{kind: kindOp, prim: p, in: ids, shape: shape, attrs: ca}
	if al, ok := aliaserOf(p); ok {
		nd.data, nd.alias = al.Alias(args, ca), true
	} else {
		data := dst
		if len(data) != n {
			data = t.f32.alloc(n)
		}
		f := &t.fwd
		f.In, f.Out.Shape, f.Out.Data, f.Attrs, f.t, f.saved = args, shape, data, ca, t, nil
		p.Forward(f)
		nd.data, nd.saved = f.Out.Data, f.saved
		f.In, f.Out.Shape, f.Out.Data, f.Attrs.Ints, f.Attrs.Floats, f.saved = nil, nil, nil, nil, nil, nil
	}
	for i := range args {
		args[i].Shape, args[i].Data = nil, nil // do not keep callers' data reachable from scratch
	}
	return t.push(nd)
}
