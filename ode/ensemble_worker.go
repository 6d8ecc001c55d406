package ode

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// How Ensemble.Solve runs: a worker per goroutine with its reused
// Integrator, shards handed out in order, and their accumulators summed in
// shard order whichever order they finish in.

// ensWorker is one worker's reusable state: an integrator and the buffers
// for building and collecting one trajectory at a time.
type ensWorker[T Float] struct {
	it    *Integrator[T]
	prob  Problem[T] // trajectory's problem, given to Modify (a field, so it does not escape per call)
	u0    []T        // its private U0
	slot  []T        // output slot with DropOutputs
	acc   []float64  // the current shard's accumulator
	rs    randSource
	stats Stats
}

// newWorker makes a worker whose Integrator has c's options. config has
// checked e.Base.
func (e *Ensemble[T]) newWorker(c ensConfig, m Method) (*ensWorker[T], error) {
	if m == nil {
		return nil, errorf("method is nil")
	}
	it, err := initWith(e.Base, m, c.o)
	if err != nil {
		return nil, err
	}
	w := &ensWorker[T]{it: it, u0: padded[T](c.n)}
	w.rs.init()
	if e.DropOutputs {
		w.slot = padded[T](c.k)
	}
	if e.ReduceSize > 0 {
		w.acc = padded[float64](e.ReduceSize)
	}
	return w, nil
}

// runShard solves the trajectories of s in order. out holds their outputs,
// (Hi−Lo)·k values, or is nil when outputs are dropped. The reduction goes
// to w.acc and the counters to w.stats. It returns the failures, and
// cancelled = true if ctx was cancelled before the shard finished.
func (e *Ensemble[T]) runShard(ctx context.Context, w *ensWorker[T], c ensConfig, s Shard, out []T) (errs []TrajectoryError, cancelled bool) {
	it := w.it
	for i := s.Lo; i < s.Hi; i++ {
		e.trajectory(i, s.Seed, &w.rs, &w.prob, w.u0)
		err := it.ReinitProblem(w.prob)
		if err == nil {
			err = it.Run(ctx)
			w.stats.Add(it.Stats())
		}
		slot := w.slot
		if out != nil {
			slot = out[(i-s.Lo)*c.k : (i-s.Lo+1)*c.k : (i-s.Lo+1)*c.k]
		}
		if err != nil {
			if ctx.Err() != nil {
				return errs, true
			}
			errs = append(errs, TrajectoryError{Index: i, Err: err})
			nan := T(math.NaN())
			for j := range slot {
				slot[j] = nan
			}
			continue
		}
		if e.Output != nil {
			e.Output(slot, i, it)
		} else {
			copy(slot, it.U())
		}
		if e.Reduce != nil {
			e.Reduce(w.acc, i, slot)
		}
	}
	return errs, false
}

// ensRun is one Solve: shards handed out in order from an atomic counter,
// and the ordered merge of the shards' accumulators.
type ensRun[T Float] struct {
	e      *Ensemble[T]
	c      ensConfig
	shards []Shard
	flat   []T
	errs   [][]TrajectoryError // per shard
	next   atomic.Int64
	stop   atomic.Bool // a worker saw ctx cancelled

	shardSum
}

func (r *ensRun[T]) work(ctx context.Context, w *ensWorker[T]) {
	k := r.c.k
	for !r.stop.Load() {
		s := int(r.next.Add(1) - 1)
		if s >= len(r.shards) {
			return
		}
		sh := r.shards[s]
		var out []T
		if r.flat != nil {
			out = r.flat[sh.Lo*k : sh.Hi*k]
		}
		errs, cancelled := r.e.runShard(ctx, w, r.c, sh, out)
		if cancelled {
			r.stop.Store(true)
			return
		}
		r.errs[s] = errs
		if r.total != nil {
			w.acc = r.merge(s, w.acc)
		}
	}
}

// shardSum adds shards' accumulators into a total strictly in shard
// order, whichever order the shards finish in. One that arrives early
// waits in pending. Ensemble.Solve's Reduce sums and Ensemble.Gradient's
// sums both go through it, so they are the same bits for any number of
// workers.
type shardSum struct {
	mu      sync.Mutex
	merged  int         // shards added into total so far
	total   []float64   // Σ of the accumulators of shards < merged, in order
	pending [][]float64 // accumulators of finished shards ≥ merged
	free    [][]float64 // zeroed spare accumulators
}

func (r *shardSum) init(size, shards int) {
	r.total = make([]float64, size)
	r.pending = make([][]float64, shards)
}

// merge hands in shard s's accumulator and returns a zeroed one for the
// next shard.
func (r *shardSum) merge(s int, acc []float64) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s != r.merged {
		r.pending[s] = acc
		if k := len(r.free); k > 0 {
			acc = r.free[k-1]
			r.free = r.free[:k-1]
			return acc
		}
		return make([]float64, len(acc))
	}
	addInto(r.total, acc)
	clear(acc)
	r.merged++
	for r.merged < len(r.pending) && r.pending[r.merged] != nil {
		p := r.pending[r.merged]
		addInto(r.total, p)
		clear(p)
		r.pending[r.merged] = nil
		r.free = append(r.free, p)
		r.merged++
	}
	return acc
}

func addInto(dst, src []float64) {
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += v
	}
}

// runWorkers runs work on each worker, in this goroutine when there is
// only one, and returns when all have returned.
func runWorkers[W any](ctx context.Context, ws []W, work func(context.Context, W)) {
	if len(ws) == 1 {
		work(ctx, ws[0])
		return
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { work(ctx, w) })
	}
	wg.Wait()
}

// rows cuts flat into n rows of k values, each capped at its end.
func rows[T any](flat []T, n, k int) [][]T {
	r := make([][]T, n)
	for i := range r {
		r[i] = flat[i*k : (i+1)*k : (i+1)*k]
	}
	return r
}
