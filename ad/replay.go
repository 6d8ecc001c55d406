package ad

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// Replaying a recording. A function whose ops depend on the shapes of its
// inputs only, such as a network or an ODE right-hand side, records the
// same nodes at every call. Building them costs far more than the
// arithmetic of a small network: checks, shapes, arena slices, rule calls.
// Such a recording, derivative sweeps included, can instead be kept and
// re-run. Rebind gives its inputs new values, and ReplayFor runs the
// forward kernels again, in order, into the buffers they already have. A
// sweep's work is ops on the tape, so the derivatives come out of the
// replay too, as Vars of the recording (see VJPOf and JVPOf).
//
// What a replay cannot see, the tape refuses. One case is a recording
// during which Go code read a value through a Var (Data, Value, Item,
// String) and then recorded more ops, whose structure may depend on what
// it read. The other is a recording in which a kernel saved residuals,
// such as the argmax of Max and MaxPool, which rules copy into the
// attributes of later ops. Values that are neither Vars nor attributes,
// such as the time a closure reads, are the caller's to keep fixed.

// ErrNotReplayable is wrapped by the error of ReplayFor for a recording it
// cannot re-run.
var ErrNotReplayable = errors.New("ad: the recording cannot be replayed")

// Replayable reports whether ReplayFor can re-run the tape's recording. It
// returns nil, an error wrapping ErrNotReplayable that says why, or the
// tape's error.
func (t *Tape) Replayable() error {
	switch {
	case t.err != nil:
		return t.err
	case t.savedAt > 0:
		return fmt.Errorf("%w: %s (value %d) saved residuals, which later ops hold as attributes",
			ErrNotReplayable, t.nodes[t.savedAt-1].prim.Name(), t.savedAt-1)
	case t.readAt > 0 && int(t.readAt-1) < len(t.nodes):
		return fmt.Errorf("%w: a value was read through a Var when %d values were recorded, and %d more were recorded after it",
			ErrNotReplayable, t.readAt-1, len(t.nodes)-int(t.readAt-1))
	}
	return nil
}

// Rebind gives the Param or Const v new values for the next ReplayFor.
// data replaces v's data and must have v's size; it is not copied and must
// not change until the replay's results have been read. A replay reads
// inputs where they are: new values written into v's memory need no
// Rebind, and rebinding that memory costs nothing. After a Rebind to other
// memory, the next replay of each op that reads v, or a view of it, takes
// the new slice first.
func (t *Tape) Rebind(v Var, data []float32) error {
	if t.err != nil {
		return t.err
	}
	if !t.check("Rebind", v) {
		return t.err
	}
	nd := &t.nodes[v.id]
	if nd.kind == kindOp {
		return t.fail(errorf("Rebind: value %d is made by %s; want a Param or a Const", v.id, nd.prim.Name())).t.err
	}
	if nd.converted {
		// A ParamFloat64: convert the new values into its float64 copy.
		if len(data) != len(nd.data64) {
			return t.fail(errorf("Rebind: %d values for a ParamFloat64 of shape %v, want %d", len(data), nd.shape, len(nd.data64))).t.err
		}
		for i, x := range data {
			nd.data64[i] = float64(x)
		}
		return nil
	}
	if nd.f64 {
		return t.fail(errorf("Rebind: float32 values for a float64 %s; use Rebind64", kindName(nd.kind))).t.err
	}
	if len(data) != len(nd.data) {
		return t.fail(errorf("Rebind: %d values for a %s of shape %v, want %d", len(data), kindName(nd.kind), nd.shape, len(nd.data))).t.err
	}
	if len(data) > 0 && &data[0] != &nd.data[0] {
		// New memory: the plan's steps that read v, or views of it,
		// take the new slices at their next replay. Data in the same
		// memory is read where it is, and changes nothing.
		t.plan.bound++
	}
	nd.data = data[:len(data):len(data)]
	return nil
}

// Rebind64 is Rebind for a float64 Param64 or Const64: data replaces v's
// data, is not copied, and must have v's size.
func (t *Tape) Rebind64(v Var, data []float64) error {
	if t.err != nil {
		return t.err
	}
	if !t.check("Rebind64", v) {
		return t.err
	}
	nd := &t.nodes[v.id]
	switch {
	case nd.kind == kindOp:
		return t.fail(errorf("Rebind64: value %d is made by %s; want a Param or a Const", v.id, nd.prim.Name())).t.err
	case !nd.f64:
		return t.fail(errorf("Rebind64: float64 values for a float32 %s; use Rebind", kindName(nd.kind))).t.err
	case nd.converted:
		return t.fail(errorf("Rebind64: float64 values for a ParamFloat64, which converts a float32 buffer; use Rebind")).t.err
	case len(data) != len(nd.data64):
		return t.fail(errorf("Rebind64: %d values for a %s of shape %v, want %d", len(data), kindName(nd.kind), nd.shape, len(nd.data64))).t.err
	}
	if len(data) > 0 && &data[0] != &nd.data64[0] {
		t.plan.bound++
	}
	nd.data64 = data[:len(data):len(data)]
	return nil
}

func kindName(k nodeKind) string {
	if k == kindParam {
		return "Param"
	}
	return "Const"
}

// ReplayFor runs again the forward kernels of the ops that the values of
// vs depend on, in recording order, with the current values of their
// inputs (see Rebind). Each op writes its output into the buffer it
// already has, so each of vs holds what a fresh recording with those
// inputs would hold, bit for bit. Zero Vars among vs are skipped.
//
// The other values of the recording keep what they held: a VJP's
// recording replayed for its cotangents leaves out the function's own
// result. Results a sweep wrote outside the tape's values, such as
// Backward's gradients, are not updated; use VJPOf and JVPOf for
// derivatives that replay. Replaying for the same vs as the last time runs
// a plan made once and allocates nothing; other vs make another plan. A
// user's Primitive must compute its output from its inputs and attributes
// only.
//
// It returns the error of Replayable, and then runs nothing.
func (t *Tape) ReplayFor(vs ...Var) error {
	for _, v := range vs {
		if !v.IsZero() && !t.check("ReplayFor", v) {
			return t.err
		}
	}
	if err := t.Replayable(); err != nil {
		return err
	}
	pl := t.currentPlan()
	if !pl.forTargets(vs) {
		t.makeSubset(vs)
	}
	// The dispatch is written out on purpose, as in the tests' Replay: as
	// a function it is not inlined (cost 140 > 80), and this loop ran ~40%
	// more instructions (callgrind, odead's BenchmarkSpiralVJP).
	for _, st := range pl.sub {
		switch {
		case st.refresh && st.bound != pl.bound:
			t.runStep(pl, st)
		case st.k64 != nil:
			st.k64.Forward64(&st.f)
		case st.alias == nil:
			st.prim.Forward(&st.f)
		}
	}
	return nil
}

// currentPlan returns the replay plan, made again first if the tape has
// been reset or has grown since it was made.
func (t *Tape) currentPlan() *replayPlan {
	pl := &t.plan
	if pl.gen != t.gen || pl.len != len(t.nodes) {
		t.makePlan()
	}
	return pl
}

// forTargets reports whether pl.sub is the subset for vs.
func (pl *replayPlan) forTargets(vs []Var) bool {
	if !pl.subOK {
		return false
	}
	k := 0
	for _, v := range vs {
		if v.IsZero() {
			continue
		}
		if k == len(pl.targets) || pl.targets[k] != v.id {
			return false
		}
		k++
	}
	return k == len(pl.targets)
}

// makeSubset sets pl.sub to the steps whose outputs the values of vs
// depend on, and pl.targets to vs's ids.
func (t *Tape) makeSubset(vs []Var) {
	pl := &t.plan
	pl.targets = pl.targets[:0]
	need := make([]bool, len(t.nodes))
	for _, v := range vs {
		if !v.IsZero() {
			pl.targets = append(pl.targets, v.id)
			need[v.id] = true
		}
	}
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if need[i] {
			for _, id := range t.nodes[i].in {
				need[id] = true
			}
		}
	}
	pl.sub = pl.sub[:0]
	for k := range pl.steps {
		if need[pl.steps[k].node] {
			pl.sub = append(pl.sub, &pl.steps[k])
		}
	}
	pl.subOK = true
}

// runStep runs a step of the plan whose inputs' slices may have changed (a
// Rebind to new memory came since the step last read them): it reads them
// anew and runs the op's kernel, or remakes the view. A step that holds
// its inputs' current slices runs its kernel as it is; a view of them
// stands as it was made.
func (t *Tape) runStep(pl *replayPlan, st *replayStep) {
	for j, id := range t.nodes[st.node].in {
		if st.f.In64 != nil {
			st.f.In64[j].Data = t.nodes[id].data64
		} else {
			st.f.In[j].Data = t.nodes[id].data
		}
	}
	st.bound = pl.bound
	switch {
	case st.alias64 != nil:
		t.nodes[st.node].data64 = st.alias64.Alias64(st.f.In64, st.f.Attrs)
	case st.alias != nil:
		t.nodes[st.node].data = st.alias.Alias(st.f.In, st.f.Attrs)
	case st.k64 != nil:
		st.k64.Forward64(&st.f)
	default:
		st.prim.Forward(&st.f)
	}
}

// replayPlan is what a replay runs: one step per op whose output must be
// computed again, with its kernel's arguments made once. Only values that
// Rebind may change (Params, Consts, and Aliaser outputs that view them)
// are read anew from the nodes; every other op's output stays in the
// buffer it was recorded in.
type replayPlan struct {
	gen    uint32
	len    int
	bound  uint32 // counts the Rebinds to new memory (see replayStep.bound)
	steps  []replayStep
	args   []flat.Tensor
	args64 []flat.Tensor64
	// ReplayFor's subset of steps for the values targets, if subOK.
	sub     []*replayStep
	targets []int32
	subOK   bool
}

type replayStep struct {
	node    int32
	refresh bool          // an input may have new data: re-read the inputs' slices
	bound   uint32        // plan.bound when the step last read them
	alias   Aliaser       // non-nil: recompute the view instead of running a kernel
	alias64 Aliaser64     // the same, for a float64 view (alias is set too)
	prim    Primitive     // the kernel otherwise
	k64     Float64Kernel // non-nil: the op's inputs are float64, run Forward64
	f       Forward
}

func (t *Tape) makePlan() {
	pl := &t.plan
	pl.gen, pl.len = t.gen, len(t.nodes)
	pl.subOK = false
	total := 0
	for i := range t.nodes {
		total += len(t.nodes[i].in)
	}
	if cap(pl.args) < total {
		pl.args = make([]flat.Tensor, total)
	}
	args := pl.args[:total]
	clear(args)
	total64 := 0
	for i := range t.nodes {
		if nd := &t.nodes[i]; len(nd.in) > 0 && t.nodes[nd.in[0]].f64 {
			total64 += len(nd.in)
		}
	}
	if cap(pl.args64) < total64 {
		pl.args64 = make([]flat.Tensor64, total64)
	}
	args64 := pl.args64[:total64]
	clear(args64)
	pl.steps = pl.steps[:0]
	// volatile marks the nodes whose data slice Rebind may replace.
	volatile := make([]bool, len(t.nodes))
	for i := range t.nodes {
		nd := &t.nodes[i]
		if nd.kind != kindOp {
			volatile[i] = true
			continue
		}
		vol := false
		for _, id := range nd.in {
			vol = vol || volatile[id]
		}
		if nd.alias {
			if !vol {
				continue // views an op's buffer, which stays
			}
			volatile[i] = true
		}
		// bound ≠ pl.bound: the first replay reads every volatile input
		// and remakes every view, which Rebinds before the plan (made at
		// the first replay) may have left stale.
		st := replayStep{node: int32(i), refresh: vol, bound: pl.bound - 1}
		st.f = Forward{Attrs: nd.attrs, t: t}
		if nd.f64 {
			st.f.Out64 = flat.Tensor64{Shape: nd.shape, Data: nd.data64}
		} else {
			st.f.Out = flat.Tensor{Shape: nd.shape, Data: nd.data}
		}
		if in64 := t.nodes[nd.in[0]].f64; in64 {
			in := args64[:len(nd.in):len(nd.in)]
			args64 = args64[len(nd.in):]
			for j, id := range nd.in {
				in[j] = flat.Tensor64{Shape: t.nodes[id].shape, Data: t.nodes[id].data64}
			}
			st.f.In64 = in
		} else {
			in := args[:len(nd.in):len(nd.in)]
			args = args[len(nd.in):]
			for j, id := range nd.in {
				in[j] = flat.Tensor{Shape: t.nodes[id].shape, Data: t.nodes[id].data}
			}
			st.f.In = in
		}
		switch {
		case nd.alias:
			st.alias, _ = asRule[Aliaser](nd.prim)
			if st.f.In64 != nil {
				st.alias64, _ = asRule[Aliaser64](nd.prim)
			}
		case nd.f64 || st.f.In64 != nil:
			st.k64, _ = asRule[Float64Kernel](nd.prim)
		default:
			st.prim = nd.prim
		}
		pl.steps = append(pl.steps, st)
	}
}

// VJPOf records the vector-Jacobian products wᵀ·∂y/∂wrt[k] into out[k] as
// Vars of t. One reverse sweep runs from y, seeded with w, a Var of y's
// shape, towards all the wrt at once. Each result has its Param's shape,
// or is the zero Var when y does not depend on that Param. Its results are values of
// the recording, so they can be differentiated again, and ReplayFor
// recomputes them. The wrt must be distinct Params of t and out must
// have their length.
func (t *Tape) VJPOf(y, w Var, wrt, out []Var) error {
	_, ok := t.checkWrt("VJPOf", y, wrt)
	switch {
	case !ok:
	case len(out) != len(wrt):
		t.fail(errorf("VJPOf: %d results for %d Params, want %d (one per Param)", len(out), len(wrt), len(wrt)))
	case !t.check("VJPOf", w):
	case !shapeEq(t.nodes[w.id].shape, t.nodes[y.id].shape):
		t.fail(errorf("VJPOf: w has shape %v, want %v (y's)", t.nodes[w.id].shape, t.nodes[y.id].shape))
	}
	if t.err != nil {
		return t.err
	}
	clear(out)
	ids := t.ids.alloc(len(wrt))
	lo := y.id + 1
	for k, p := range wrt {
		ids[k] = -1
		if p.id <= y.id {
			ids[k] = p.id
			lo = min(lo, p.id)
		}
	}
	if lo > y.id {
		return nil
	}
	res := t.reverse(lo, y, w, ids, nil, nil, false)
	if t.err != nil {
		return t.err
	}
	copy(out, res)
	return nil
}

// JVPOf records the directional derivative Σ_k ∂y/∂wrt[k]·dirs[k] as a Var
// of y's shape, by one forward sweep seeded at every wrt at once; it is the
// zero Var when y depends on none of the seeded Params. A zero dirs[k]
// seeds nothing at wrt[k]. Like VJPOf, the result is a value of the
// recording that ReplayFor recomputes. The wrt must be distinct Params of t;
// dirs[k], unless zero, has wrt[k]'s shape.
func (t *Tape) JVPOf(y Var, wrt, dirs []Var) (Var, error) {
	lo, ok := t.checkWrt("JVPOf", y, wrt)
	if ok && len(dirs) != len(wrt) {
		t.fail(errorf("JVPOf: %d directions for %d Params, want %d (one per Param)", len(dirs), len(wrt), len(wrt)))
		ok = false
	}
	for k := 0; ok && k < len(wrt); k++ {
		d := dirs[k]
		if d.IsZero() {
			continue
		}
		if ok = t.check("JVPOf", d); ok && !shapeEq(t.nodes[d.id].shape, t.nodes[wrt[k].id].shape) {
			t.fail(errorf("JVPOf: dirs[%d] has shape %v, want %v (the Param's)", k, t.nodes[d.id].shape, t.nodes[wrt[k].id].shape))
			ok = false
		}
	}
	if !ok {
		return Var{}, t.err
	}
	if lo > y.id {
		return Var{}, nil
	}
	seeds := t.ids.alloc(len(wrt))[:0]
	tans := t.varScratch(len(wrt))[:0]
	for k, w := range wrt {
		if w.id <= y.id {
			seeds = append(seeds, w.id)
			tans = append(tans, dirs[k])
		}
	}
	slots := t.forwardSweep(lo, y.id+1, 1, seeds, tans)
	if t.err != nil {
		return Var{}, t.err
	}
	if s := slots[y.id-lo]; s >= 0 {
		return Var{t: t, id: s, gen: t.gen}, nil
	}
	return Var{}, nil
}

// checkWrt validates y and the Params wrt for a product and returns the
// smallest wrt id.
func (t *Tape) checkWrt(op string, y Var, wrt []Var) (int32, bool) {
	if t.err != nil || !t.check(op, y) {
		return 0, false
	}
	if len(wrt) == 0 {
		t.fail(errorf("%s: no Params to differentiate with respect to", op))
		return 0, false
	}
	lo := int32(len(t.nodes))
	for k, p := range wrt {
		if !t.check(op, p) {
			return 0, false
		}
		if t.nodes[p.id].kind != kindParam {
			t.fail(errorf("%s: wrt[%d] is not a Param", op, k))
			return 0, false
		}
		for j := range k {
			if wrt[j].id == p.id {
				t.fail(errorf("%s: wrt[%d] and wrt[%d] are the same Param", op, j, k))
				return 0, false
			}
		}
		lo = min(lo, p.id)
	}
	return lo, true
}

func shapeEq(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
