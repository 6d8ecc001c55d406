package ad

import (
	"math"
	"sort"

	"github.com/flatkit/flatkit/flat"
)

// The batch-norm primitives that BatchNorm's rules use, for tests that
// check each one's own rules as a function of all its inputs.

// BatchNormStats records BatchNormStats(x): (μ; σ²), (2, C).
func BatchNormStats(x Var) Var { return Apply(bnStatsOp, Attrs{}, x) }

// BatchNormSums records BatchNormSums(x, S, g) = (Σg; Σg·x̂).
func BatchNormSums(x, S, g Var, eps float32) Var {
	return bnSums(x, S, g, Attrs{Floats: []float64{float64(eps)}})
}

// BatchNormBackData records BatchNormBackData(x, S, g, T, γ), γ the zero
// Var for none.
func BatchNormBackData(x, S, g, T, gamma Var, eps float32) Var {
	return bnBackData(x, S, g, T, gamma, Attrs{Floats: []float64{float64(eps)}})
}

// Products into caller-owned buffers, and replays of a whole recording or
// of its part before or after a value. Only the tests and benchmarks use
// them, as references for Backward, VJPOf, JVPOf and ReplayFor, so they
// live here and are not part of the package's API.

// Tangent returns the directional derivative Σ_k ∂y/∂wrt[k]·dirs[k] of the
// value y recorded on t, by one forward sweep seeded at every wrt at once.
// The wrt must be distinct Params of t; dirs[k] has wrt[k]'s length, and a
// nil dirs[k] is a zero direction (the sweep then skips what depends on
// wrt[k] only). The result has y's size, in row-major order (zeros where y
// does not depend on any seeded Param), and is owned by the tape until
// Reset. dirs are read during the call only.
//
// The sweep records its work on the tape after y, so Tangent may be called
// again on the same recording (each call sweeps f's nodes only) and, with a
// reused tape, allocates nothing once warm. Errors are recorded on the tape,
// as by any op.
func (t *Tape) Tangent(y Var, wrt []Var, dirs [][]float32) ([]float32, error) {
	lo, ok := t.checkWrt("Tangent", y, wrt)
	if ok && len(dirs) != len(wrt) {
		t.fail(errorf("Tangent: %d directions for %d Params, want %d (one per Param)", len(dirs), len(wrt), len(wrt)))
		ok = false
	}
	ok = ok && t.checkPerParam("Tangent", "dirs", dirs, wrt)
	if !ok {
		return nil, t.err
	}
	out := t.f32.zeroed(y.Size())
	if lo > y.id {
		return out, nil // y depends on none of the Params
	}
	// Seeds recorded after y lie outside the sweep and cannot reach y.
	seeds := t.ids.alloc(len(wrt))[:0]
	for _, w := range wrt {
		if w.id <= y.id {
			seeds = append(seeds, w.id)
		}
	}
	tans := t.varScratch(len(seeds))
	s := 0
	for k, w := range wrt {
		if w.id > y.id {
			continue
		}
		if d := dirs[k]; d != nil {
			tans[s] = t.Const(flat.Tensor{Shape: t.nodes[w.id].shape, Data: d})
		}
		s++
	}
	// forwardSweep reads tans while seeding, before any rule runs (rules
	// may reuse the Var scratch).
	slots := t.forwardSweep(lo, y.id+1, 1, seeds, tans)
	if t.err != nil {
		return nil, t.err
	}
	if sl := slots[y.id-lo]; sl >= 0 {
		copy(out, t.nodes[sl].data)
	}
	return out, nil
}

// AddVJP adds wᵀ·∂y/∂wrt[k] into dst[k] for every k, by one reverse sweep
// from y seeded with w (y's size, row-major) towards all the wrt at once. The
// wrt must be distinct Params of t; dst[k] has wrt[k]'s length, and a nil
// dst[k] is skipped (its cotangent is not computed). w is read during the
// call only. Unlike Backward, AddVJP accumulates into the caller's buffers
// and leaves GradWrt untouched; it may be called again on the same
// recording, and with a reused tape it allocates nothing once warm. Errors
// are recorded on the tape, and dst is then left unchanged.
func (t *Tape) AddVJP(y Var, w []float32, wrt []Var, dst [][]float32) error {
	_, ok := t.checkWrt("AddVJP", y, wrt)
	switch {
	case !ok:
	case len(dst) != len(wrt):
		t.fail(errorf("AddVJP: %d destinations for %d Params, want %d (one per Param)", len(dst), len(wrt), len(wrt)))
		ok = false
	case len(w) != y.Size():
		t.fail(errorf("AddVJP: w has %d elements, want %d (y's size, shape %v)", len(w), y.Size(), y.Shape()))
		ok = false
	}
	ok = ok && t.checkPerParam("AddVJP", "dst", dst, wrt)
	if !ok {
		return t.err
	}
	// Only the Params with a destination, recorded before y, are swept to:
	// the others get the id -1, outside the sweep, which reverse skips (and
	// then never touches their nil dst).
	ids := t.ids.alloc(len(wrt))
	lo := y.id + 1
	for k, p := range wrt {
		ids[k] = -1
		if dst[k] != nil && p.id <= y.id {
			ids[k] = p.id
			lo = min(lo, p.id)
		}
	}
	if lo > y.id {
		return nil
	}
	seed := t.Const(flat.Tensor{Shape: t.nodes[y.id].shape, Data: w})
	t.reverse(lo, y, seed, ids, dst, nil, false)
	return t.err
}

// checkPerParam reports whether every non-nil xs[k] (len(xs) = len(wrt))
// has as many elements as the Param wrt[k]; at the first that does not, it
// fails the tape, naming xs as name in the call what.
func (t *Tape) checkPerParam(what, name string, xs [][]float32, wrt []Var) bool {
	for k, p := range wrt {
		if d := xs[k]; d != nil && len(d) != p.Size() {
			t.fail(errorf("%s: %s[%d] has %d elements, want %d (the Param's size)", what, name, k, len(d), p.Size()))
			return false
		}
	}
	return true
}

// Replay runs the forward kernel of every op recorded since the last Reset
// again, in recording order, with the current values of its inputs (see
// Rebind), writing each op's output into the buffer it already has, so
// that every Var of the recording holds what a fresh recording with those
// inputs would hold, bit for bit. The first Replay of a recording makes a
// plan of it (which allocates); later ones allocate nothing. Results a
// sweep wrote outside the tape's values (the gradients of Backward and
// GradWrt, what AddVJP and Tangent returned) are not updated: use VJPOf and
// JVPOf for derivatives that replay. A user's Primitive must compute its
// output from its inputs and attributes only.
//
// It returns the error of Replayable, and then runs nothing.
func (t *Tape) Replay() error { return t.replay(-1, math.MaxInt32) }

// ReplayTo is Replay of the ops recorded up to v (v included) only: the
// forward part of a recording whose derivative sweep follows v, when only
// its value is wanted now.
func (t *Tape) ReplayTo(v Var) error {
	if !t.check("ReplayTo", v) {
		return t.err
	}
	return t.replay(-1, v.id)
}

// ReplayAfter is Replay of the ops recorded after v only. It is for a
// recording whose values up to v are already those of the current inputs
// (by ReplayTo, or Replay, with the same values of the inputs recorded
// before v): Rebind the inputs recorded after v (a sweep's seeds), and
// ReplayAfter recomputes what depends on them, as Replay would.
func (t *Tape) ReplayAfter(v Var) error {
	if !t.check("ReplayAfter", v) {
		return t.err
	}
	return t.replay(v.id, math.MaxInt32)
}

// replay runs the plan's steps for the nodes in (after, last].
func (t *Tape) replay(after, last int32) error {
	if err := t.Replayable(); err != nil {
		return err
	}
	pl := t.currentPlan()
	steps := pl.steps
	if after >= 0 {
		steps = steps[sort.Search(len(steps), func(i int) bool { return steps[i].node > after }):]
	}
	for i := range steps {
		st := &steps[i]
		if st.node > last {
			break
		}
		switch {
		case st.refresh && st.bound != pl.bound:
			t.runStep(pl, st)
		case st.alias == nil:
			st.prim.Forward(&st.f)
		}
	}
	return nil
}
