package ad

import (
	"github.com/flatkit/flatkit/flat"
)

// Products of a recorded value with several Params at once, on a reused
// tape. The functional JVP and VJP differentiate with respect to one
// argument and allocate their results; a caller that owns its tape (an ODE
// right-hand side differentiated with respect to its state and its
// parameters, for sensitivities and adjoints) needs the combined product
// ∂y/∂u·v + ∂y/∂p·dp from one recording and one sweep, without
// allocating once warm.

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
// and leaves GradOf untouched; it may be called again on the same
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
	t.reverse(lo, y, seed, ids, dst, false)
	return t.err
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
