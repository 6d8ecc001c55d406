package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/optimisers"
)

// lbfgsRecorder follows gonum's iterations for the progress bar and the
// loss curve.
type lbfgsRecorder struct {
	bar  *progress
	s    *Summary
	iter int
}

func (r *lbfgsRecorder) Init() error { return nil }

func (r *lbfgsRecorder) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op == optimize.MajorIteration {
		r.iter++
		r.s.LBFGSLoss = append(r.s.LBFGSLoss, loc.F)
		r.bar.update(r.iter, loc.F)
	}
	return nil
}

// polish runs L-BFGS on the mean loss over the whole trajectories, starting
// from θ, and leaves the point it ends at in θ.
func polish(ctx context.Context, w io.Writer, f *fitter, θ []float32, cfg config, s *Summary) error {
	start := flat.Clone(θ)
	var fgErr error
	f0 := math.NaN() // the loss at the start
	fg := func(x, grad []float32) (float64, error) {
		v, err := f.gradient(ctx, x, grad, nSaved, whole())
		if err != nil {
			// A trajectory failed at this point (a step too far): an
			// infinite loss, not an error, makes the line search back off.
			fgErr = err
			v = math.Inf(1)
		}
		if math.IsNaN(f0) {
			f0 = v
			s.LBFGSLoss = append(s.LBFGSLoss, v)
		}
		return v, nil
	}
	fmt.Fprintf(w, "L-BFGS (memory %d): at most %d iterations on all %d whole trajectories\n", lbfgsM, cfg.lbfgs, nTrain)
	bar := newProgress(w, "L-BFGS", 0, cfg.lbfgs)
	res, err := optimisers.Minimize(fg, θ, &optimize.LBFGS{Store: lbfgsM}, &optimize.Settings{
		MajorIterations: cfg.lbfgs, GradientThreshold: 1e-7, Recorder: &lbfgsRecorder{bar: bar, s: s},
		Converger: &optimize.FunctionConverge{Absolute: 1e-9, Relative: 1e-7, Iterations: 20}})
	bar.done()
	if res == nil {
		return fmt.Errorf("L-BFGS: %w", err)
	}
	s.LBFGSStatus = res.Status
	switch {
	case err == nil:
		s.LBFGSNote = fmt.Sprintf("status %v", res.Status)
	case errors.Is(err, optimize.ErrLinesearcherFailure) && res.F <= f0:
		// float32 losses leave L-BFGS no decrease to find near an optimum:
		// its line search then fails, at a point no worse than the start.
		s.LBFGSNote = "ended by gonum's failed line search (float32 rounding leaves no decrease to find); the loss is not worse than at the start, so the point is kept"
	default:
		if fgErr != nil {
			err = fmt.Errorf("%w (last failed evaluation: %v)", err, fgErr)
		}
		copy(θ, start)
		return fmt.Errorf("L-BFGS: %w", err)
	}
	fmt.Fprintf(w, "L-BFGS: %d iterations, mean squared error %.6g → %.6g; %s\n", res.Stats.MajorIterations, f0, res.F, s.LBFGSNote)
	return nil
}
