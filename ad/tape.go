package ad

import (
	"errors"
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/flat"
)

// Tape records the operations applied to its Vars so that they can be
// differentiated: in reverse mode by Grad, Backward and VJP, in forward
// mode by JVP.
// A derivative sweep records its own operations on the same tape, so its
// results are Vars that can be differentiated again.
//
// A Tape owns the memory of every Var made on it: values, shapes and
// gradients live in arenas that Reset rewinds, so a training loop that
// replays the same computation allocates nothing after the first step.
// A Tape is not safe for concurrent use.
type Tape struct {
	gen   uint32
	nodes []node
	f32   arena[float32]
	f64   arena[float64]
	ints  arena[int]
	ids   arena[int32]
	err   error

	params  []int32     // node ids made by Param, in order
	grads   [][]float32 // gradient of each float32 param after Backward; nil if none
	grads64 [][]float64 // gradient of each float64 param after Backward; nil if none

	order  int // derivative order of the nodes being recorded (see node.order)
	sweeps int // sweeps in progress, to catch re-entry from a rule

	// What makes a recording unsafe to replay (see replay.go). readAt is
	// the number of nodes when Go code first read or wrote a value
	// through a Var. savedAt is the first node whose kernel saved
	// residuals, which rules copy into later ops' attributes. Each is
	// plus one, 0 for none.
	readAt  int32
	savedAt int32
	// sharedInts are the Ints of the op applySharedInts is recording.
	sharedInts []int
	plan       replayPlan // the replay's, for the recording of generation plan.gen

	shapeArgs    [][]int         // scratch for Primitive.Shape
	outShape     []int           // scratch for Primitive.Shape's result
	fwdArgs      []flat.Tensor   // scratch for Primitive.Forward
	fwdArgs64    []flat.Tensor64 // scratch for Float64Kernel.Forward64
	fwd          Forward         // passed to Primitive.Forward
	rules        []*Rule         // one per nesting depth of rule calls
	pieces       []piece         // view-of-wrt cotangents during a reverse sweep
	piecesOf     []piece         // scratch: the pieces of one wrt node
	piecesSorted []piece         // scratch: piecesOf sorted by offset
	parts        []Var           // scratch: the parts of an assembled cotangent
	resBuf       []Var           // scratch: a reverse sweep's results
	varBuf       []Var           // scratch: see varScratch
}

type nodeKind uint8

const (
	kindOp nodeKind = iota
	kindParam
	kindConst
)

// node is one recorded value: the primitive that made it, its inputs, and
// its value, in data (float32) or data64 (float64) as f64 says.
type node struct {
	prim   Primitive
	in     []int32
	shape  []int
	data   []float32
	data64 []float64
	attrs  Attrs
	saved  []int
	kind   nodeKind
	alias  bool // prim is an Aliaser: data views an input's
	f64    bool // the value is float64, in data64
	// converted marks a ParamFloat64: data64 is the tape's float64 copy
	// of a float32 buffer, which Rebind converts again.
	converted bool
	// order is how many derivative sweeps lie between the user's code and
	// this node: 0 for the user's own operations, k+1 for operations made by
	// a rule applied to a node of order k. It names the order of a missing rule.
	order int32
}

// Var is a handle to a value recorded on a Tape. The zero Var is "no value":
// rules use it for a structural zero (a tangent or cotangent that is zero by
// construction). A Var must not be used after its tape's Reset; doing so is
// an error recorded on the tape.
type Var struct {
	t   *Tape
	id  int32
	gen uint32
}

// NewTape returns an empty tape.
func NewTape() *Tape { return &Tape{gen: 1} }

// Reset forgets every Var and rewinds the tape's memory for reuse. Vars and
// gradient slices from before the Reset must not be used afterwards.
func (t *Tape) Reset() {
	clear(t.nodes) // drop references to primitives and user data
	t.nodes = t.nodes[:0]
	t.f32.reset()
	t.f64.reset()
	t.ints.reset()
	t.ids.reset()
	t.err = nil
	t.params = t.params[:0]
	t.grads = t.grads[:0]
	t.grads64 = t.grads64[:0]
	t.order = 0
	t.readAt, t.savedAt = 0, 0
	if len(t.plan.steps) > 0 { // drop the plan's references to callers' data
		clear(t.plan.steps)
		clear(t.plan.args)
		t.plan.steps = t.plan.steps[:0]
	}
	t.gen++
}

// Err returns the first error recorded on the tape, if any.
func (t *Tape) Err() error { return t.err }

// Len returns the number of values recorded since the last Reset.
func (t *Tape) Len() int { return len(t.nodes) }

// Fail records err as the tape's error, unless one is already recorded, and
// returns a failed Var: later ops on it are no-ops and Grad, Backward and
// Err report the first error. Code built on ad ops (layers, losses) uses it
// for bad input that no op can see, such as a class label out of range.
// A nil err keeps the recorded error, or records a generic one if there is
// none, so the returned Var is always a failure that is reported.
func (t *Tape) Fail(err error) Var {
	if err == nil {
		err = errors.New("ad: Fail called with a nil error")
	}
	return t.fail(err)
}

// WrapErr replaces the recorded error err, if there is one, by wrap(err):
// for code built on ad ops that adds context to an error an op inside it
// recorded, as model's containers add the path of the layer that failed.
// wrap should keep err reachable by wrapping it (errors.Is, errors.As);
// a nil result keeps err.
func (t *Tape) WrapErr(wrap func(error) error) {
	if t.err != nil {
		if e := wrap(t.err); e != nil {
			t.err = e
		}
	}
}

func (t *Tape) fail(err error) Var {
	if t.err == nil {
		t.err = err
	}
	return Var{t: t, id: -1, gen: t.gen}
}

// failed is the handle every op returns once the tape holds an error.
func (t *Tape) failed() Var { return Var{t: t, id: -1, gen: t.gen} }

// check validates v for use on t, recording an error if it is stale, foreign
// or failed. It reports whether the op may go on.
func (t *Tape) check(op string, v Var) bool {
	switch {
	case v.t == nil:
		t.fail(errorf("%s: an input is the zero Var (no value)", op))
	case v.t != t:
		t.fail(errorf("%s: an input belongs to another tape", op))
	case v.gen != t.gen:
		t.fail(errorf("%s: an input is from before a Reset (generation %d, tape at %d)", op, v.gen, t.gen))
	case v.id < 0:
		return false // an earlier error is already recorded
	case int(v.id) >= len(t.nodes):
		t.fail(errorf("%s: an input refers to value %d, the tape holds %d", op, v.id, len(t.nodes)))
	default:
		return true
	}
	return false
}

// live reports whether v is a valid value of t, without recording anything;
// callers use it as the fast path before check builds an error message.
func (t *Tape) live(v Var) bool {
	return v.t == t && v.gen == t.gen && v.id >= 0 && int(v.id) < len(t.nodes)
}

func (t *Tape) push(n node) Var {
	n.order = int32(t.order)
	if len(t.nodes) == cap(t.nodes) {
		t.growNodes()
	}
	t.nodes = append(t.nodes, n)
	return Var{t: t, id: int32(len(t.nodes) - 1), gen: t.gen}
}

// minNodes is the node capacity of a tape's first allocation.
const minNodes = 512

// growNodes makes room for more nodes: 512 at first, then four times as
// many. append would start at one node and double (by 1.25 past 256),
// copying the nodes at each step; on a fresh tape those copies touch new
// memory, and each page touched for the first time is a page fault. That
// made a tape's first step many times its steady cost (bench deepchain's
// first call). A capacity not yet written costs address space only.
func (t *Tape) growNodes() {
	t.nodes = slices.Grow(t.nodes, max(minNodes, 3*cap(t.nodes)))
}

// Param records θ as a differentiable input: a flat vector whose gradient is
// a flat []float32 of the same length. θ is not copied: the tape reads it
// in place, so it must not change until the tape is Reset.
func (t *Tape) Param(θ []float32) Var {
	if t.err != nil {
		return t.failed()
	}
	shape := t.ints.alloc(1)
	shape[0] = len(θ)
	return t.pushParam(node{kind: kindParam, shape: shape, data: θ})
}

func (t *Tape) pushParam(nd node) Var {
	v := t.push(nd)
	t.params = append(t.params, v.id)
	t.grads = append(t.grads, nil)
	t.grads64 = append(t.grads64, nil)
	return v
}

// Const records a tensor that is not differentiated. Its data is not
// copied; it must not change until the tape is Reset. The tensor's shape
// escapes along with its data (escape analysis does not tell a struct's
// fields apart), so a loop that must not allocate makes the shape once,
// outside the loop, rather than as a literal in each call.
func (t *Tape) Const(x flat.Tensor) Var {
	if t.err != nil {
		return t.failed()
	}
	n, err := flat.SizeOf(x.Shape)
	if err != nil {
		return t.fail(errorf("Const: %w", err))
	}
	if n != len(x.Data) {
		return t.fail(errorf("Const: shape %v holds %d numbers, data has %d, want %d", x.Shape, n, len(x.Data), n))
	}
	return t.push(node{kind: kindConst, shape: t.ints.copyOf(x.Shape), data: x.Data})
}

// Scalar records a constant scalar.
func (t *Tape) Scalar(x float32) Var {
	if t.err != nil {
		return t.failed()
	}
	d := t.f32.alloc(1)
	d[0] = x
	return t.push(node{kind: kindConst, shape: t.ints.alloc(0), data: d})
}

// Full records a constant of the given shape filled with x.
func (t *Tape) Full(x float32, shape ...int) Var {
	if t.err != nil {
		return t.failed()
	}
	n, err := flat.SizeOf(shape)
	if err != nil {
		return t.fail(errorf("Full: %w", err))
	}
	d := t.f32.alloc(n)
	flat.Fill(d, x)
	return t.push(node{kind: kindConst, shape: t.ints.copyOf(shape), data: d})
}

// Tape returns the tape v is recorded on.
func (v Var) Tape() *Tape { return v.t }

// IsZero reports whether v is the zero Var (a structural zero in rules).
func (v Var) IsZero() bool { return v.t == nil }

func (v Var) node() *node {
	if v.t == nil || v.id < 0 || v.gen != v.t.gen || int(v.id) >= len(v.t.nodes) {
		return nil
	}
	return &v.t.nodes[v.id]
}

// read is node for an access to v's values, which Go code may act on:
// ops recorded after it may depend on them, so the tape notes the first.
func (v Var) read() *node {
	n := v.node()
	if n != nil && v.t.readAt == 0 {
		v.t.readAt = int32(len(v.t.nodes)) + 1
	}
	return n
}

// Shape returns v's shape; nil if v is not a live value. Do not modify it.
func (v Var) Shape() []int {
	if n := v.node(); n != nil {
		return n.shape
	}
	return nil
}

// Value returns v's value as a tensor viewing the tape's memory (or the
// caller's, for Param and Const). Do not modify it. A float64 Var has no
// float32 value: its Value has v's shape and no data; use Value64.
func (v Var) Value() flat.Tensor {
	if n := v.read(); n != nil {
		return flat.Tensor{Shape: n.shape, Data: n.data}
	}
	return flat.Tensor{}
}

// Data returns v's values in row-major order; see Value. It is nil for a
// float64 Var; use Data64.
func (v Var) Data() []float32 {
	if n := v.read(); n != nil {
		return n.data
	}
	return nil
}

// Size returns the number of elements of v.
func (v Var) Size() int {
	if n := v.node(); n != nil {
		return n.size()
	}
	return 0
}

// Item returns the value of a one-element Var, rounded to float32 if v is
// float64, or NaN if v has another size.
func (v Var) Item() float32 {
	n := v.read()
	if n == nil || n.size() != 1 {
		return nan32
	}
	if n.f64 {
		return float32(n.data64[0])
	}
	return n.data[0]
}

func (v Var) String() string {
	switch n := v.read(); {
	case v.t == nil:
		return "Var(zero)"
	case n == nil:
		return "Var(invalid)"
	default:
		name := "param"
		switch n.kind {
		case kindConst:
			name = "const"
		case kindOp:
			name = n.prim.Name()
		}
		if n.f64 {
			return fmt.Sprintf("Var#%d(%s, float64) %v", v.id, name, flat.Tensor64{Shape: n.shape, Data: n.data64})
		}
		return fmt.Sprintf("Var#%d(%s) %v", v.id, name, flat.Tensor{Shape: n.shape, Data: n.data})
	}
}

var errNoGrad = errors.New("no gradient: call Backward first")
