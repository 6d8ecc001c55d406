package ode

// discreteTape is what the discrete adjoints record of the forward solve,
// and their reverse pass over it: the steps from the last to the first,
// each segment between checkpoints replayed first when there are
// checkpoints.
type discreteTape[T Float] struct {
	ts, hs, tEnd []float64 // every step's start time, size and end time
	su           []T       // without checkpoints: every step's start state
	sk           []T       // and the stages the method keeps
	ck           checkpoints[T]
	seg          []T // with checkpoints: the start states of one segment
	fs           discreteFirings[T]
}

func (tp *discreteTape[T]) reset() {
	tp.ts, tp.hs, tp.tEnd, tp.su, tp.sk = tp.ts[:0], tp.hs[:0], tp.tEnd[:0], tp.su[:0], tp.sk[:0]
	tp.fs.resetFirings()
}

// record notes the step fwd has just accepted: its time and size, and
// its start state or, with checkpoints, a checkpoint. It reports whether
// the caller is to keep the step's stages (no checkpoints). A step that
// ends at a firing is recorded from the onFire hook, where fwd.u is the
// state after it: the checkpoint then holds that state, the start of the
// next step, unless the firing ends the solve.
func (tp *discreteTape[T]) record(fwd *Integrator[T], ckpt bool) bool {
	tp.ts = append(tp.ts, fwd.tPrev)
	tp.hs = append(tp.hs, fwd.h)
	tp.tEnd = append(tp.tEnd, fwd.t)
	if ckpt {
		if !fwd.done && !tp.fs.term && fwd.t != fwd.t1 {
			tp.ck.step(fwd.t, fwd.u, fwd.dt)
		}
		return false
	}
	tp.su = append(tp.su, fwd.uPrev...)
	return true
}

// reverse runs the reverse pass over the recorded steps, N values per
// state and K kept stage values per step. replay writes into next the
// end of step i from its start u; back reverses step i from its start u
// and its kept stages, or nil with checkpoints. The hook, if not nil, is
// consulted after every step.
func (tp *discreteTape[T]) reverse(gs *GradientSolver[T], N, K int, ckpt bool, replay func(i int, u, next []T) error, back func(i int, u, stored []T) error) error {
	steps := len(tp.ts)
	hook := gs.hook()
	if !ckpt {
		for i := steps - 1; i >= 0; i-- {
			if err := back(i, tp.su[i*N:(i+1)*N], tp.sk[i*K:(i+1)*K]); err != nil {
				return err
			}
			if hook != nil && hook() != nil {
				return gs.failedAt("reverse pass", tp.ts[i])
			}
		}
		return nil
	}
	last := tp.ck.len() - 1
	for c := last; c >= 0; c-- {
		lo, hi := tp.ck.idx[c], steps
		if c < last {
			hi = tp.ck.idx[c+1]
		}
		if need := (hi - lo) * N; cap(tp.seg) < need {
			tp.seg = make([]T, need)
		}
		seg := tp.seg[:(hi-lo)*N]
		copy(seg[:N], tp.ck.state(c))
		for i := lo; i < hi-1; i++ {
			k := (i - lo) * N
			if err := replay(i, seg[k:k+N], seg[k+N:k+2*N]); err != nil {
				return err
			}
		}
		for i := hi - 1; i >= lo; i-- {
			k := (i - lo) * N
			if err := back(i, seg[k:k+N], nil); err != nil {
				return err
			}
			if hook != nil && hook() != nil {
				return gs.failedAt("reverse pass", tp.ts[i])
			}
		}
	}
	return nil
}
