package ode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
)

// DefaultShardSize is the number of trajectories in a shard when
// Ensemble.ShardSize is 0.
const DefaultShardSize = 16

// Ensemble is N trajectories of one problem: trajectory i solves Base as
// changed by Modify(i, rng, &p). Solve runs them on Workers(n) goroutines,
// and its results are identical, bit for bit, for any n.
//
//	ens := ode.Ensemble[float64]{Base: prob, N: 1000,
//		Modify: func(i int, rng *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 1 + 0.001*float64(i) }}
//	res, err := ens.Solve(ctx, ode.Tsit5(), ode.Tol(1e-6, 1e-8), ode.Workers(4))
//	// res.U[i]: the final state of trajectory i
//
// The trajectories are cut into shards of ShardSize consecutive indices,
// whatever the number of workers. Each worker takes shards in order and
// runs their trajectories one after the other in one reused Integrator, so
// a trajectory allocates nothing. Trajectory i's output goes to its own
// slot of the result. Reduce folds the outputs of one shard, in index
// order, into a zeroed accumulator. The shards' accumulators are added up
// in shard order. Nothing depends on which worker ran what.
//
// A Shard is a plain value: two indices and the seed. SolveShard and Merge
// are the two halves of Solve, for runners that execute shards elsewhere.
// Merge of the SolveShard results of every shard, computed anywhere in any
// order, equals Solve.
//
// Modify, Output and Reduce, like F, Jac, the Events' conditions and
// effects and the Schedules' effects, are called concurrently from several
// workers for different trajectories. So they must not write shared state.
type Ensemble[T Float] struct {
	// Base is the problem every trajectory starts from. It must be valid on
	// its own: it also sets up each worker's Integrator.
	Base Problem[T]
	// N is the number of trajectories, indexed 0 … N−1.
	N int
	// Seed is the master seed of the per-trajectory random generators.
	Seed uint64
	// Modify, if set, makes trajectory i's problem from a copy of Base. p.U0
	// is a private copy of Base.U0 that Modify may overwrite in place or
	// replace. p.P is Base.P itself, shared by every trajectory: do not
	// write into it. Point p.P at another view instead, such as
	// θ[i*k:(i+1)*k]. The span, F, Jac and Events may be replaced too; the
	// dimension may not. rng is trajectory i's own generator, valid only
	// during the call: TrajectoryRand(Seed, i) gives it.
	Modify func(i int, rng *rand.Rand, p *Problem[T])
	// Output, if set, writes trajectory i's output into out after a
	// successful solve, reading the integrator's U, T, Saved or Stats.
	// out has OutputSize values. Without Output the output is the final
	// state, and OutputSize is 0 or the dimension.
	Output     func(out []T, i int, it *Integrator[T])
	OutputSize int
	// DropOutputs keeps no per-trajectory outputs, for ensembles that only
	// Reduce; EnsembleResult.U is then nil. Output is still called, into a
	// scratch slot that Reduce then reads.
	DropOutputs bool
	// Reduce, if set, folds trajectory i's output into acc, of ReduceSize
	// values and zero at the start of each shard. The shards'
	// accumulators are summed elementwise in shard order into
	// EnsembleResult.Acc. Failed trajectories are not reduced.
	Reduce     func(acc []float64, i int, out []T)
	ReduceSize int
	// ShardSize is the number of consecutive trajectories in a shard; 0
	// means DefaultShardSize. Outputs do not depend on it. Acc does,
	// through the order of its floating-point additions.
	ShardSize int
}

// TrajectoryError is the failure of one trajectory: a solve that stopped
// early with an *Error, or a problem that Modify left invalid.
type TrajectoryError struct {
	Index int
	Err   error
}

func (e TrajectoryError) Error() string { return prefix + e.Unprefixed() }

// Unprefixed is the message without the "ode: " prefix.
func (e TrajectoryError) Unprefixed() string {
	return fmt.Sprintf("trajectory %d: %s", e.Index, bareText(e.Err))
}

func (e TrajectoryError) Unwrap() error { return e.Err }

// EnsembleError is the error of an ensemble in which some trajectories
// failed; the others finished and their results are in the EnsembleResult
// returned with it.
type EnsembleError struct {
	N      int               // trajectories in the ensemble
	Errors []TrajectoryError // the failures, by increasing index
}

func (e *EnsembleError) Error() string { return prefix + e.Unprefixed() }

// Unprefixed is the message without the "ode: " prefix.
func (e *EnsembleError) Unprefixed() string {
	if len(e.Errors) == 0 {
		return "ensemble: no failed trajectory"
	}
	return fmt.Sprintf("ensemble: %d of %d trajectories failed; the first: %s", len(e.Errors), e.N, e.Errors[0].Unprefixed())
}

// Unwrap returns the trajectories' errors, for errors.Is and errors.As.
func (e *EnsembleError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, te := range e.Errors {
		errs[i] = te
	}
	return errs
}

// EnsembleResult holds what an ensemble computed.
type EnsembleResult[T Float] struct {
	// U[i] is trajectory i's output, by default its final state. It is a
	// view into one buffer, NaN for a failed trajectory, and nil with
	// DropOutputs.
	U [][]T
	// Acc is the sum over shards, in shard order, of Reduce's per-shard
	// accumulators. It is nil without Reduce.
	Acc []float64
	// Errors lists the failed trajectories by increasing index.
	Errors []TrajectoryError
	// Stats sums the counters of every trajectory. Retcode is Success when
	// no trajectory failed, else the first failure's. That is Unfinished
	// if its problem was invalid.
	Stats Stats
}

// splitmix64 is the SplitMix64 finaliser of Steele, Lea and Flood, 2014.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// trajectorySeed is the PCG seed of trajectory i under the master seed.
func trajectorySeed(seed uint64, i int) (hi, lo uint64) {
	hi = splitmix64(seed ^ splitmix64(uint64(i)))
	lo = splitmix64(hi ^ 0x6a09e667f3bcc909)
	return hi, lo
}

// TrajectoryRand returns a new generator in the state that Modify receives
// for trajectory i of an ensemble with master seed seed. It is a PCG whose
// two seed words SplitMix64 derives from seed and i, so that neighbouring
// trajectories get unrelated streams.
func TrajectoryRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(trajectorySeed(seed, i)))
}

// ensConfig is an ensemble's checked configuration.
type ensConfig struct {
	n, k, shard int // dimension, output size, shard size
	workers     int
	o           options // the solves' options (without Workers)
}

// config checks the ensemble and takes the parsed options o.
func (e *Ensemble[T]) config(o options) (ensConfig, error) {
	var c ensConfig
	if e.N < 0 {
		return c, errorf("Ensemble.N = %d, want N ≥ 0", e.N)
	}
	if err := e.Base.validate(); err != nil {
		return c, errorf("Ensemble.Base: %w", err)
	}
	c.n = len(e.Base.U0)
	c.k = c.n
	switch {
	case e.Output != nil && e.OutputSize < 1:
		return c, errorf("Ensemble.OutputSize = %d, want ≥ 1 with Output", e.OutputSize)
	case e.Output != nil:
		c.k = e.OutputSize
	case e.OutputSize != 0 && e.OutputSize != c.n:
		return c, errorf("Ensemble.OutputSize = %d without Output, want 0 or the dimension %d (the final state)", e.OutputSize, c.n)
	}
	if (e.Reduce != nil) != (e.ReduceSize > 0) || e.ReduceSize < 0 {
		return c, errorf("Ensemble.ReduceSize = %d (Reduce set: %t), want ReduceSize ≥ 1 exactly when Reduce is set",
			e.ReduceSize, e.Reduce != nil)
	}
	if e.ShardSize < 0 {
		return c, errorf("Ensemble.ShardSize = %d, want ≥ 0 (0: DefaultShardSize)", e.ShardSize)
	}
	c.shard = cmp.Or(e.ShardSize, DefaultShardSize)
	c.workers = cmp.Or(o.workers, runtime.GOMAXPROCS(0))
	o.workers = 0
	c.o = o
	return c, nil
}

// parseConfig is config of the options opts; the ensemble's errors come
// before the options'.
func parseConfig[T Float, O applier](e *Ensemble[T], opts []O) (ensConfig, error) {
	o, optErr := parseOptions(opts)
	c, err := e.config(o)
	if err != nil {
		return c, err
	}
	return c, optErr
}

// Problem returns trajectory i's problem, as Modify makes it from Base and
// the trajectory's generator, with its own copy of U0. Use it to rerun one
// trajectory with Solve and other options: a failed one, say.
func (e Ensemble[T]) Problem(i int) Problem[T] {
	p := e.Base
	p.U0 = slices.Clone(e.Base.U0)
	if e.Modify != nil {
		e.Modify(i, TrajectoryRand(e.Seed, i), &p)
	}
	return p
}

// Solve solves the N trajectories with method m and returns their outputs
// and reduction. opts are those of Solve, plus Workers.
//
// A trajectory can fail on max steps, a dt underflow, a NaN or Inf, or a
// problem that Modify left invalid; the others still finish. Solve then
// returns the result and an *EnsembleError listing the failures. The
// result has the failures in res.Errors and NaN outputs in their slots. If
// ctx is cancelled, Solve stops starting trajectories. It returns a nil
// result and an error wrapping ctx.Err(). Invalid input returns a nil
// result and an error before any trajectory runs: the ensemble's fields,
// Base, the method or an option.
//
// Solve allocates its result and one Integrator per worker. The
// trajectories themselves allocate nothing, unless Modify, Output or
// Reduce do.
func (e Ensemble[T]) Solve(ctx context.Context, m Method, opts ...EnsembleSolveOption) (*EnsembleResult[T], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := parseConfig(&e, opts)
	if err != nil {
		return nil, err
	}
	r := &ensRun[T]{e: &e, c: c, shards: e.Shards()}
	r.errs = make([][]TrajectoryError, len(r.shards))
	res := &EnsembleResult[T]{}
	if !e.DropOutputs {
		r.flat = make([]T, e.N*c.k)
		res.U = rows(r.flat, e.N, c.k)
	}
	if e.Reduce != nil {
		r.init(e.ReduceSize, len(r.shards))
	}
	nw := max(1, min(c.workers, len(r.shards)))
	workers := make([]*ensWorker[T], nw)
	for j := range workers {
		if workers[j], err = e.newWorker(c, m); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, errorf("ensemble cancelled: %w", err)
	}
	runWorkers(ctx, workers, r.work)
	if r.stop.Load() {
		return nil, errorf("ensemble cancelled: %w", context.Cause(ctx))
	}
	for _, w := range workers {
		res.Stats.Add(w.stats)
	}
	res.Errors = slices.Concat(r.errs...) // in shard order; nil if none failed
	res.Acc = r.total
	return res, finishEnsemble(res, e.N)
}

// finishEnsemble sets the result's Retcode and returns the ensemble's error.
func finishEnsemble[T Float](res *EnsembleResult[T], n int) error {
	if len(res.Errors) == 0 {
		res.Stats.Retcode = Success
		return nil
	}
	res.Stats.Retcode = Unfinished
	var se *Error
	if errors.As(res.Errors[0].Err, &se) {
		res.Stats.Retcode = se.Code
	}
	return &EnsembleError{N: n, Errors: res.Errors}
}
