package ode

import (
	"cmp"
	"context"
	"runtime"
	"slices"
)

// EnsembleHvResult is the result of Ensemble.HessianVector: sums over the
// trajectories that succeeded, taken in shard order as
// EnsembleGradientResult's are, so identical for any number of workers.
type EnsembleHvResult[T Float] struct {
	// Value is Σ L_i; P is Σ dL_i/dθ and HvP is Σ H_i·v, both of the
	// length of Base.P, accumulated in float64.
	Value float64
	P     []T
	HvP   []T
	// Count, Errors and Stats are as EnsembleGradientResult's.
	Count  int
	Errors []TrajectoryError
	Stats  Stats
}

// HessianVector is Ensemble.Gradient's sum with the Hessian-vector
// product of each trajectory's loss beside its gradient (see
// HessianVector): H·v of Σ_i L_i with respect to the flat θ = Base.P, for
// a direction v of Base.P's length. Trajectory i sees the slice of v at
// the offsets of its P within Base.P, and no direction in its initial
// state. Each worker keeps one HvSolver, so trajectories allocate nothing
// once the workers are warm, lossFor's own allocations aside.
// PerTrajectoryU0 is not supported.
func (e Ensemble[T]) HessianVector(ctx context.Context, m Method, lossFor func(i int) HvLoss[T], v []T, s InterpolatingAdjoint, opts ...EnsembleGradientOption) (*EnsembleHvResult[T], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if lossFor == nil {
		return nil, errorf("Ensemble.HessianVector: lossFor is nil")
	}
	if len(v) != len(e.Base.P) {
		return nil, errorf("Ensemble.HessianVector: len(v) = %d, want %d (len(Base.P))", len(v), len(e.Base.P))
	}
	o, optErr := parseOptions(opts)
	if optErr == nil && o.perU0 {
		optErr = errorf("Ensemble.HessianVector: PerTrajectoryU0 is not supported")
	}
	gr, err := e.gradPlan(m, func(int) Loss[T] { return Loss[T]{} }, s, o, optErr)
	if err != nil {
		return nil, err
	}
	r := &hvRun[T]{gradRun: gr, lossFor: lossFor, v: v, s: s}
	np := gr.np
	r.init(2+2*np, len(r.shards)) // Σ loss, count, Σ dL/dθ, Σ H·v
	nw := max(1, min(cmp.Or(o.workers, runtime.GOMAXPROCS(0)), len(r.shards)))
	ws := make([]*hvWorker[T], nw)
	for j := range ws {
		ws[j] = &hvWorker[T]{u0: padded[T](len(e.Base.U0)), acc: padded[float64](2 + 2*np)}
		ws[j].rs.init()
	}
	if err := runShards(ctx, r.gradRun, ws, r.work, "Ensemble.HessianVector"); err != nil {
		return nil, err
	}
	res := &EnsembleHvResult[T]{Value: r.total[0], Count: int(r.total[1]), P: make([]T, np), HvP: make([]T, np)}
	for k := range np {
		res.P[k], res.HvP[k] = T(r.total[2+k]), T(r.total[2+np+k])
	}
	for _, w := range ws {
		res.Stats.Add(w.stats)
	}
	res.Errors = slices.Concat(r.errs...)
	if len(res.Errors) > 0 {
		res.Stats.Retcode = Unfinished
		return res, &EnsembleError{N: len(r.idx), Errors: res.Errors}
	}
	res.Stats.Retcode = Success
	return res, nil
}

// hvRun is one Ensemble.HessianVector: gradRun's plan and shard sums with
// an HvSolver per worker.
type hvRun[T Float] struct {
	*gradRun[T]
	lossFor func(int) HvLoss[T]
	v       []T
	s       InterpolatingAdjoint
}

// hvWorker is one worker's HvSolver and buffers.
type hvWorker[T Float] struct {
	hs    *HvSolver[T]
	np    int
	prob  Problem[T]
	u0    []T
	dir   []T // the trajectory's direction: v's slice, then 0 for u0
	acc   []float64
	rs    randSource
	stats Stats
}

func (r *hvRun[T]) work(ctx context.Context, w *hvWorker[T]) {
	r.shardLoop(&w.acc, func(sh Shard) ([]TrajectoryError, bool, error) { return r.runShard(ctx, w, sh) })
}

// shardLoop hands r's shards out to one worker until none is left, runs
// each by run and merges the worker's accumulator *acc in shard order. A
// setup error or a cancellation stops every worker.
func (r *gradRun[T]) shardLoop(acc *[]float64, run func(Shard) (errs []TrajectoryError, cancelled bool, setup error)) {
	for !r.stop.Load() {
		s := int(r.next.Add(1) - 1)
		if s >= len(r.shards) {
			return
		}
		errs, cancelled, setup := run(r.shards[s])
		if setup != nil {
			r.mu.Lock()
			if r.setupErr == nil {
				r.setupErr = setup
			}
			r.mu.Unlock()
			r.stop.Store(true)
			return
		}
		if cancelled {
			r.stop.Store(true)
			return
		}
		r.errs[s] = errs
		*acc = r.merge(s, *acc)
	}
}

// runShard takes the products of the trajectories at positions sh.Lo to
// sh.Hi−1 into w.acc.
func (r *hvRun[T]) runShard(ctx context.Context, w *hvWorker[T], sh Shard) (errs []TrajectoryError, cancelled bool, setup error) {
	e := r.e
	np := r.np
	for pos := sh.Lo; pos < sh.Hi; pos++ {
		i := r.idx[pos]
		e.trajectory(i, sh.Seed, &w.rs, &w.prob, w.u0)
		off, ok := offsetIn(e.Base.P, w.prob.P)
		if !ok {
			errs = append(errs, TrajectoryError{Index: i, Err: errorf("Ensemble.HessianVector: Modify set P to a slice (len %d) that is not within Base.P (len %d)", len(w.prob.P), len(e.Base.P))})
			continue
		}
		if w.hs == nil {
			if err := w.prob.validate(); err != nil {
				errs = append(errs, TrajectoryError{Index: i, Err: err})
				continue
			}
			hs, err := newHvSolver(w.prob, r.m, r.s, r.o)
			if err != nil {
				return errs, false, err
			}
			w.hs, w.np = hs, len(w.prob.P)
			w.dir = make([]T, w.np+len(w.u0))
		}
		if len(w.prob.P) != w.np {
			errs = append(errs, TrajectoryError{Index: i, Err: errorf("Ensemble.HessianVector: trajectory's P has len %d, want %d as the others", len(w.prob.P), w.np)})
			continue
		}
		copy(w.dir, r.v[off:off+w.np])
		h, err := w.hs.HvFor(ctx, w.prob, r.lossFor(i), w.dir)
		w.stats.Add(w.hs.res.Forward)
		w.stats.Add(w.hs.res.Backward)
		if err != nil {
			if ctx.Err() != nil {
				return errs, true, nil
			}
			errs = append(errs, TrajectoryError{Index: i, Err: err})
			continue
		}
		w.acc[0] += h.Value
		w.acc[1]++
		g, hv := w.acc[2+off:2+off+w.np], w.acc[2+np+off:2+np+off+w.np]
		for k := range w.np {
			g[k] += float64(h.P[k])
			hv[k] += float64(h.HvP[k])
		}
	}
	return errs, false, nil
}
