package optimisers

import (
	"context"
	"iter"
	"math"

	"github.com/flatkit/flatkit/ad"
)

// Train runs the training loop. For each batch it records θ on a tape and
// computes loss(p, batch), where p is θ's Var; view it by range or by path
// with ad.View and ad.ViewPath. It then takes the gradient, updates θ with
// opt and resets the tape for the next batch. One tape serves every step,
// so the loop itself allocates nothing once the tape's arenas have grown.
// A step costs what the loss function and batches allocate.
//
// Steps are numbered on from opt.Steps() when Train starts: 1, 2, … for a
// new optimiser. After a resume by Load or LoadCheckpoint, the numbering
// continues where the saved run was. So the callback's cadence and the
// step numbers in errors match an uninterrupted run. Train counts one step
// per batch, even behind AccumGrad(n), where the optimiser counts one
// update per n batches.
//
// Every `every` steps, Train calls callback with the number of the step
// just taken and that step's loss, taken before its update. It never calls
// it if every ≤ 0 or callback is nil.
//
// Train returns nil when batches ends. It stops with an error naming the
// step in these cases:
//   - ctx is done before a step; the error wraps ctx.Err();
//   - the callback returns an error, which is wrapped;
//   - the tape records an error;
//   - the loss is NaN or infinite; that step's update is not made;
//   - the update fails.
//
// Steps before the one that stopped it keep their updates.
func Train[B any](ctx context.Context, opt *Optimiser, θ []float32, batches iter.Seq[B],
	loss func(p ad.Var, batch B) ad.Var, every int, callback func(step int, loss float32) error) error {
	switch {
	case opt == nil:
		return errorf("Train: nil optimiser")
	case batches == nil:
		return errorf("Train: nil batches")
	case loss == nil:
		return errorf("Train: nil loss function")
	case len(θ) != opt.Layout().Len():
		return errorf("Train: θ has %d floats, want %d (the layout's Len)", len(θ), opt.Layout().Len())
	}
	tape := ad.NewTape()
	step := opt.Steps()
	var err error
	for b := range batches {
		if e := ctx.Err(); e != nil {
			err = errorf("Train: stopped before step %d: %w", step+1, e)
			break
		}
		step++
		l := loss(tape.Param(θ), b)
		g, e := tape.Grad(l)
		if e != nil {
			err = errorf("Train: step %d: %w", step, e)
			break
		}
		v := l.Item()
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			err = errorf("Train: step %d: the loss is %v, want a finite value; θ keeps the previous step's values", step, v)
			break
		}
		if e := opt.Update(θ, g); e != nil {
			err = errorf("Train: step %d: %w", step, e)
			break
		}
		tape.Reset()
		if callback != nil && every > 0 && step%every == 0 {
			if e := callback(step, v); e != nil {
				err = errorf("Train: step %d: callback: %w", step, e)
				break
			}
		}
	}
	tape.Reset()
	return err
}
