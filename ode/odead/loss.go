package odead

import (
	"fmt"
	"sync/atomic"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/ode"
)

// Loss adapts a loss written with ad ops on the saved states to an
// ode.Loss[float32]. f receives the save times and one Var per save time,
// in the order of at: the state there, of shape [n]. It returns a scalar
// Var. Its gradient with respect to every state is one reverse sweep.
//
//	loss := odead.Loss([]float64{1, 2}, func(ts []float64, us []ad.Var) ad.Var {
//		d := ad.Sub(us[1], us[0])
//		return ad.Sum(ad.Mul(d, d))   // couples the two save times
//	})
//
// The tape comes from a free list and is reset after every call, so the
// loss is safe for concurrent use and allocates nothing once warm if f's
// ops do not. The first error recorded on the tape, such as a shape
// mismatch, is kept, and the ode.Loss's Err reports it from then on. So
// ode.Gradient returns it as the cause. The failed call returns 0 and
// writes no dL/du. Add a running cost by setting the result's Running and
// RunningGradient.
func Loss(at []float64, f func(ts []float64, us []ad.Var) ad.Var) ode.Loss[float32] {
	return newLoss[float32](at, f)
}

// Loss64 is Loss for float64 states: the Vars f receives are float64, and
// the loss and its gradient are computed in float64.
func Loss64(at []float64, f func(ts []float64, us []ad.Var) ad.Var) ode.Loss[float64] {
	return newLoss[float64](at, f)
}

func newLoss[F ode.Float](at []float64, f func(ts []float64, us []ad.Var) ad.Var) ode.Loss[F] {
	a := &adLoss[F]{f: f}
	return ode.Loss[F]{At: append([]float64(nil), at...), Saved: a.saved, Err: a.errOf}
}

type adLoss[F ode.Float] struct {
	f    func(ts []float64, us []ad.Var) ad.Var
	free freelist.List[adLossWork] // not emptied by GCs, unlike a sync.Pool
	err  atomic.Pointer[error]     // the first failed call's error (sticky)
}

type adLossWork struct {
	tape *ad.Tape
	vs   []ad.Var
}

// errOf is the loss's Err: the first failure of any call, or nil.
func (a *adLoss[F]) errOf() error {
	if p := a.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (a *adLoss[F]) saved(ts []float64, us, dl [][]F) float64 {
	w := a.free.Get()
	if w.tape == nil {
		w.tape = ad.NewTape()
	}
	defer func() {
		w.tape.Reset()
		a.free.Put(w)
	}()
	tp := w.tape
	w.vs = w.vs[:0]
	for _, u := range us {
		w.vs = append(w.vs, stateParam(tp, u))
	}
	y := a.f(ts, w.vs)
	err := tp.Err()
	if err == nil && (y.IsZero() || y.Tape() != tp) {
		err = fmt.Errorf("the loss returned the zero Var or a Var of another tape, want a Var computed from the states on their tape")
	}
	if err == nil {
		err = tp.Backward(y)
	}
	if err != nil {
		e := err // escapes here only, not on the path that succeeds
		a.err.CompareAndSwap(nil, &e)
		return 0
	}
	for i, v := range w.vs {
		if g := gradOf[F](tp, v); g != nil {
			copy(dl[i], g)
		}
	}
	return y.Item64()
}
