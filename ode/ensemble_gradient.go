package ode

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"
)

// EnsembleGradientResult is the result of Ensemble.Gradient: sums over the
// trajectories that succeeded. They are taken shard by shard in position
// order, and the shards in order. So they are identical, bit for bit, for
// any number of workers.
type EnsembleGradientResult[T Float] struct {
	// Value is the sum of the trajectories' losses.
	Value float64
	// P is Σ dL/dθ, of the length of Base.P, accumulated in float64.
	// Trajectory i's gradient is added at the offsets of its P within
	// Base.P.
	P []T
	// U0 holds, with PerTrajectoryU0, dL/du0 of the trajectory at each
	// position of the list asked for. It is NaN for a failed one.
	U0 [][]T
	// Count is the number of trajectories summed.
	Count int
	// Errors are the failed trajectories, left out of the sums, by
	// position in the list asked for.
	Errors []TrajectoryError
	// Stats sums the forward and backward counters of every trajectory.
	Stats Stats
}

// Gradient differentiates Σ_i L_i over the trajectories by the sensitivity
// method s with method m. lossFor(i) is trajectory i's loss, against its
// own data. The sum runs over all trajectories, or over those of Indices.
// opts are Gradient's options plus Workers, Indices and PerTrajectoryU0.
//
//	g, err := ens.Gradient(ctx, ode.Tsit5(), func(i int) ode.Loss[float32] { return lossAgainst(data[i]) },
//		ode.InterpolatingAdjoint{}, ode.Indices(batch...), ode.Workers(runtime.NumCPU()))
//	opt.Update(θ, g.P)
//
// Every trajectory's P must be Base.P or a slice of one length within it,
// such as θ[i*k:(i+1)*k] set by Modify. Its gradient lands at that slice's
// offsets. A trajectory whose solve or loss fails is reported in Errors
// with its index and left out. The error returned is then an
// *EnsembleError. lossFor and Modify are called concurrently from the
// workers. Each worker keeps one GradientSolver, so trajectories allocate
// nothing once the workers are warm, lossFor's own allocations aside.
func (e Ensemble[T]) Gradient(ctx context.Context, m Method, lossFor func(i int) Loss[T], s Sensitivity, opts ...EnsembleGradientOption) (*EnsembleGradientResult[T], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	o, optErr := parseOptions(opts)
	r, err := e.gradPlan(m, lossFor, s, o, optErr)
	if err != nil {
		return nil, err
	}
	res := &EnsembleGradientResult[T]{}
	n := len(e.Base.U0)
	if o.perU0 {
		r.u0s = make([]T, len(r.idx)*n)
		res.U0 = rows(r.u0s, len(r.idx), n)
	}
	workers := cmp.Or(o.workers, runtime.GOMAXPROCS(0))
	nw := max(1, min(workers, len(r.shards)))
	ws := make([]*gradWorker[T], nw)
	for j := range ws {
		ws[j] = r.newWorker()
	}
	if err := runShards(ctx, r, ws, r.work, "Ensemble.Gradient"); err != nil {
		return nil, err
	}
	for _, w := range ws {
		res.Stats.Add(w.stats)
	}
	res.Errors = slices.Concat(r.errs...) // in shard order; nil if none failed
	return res, r.finish(res)
}

// runShards runs the workers ws on r's shards by work. It returns the
// first setup error, or the cancellation, named by what.
func runShards[T Float, W any](ctx context.Context, r *gradRun[T], ws []W, work func(context.Context, W), what string) error {
	if err := ctx.Err(); err != nil {
		return errorf("%s cancelled: %w", what, err)
	}
	runWorkers(ctx, ws, work)
	if r.setupErr != nil {
		return r.setupErr
	}
	if r.stop.Load() {
		return errorf("%s cancelled: %w", what, context.Cause(ctx))
	}
	return nil
}

// finish fills res from the merged total and returns the ensemble's error.
func (r *gradRun[T]) finish(res *EnsembleGradientResult[T]) error {
	res.Value, res.Count = r.total[0], int(r.total[1])
	res.P = make([]T, r.np)
	for k, v := range r.total[2:] {
		res.P[k] = T(v)
	}
	if len(res.Errors) > 0 {
		res.Stats.Retcode = Unfinished
		return &EnsembleError{N: len(r.idx), Errors: res.Errors}
	}
	res.Stats.Retcode = Success
	return nil
}

// gradPlan checks an ensemble gradient's input and cuts its shards. optErr
// is the options' error.
func (e Ensemble[T]) gradPlan(m Method, lossFor func(i int) Loss[T], s Sensitivity, o options, optErr error) (*gradRun[T], error) {
	if lossFor == nil {
		return nil, errorf("Ensemble.Gradient: lossFor is nil")
	}
	if m == nil {
		return nil, errorf("Ensemble.Gradient: method is nil")
	}
	if e.N < 0 {
		return nil, errorf("Ensemble.N = %d, want N ≥ 0", e.N)
	}
	if err := e.Base.validate(); err != nil {
		return nil, errorf("Ensemble.Base: %w", err)
	}
	if e.ShardSize < 0 {
		return nil, errorf("Ensemble.ShardSize = %d, want ≥ 0 (0: DefaultShardSize)", e.ShardSize)
	}
	if optErr != nil {
		return nil, optErr
	}
	if err := o.setSensitivity(s); err != nil {
		return nil, err
	}
	idx := o.indices
	if !o.indicesSet {
		idx = make([]int, e.N)
		for i := range idx {
			idx[i] = i
		}
	}
	for p, i := range idx {
		if i < 0 || i >= e.N {
			return nil, errorf("Ensemble.Gradient: Indices[%d] = %d, want 0 ≤ i < N = %d", p, i, e.N)
		}
	}
	so := o // the solvers' options: not the ensemble's
	so.workers, so.indices, so.indicesSet, so.perU0 = 0, nil, false, false
	np := len(e.Base.P)
	r := &gradRun[T]{e: &e, m: m, s: s, o: so, lossFor: lossFor, idx: idx, shards: e.gradShards(len(idx)), np: np}
	r.errs = make([][]TrajectoryError, len(r.shards))
	r.init(2+np, len(r.shards))
	return r, nil
}

func (e Ensemble[T]) gradShards(positions int) []Shard {
	size := cmp.Or(e.ShardSize, DefaultShardSize)
	var shards []Shard
	for lo := 0; lo < positions; lo += size {
		shards = append(shards, Shard{Lo: lo, Hi: min(lo+size, positions), N: positions, Seed: e.Seed})
	}
	return shards
}

// GradientShards cuts the positions of the list asked for by opts into the
// shards of Ensemble.Gradient. opts are GradientShard's. The list is the
// Indices given, or else all N trajectories. Options other than Indices
// do not change the shards.
func (e Ensemble[T]) GradientShards(opts ...GradientShardOption) []Shard {
	o, _ := parseOptions(opts) // an invalid option is GradientShard's error
	positions := e.N
	if o.indicesSet {
		positions = len(o.indices)
	}
	return e.gradShards(positions)
}

// GradientShardResult is one shard's partial of Ensemble.Gradient: the sums
// over its positions, its failures and counters. The sums are in float64,
// in position order. With PerTrajectoryU0 it keeps each position's dL/du0.
type GradientShardResult[T Float] struct {
	Shard  Shard
	Value  float64
	Count  int
	P      []float64 // len(Base.P)
	U0     []T       // (Hi−Lo)·n values with PerTrajectoryU0, else nil
	Errors []TrajectoryError
	Stats  Stats
}

// GradientShard computes one shard's partial of Ensemble.Gradient in a new
// GradientSolver: what a remote runner executes. opts must be those of the
// whole gradient, with the same Indices and without Workers. Failed
// trajectories are in the result's Errors; the error is for invalid input
// and cancellation.
func (e Ensemble[T]) GradientShard(ctx context.Context, m Method, lossFor func(i int) Loss[T], s Sensitivity, sh Shard, opts ...GradientShardOption) (*GradientShardResult[T], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	o, optErr := parseOptions(opts)
	r, err := e.gradPlan(m, lossFor, s, o, optErr)
	if err != nil {
		return nil, err
	}
	if sh.Lo < 0 || sh.Hi < sh.Lo || sh.Hi > len(r.idx) {
		return nil, errorf("GradientShard: shard [%d, %d), want 0 ≤ Lo ≤ Hi ≤ %d (the positions)", sh.Lo, sh.Hi, len(r.idx))
	}
	if sh.N != len(r.idx) {
		return nil, errorf("GradientShard: shard [%d, %d) of N = %d, want N = %d (the positions)", sh.Lo, sh.Hi, sh.N, len(r.idx))
	}
	n := len(e.Base.U0)
	sr := &GradientShardResult[T]{Shard: sh}
	if o.perU0 {
		r.u0s = make([]T, len(r.idx)*n) // positions outside the shard stay unused
	}
	w := r.newWorker()
	if err := ctx.Err(); err != nil {
		return nil, errorf("gradient shard [%d, %d) cancelled: %w", sh.Lo, sh.Hi, err)
	}
	errs, cancelled, setup := r.runShard(ctx, w, sh)
	switch {
	case setup != nil:
		return nil, setup
	case cancelled:
		return nil, errorf("gradient shard [%d, %d) cancelled: %w", sh.Lo, sh.Hi, context.Cause(ctx))
	}
	sr.Value, sr.Count = w.acc[0], int(w.acc[1])
	sr.P = append([]float64(nil), w.acc[2:]...)
	if r.u0s != nil {
		sr.U0 = append([]T(nil), r.u0s[sh.Lo*n:sh.Hi*n]...)
	}
	sr.Errors, sr.Stats = errs, w.stats
	return sr, nil
}

// MergeGradients combines the partials of every shard of GradientShards
// as Ensemble.Gradient does. They may come in any order: it sorts them by
// Lo and sums in shard order. The result and the error equal Gradient's.
// The shards hold the number of positions in Shard.N and whether they kept
// dL/du0 in U0, so nothing else is needed. Without parts the result is
// that of no positions.
func (e Ensemble[T]) MergeGradients(parts []*GradientShardResult[T]) (*EnsembleGradientResult[T], error) {
	positions := 0
	for _, p := range parts {
		if p != nil {
			positions = p.Shard.N
			break
		}
	}
	want := e.gradShards(positions)
	ps, err := sortedParts("MergeGradients", parts, len(want), func(p *GradientShardResult[T]) int { return p.Shard.Lo })
	if err != nil {
		return nil, err
	}
	np, n := len(e.Base.P), len(e.Base.U0)
	perU0 := len(ps) > 0 && ps[0].U0 != nil
	total := make([]float64, 2+np)
	res := &EnsembleGradientResult[T]{}
	if perU0 {
		res.U0 = rows(make([]T, positions*n), positions, n)
	}
	acc := make([]float64, 2+np)
	for k, p := range ps {
		if p.Shard != want[k] {
			return nil, errorf("MergeGradients: shard %d is [%d, %d) of N = %d, want [%d, %d) of N = %d", k, p.Shard.Lo, p.Shard.Hi, p.Shard.N, want[k].Lo, want[k].Hi, want[k].N)
		}
		if len(p.P) != np {
			return nil, errorf("MergeGradients: shard [%d, %d) has %d gradient values, want %d", p.Shard.Lo, p.Shard.Hi, len(p.P), np)
		}
		if (p.U0 != nil) != perU0 {
			return nil, errorf("MergeGradients: shard [%d, %d) has %d dL/du0 values and shard [%d, %d) %d, want them in every shard (PerTrajectoryU0) or in none",
				p.Shard.Lo, p.Shard.Hi, len(p.U0), ps[0].Shard.Lo, ps[0].Shard.Hi, len(ps[0].U0))
		}
		acc[0], acc[1] = p.Value, float64(p.Count)
		copy(acc[2:], p.P)
		addInto(total, acc)
		if perU0 {
			if len(p.U0) != (p.Shard.Hi-p.Shard.Lo)*n {
				return nil, errorf("MergeGradients: shard [%d, %d) has %d dL/du0 values, want %d", p.Shard.Lo, p.Shard.Hi, len(p.U0), (p.Shard.Hi-p.Shard.Lo)*n)
			}
			for q := p.Shard.Lo; q < p.Shard.Hi; q++ {
				copy(res.U0[q], p.U0[(q-p.Shard.Lo)*n:])
			}
		}
		res.Errors = append(res.Errors, p.Errors...)
		res.Stats.Add(p.Stats)
	}
	r := &gradRun[T]{np: np, shardSum: shardSum{total: total}, idx: make([]int, positions)}
	return res, r.finish(res)
}

// gradRun is one Ensemble.Gradient: shards handed out from an atomic
// counter, and their accumulators merged in shard order. An accumulator
// holds Σ loss, the count, then Σ dL/dθ.
type gradRun[T Float] struct {
	e       *Ensemble[T]
	m       Method
	s       Sensitivity
	o       options
	lossFor func(int) Loss[T]
	idx     []int
	shards  []Shard
	np      int
	u0s     []T
	errs    [][]TrajectoryError
	next    atomic.Int64
	stop    atomic.Bool

	shardSum
	setupErr error // a solver could not be made (bad method, sensitivity or options); under mu
}

// gradWorker is one worker's GradientSolver and buffers. The solver is
// made from the first trajectory it runs.
type gradWorker[T Float] struct {
	gs    *GradientSolver[T]
	np    int // len(P) of the solver's trajectories
	prob  Problem[T]
	u0    []T
	acc   []float64
	rs    randSource
	stats Stats
}

func (r *gradRun[T]) newWorker() *gradWorker[T] {
	w := &gradWorker[T]{u0: padded[T](len(r.e.Base.U0)), acc: padded[float64](2 + r.np)} // padded: written per trajectory by each worker
	w.rs.init()
	return w
}

func (r *gradRun[T]) work(ctx context.Context, w *gradWorker[T]) {
	r.shardLoop(&w.acc, func(sh Shard) ([]TrajectoryError, bool, error) { return r.runShard(ctx, w, sh) })
}

// runShard differentiates the trajectories at positions sh.Lo to sh.Hi−1
// into w.acc.
func (r *gradRun[T]) runShard(ctx context.Context, w *gradWorker[T], sh Shard) (errs []TrajectoryError, cancelled bool, setup error) {
	e := r.e
	n := len(e.Base.U0)
	for pos := sh.Lo; pos < sh.Hi; pos++ {
		i := r.idx[pos]
		e.trajectory(i, sh.Seed, &w.rs, &w.prob, w.u0)
		var u0s []T
		if r.u0s != nil {
			u0s = r.u0s[pos*n : (pos+1)*n]
		}
		fail := func(err error) {
			errs = append(errs, TrajectoryError{Index: i, Err: err})
			for j := range u0s {
				u0s[j] = T(math.NaN())
			}
		}
		off, ok := offsetIn(e.Base.P, w.prob.P)
		if !ok {
			fail(errorf("Ensemble.Gradient: Modify set P to a slice (len %d) that is not within Base.P (len %d); a trajectory's P must be a view of the same flat buffer", len(w.prob.P), len(e.Base.P)))
			continue
		}
		if w.gs == nil {
			if err := w.prob.validate(); err != nil {
				fail(err)
				continue
			}
			gs, err := newGradientSolver(w.prob, r.m, r.s, r.o)
			if err != nil {
				return errs, false, err
			}
			w.gs, w.np = gs, len(w.prob.P)
		}
		if len(w.prob.P) != w.np {
			fail(errorf("Ensemble.Gradient: trajectory's P has len %d, want %d as the others", len(w.prob.P), w.np))
			continue
		}
		g, err := w.gs.GradientFor(ctx, w.prob, r.lossFor(i))
		w.stats.Add(w.gs.res.Forward) // also a failed gradient's counters
		w.stats.Add(w.gs.res.Backward)
		if err != nil {
			if ctx.Err() != nil {
				return errs, true, nil
			}
			fail(err)
			continue
		}
		w.acc[0] += g.Value
		w.acc[1]++
		dst := w.acc[2+off : 2+off+len(g.P)]
		for k, v := range g.P {
			dst[k] += float64(v)
		}
		copy(u0s, g.U0)
	}
	return errs, false, nil
}

// randSource is a worker's generator, reseeded for each trajectory as
// Ensemble.Solve's workers do.
type randSource struct {
	pcg rand.PCG
	rng *rand.Rand
}

func (r *randSource) init() { r.rng = rand.New(&r.pcg) }

// trajectory sets *prob to trajectory i's problem: Base with its own
// copy of U0 in u0, then changed by Modify with i's generator from rs.
func (e *Ensemble[T]) trajectory(i int, seed uint64, rs *randSource, prob *Problem[T], u0 []T) {
	*prob = e.Base
	copy(u0, e.Base.U0)
	prob.U0 = u0
	if e.Modify != nil {
		e.Modify(i, rs.seeded(seed, i), prob)
	}
}

func (r *randSource) seeded(seed uint64, i int) *rand.Rand {
	r.pcg.Seed(trajectorySeed(seed, i))
	return r.rng
}

// offsetIn returns where p starts within base, if p is a slice of the same
// array lying inside base[0:len(base)].
func offsetIn(base, p []float32) (int, bool) {
	if len(p) == 0 {
		return 0, true
	}
	if len(base) == 0 {
		return 0, false
	}
	b := uintptr(unsafe.Pointer(unsafe.SliceData(base)))
	q := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	if q < b || (q-b)%4 != 0 {
		return 0, false
	}
	off := int((q - b) / 4)
	if off+len(p) > len(base) {
		return 0, false
	}
	return off, true
}
