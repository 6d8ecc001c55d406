package ode

import (
	"cmp"
	"context"
	"slices"
)

// Shard is a range [Lo, Hi) of the N trajectory indices of an ensemble,
// or of the N positions of a gradient's list, with the ensemble's master
// seed. A runner needs nothing else to compute the shard's partial
// results, besides the ensemble itself and the call's options. Shards and
// GradientShards make them.
type Shard struct {
	Lo, Hi int
	N      int // the trajectories (Shards) or positions (GradientShards) cut into shards
	Seed   uint64
}

// Shards cuts the trajectories into shards of ShardSize, in order. The last
// one may be shorter.
func (e Ensemble[T]) Shards() []Shard {
	size := cmp.Or(max(e.ShardSize, 0), DefaultShardSize)
	s := make([]Shard, 0, (max(e.N, 0)+size-1)/size)
	for lo := 0; lo < e.N; lo += size {
		s = append(s, Shard{Lo: lo, Hi: min(lo+size, e.N), N: e.N, Seed: e.Seed})
	}
	return s
}

// sortedParts checks that parts holds want shard results, none nil, and
// returns them sorted by their shard's Lo. fn names the caller in errors.
func sortedParts[R any](fn string, parts []*R, want int, lo func(*R) int) ([]*R, error) {
	if len(parts) != want {
		return nil, errorf("%s: %d shard results, want %d", fn, len(parts), want)
	}
	ps := slices.Clone(parts)
	for _, p := range ps {
		if p == nil {
			return nil, errorf("%s: nil shard result", fn)
		}
	}
	slices.SortFunc(ps, func(a, b *R) int { return cmp.Compare(lo(a), lo(b)) })
	return ps, nil
}

// ShardResult is the partial result of one shard: the outputs of its
// trajectories Lo … Hi−1, its accumulator, its failures and the sum of its
// counters. U holds the outputs flat, (Hi−Lo)·OutputSize values, and is
// nil with DropOutputs. Acc is nil without Reduce.
type ShardResult[T Float] struct {
	Shard  Shard
	U      []T
	Acc    []float64
	Errors []TrajectoryError
	Stats  Stats
}

// SolveShard computes one shard's partial result in a new Integrator: what
// a remote runner executes. opts are Solve's. Failed trajectories are in
// the result's Errors; the error is for invalid input and cancellation.
func (e Ensemble[T]) SolveShard(ctx context.Context, m Method, s Shard, opts ...SolveOption) (*ShardResult[T], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := parseConfig(&e, opts)
	if err != nil {
		return nil, err
	}
	if s.Lo < 0 || s.Hi < s.Lo || s.Hi > e.N {
		return nil, errorf("SolveShard: shard [%d, %d), want 0 ≤ Lo ≤ Hi ≤ N = %d", s.Lo, s.Hi, e.N)
	}
	if s.N != e.N {
		return nil, errorf("SolveShard: shard [%d, %d) of N = %d, want the ensemble's N = %d", s.Lo, s.Hi, s.N, e.N)
	}
	w, err := e.newWorker(c, m)
	if err != nil {
		return nil, err
	}
	sr := &ShardResult[T]{Shard: s, Acc: w.acc}
	if !e.DropOutputs {
		sr.U = make([]T, (s.Hi-s.Lo)*c.k)
	}
	if err := ctx.Err(); err != nil {
		return nil, errorf("shard [%d, %d) cancelled: %w", s.Lo, s.Hi, err)
	}
	errs, cancelled := e.runShard(ctx, w, c, s, sr.U)
	if cancelled {
		return nil, errorf("shard [%d, %d) cancelled: %w", s.Lo, s.Hi, context.Cause(ctx))
	}
	sr.Errors, sr.Stats = errs, w.stats
	return sr, nil
}

// Merge combines the partial results of every shard of Shards into the
// ensemble's result. They may come in any order: Merge sorts them by Lo
// and sums the accumulators in shard order. The result and the error equal
// Solve's.
func (e Ensemble[T]) Merge(parts []*ShardResult[T]) (*EnsembleResult[T], error) {
	c, err := e.config(defaultOptions())
	if err != nil {
		return nil, err
	}
	want := e.Shards()
	ps, err := sortedParts("Merge", parts, len(want), func(p *ShardResult[T]) int { return p.Shard.Lo })
	if err != nil {
		return nil, err
	}
	res := &EnsembleResult[T]{}
	var flat []T
	if !e.DropOutputs {
		flat = make([]T, 0, e.N*c.k)
	}
	if e.Reduce != nil {
		res.Acc = make([]float64, e.ReduceSize)
	}
	for j, p := range ps {
		if p.Shard != want[j] {
			return nil, errorf("Merge: shard result %d covers %+v, want %+v", j, p.Shard, want[j])
		}
		if nu := (p.Shard.Hi - p.Shard.Lo) * c.k; !e.DropOutputs && len(p.U) != nu {
			return nil, errorf("Merge: shard [%d, %d) has %d outputs, want %d", p.Shard.Lo, p.Shard.Hi, len(p.U), nu)
		}
		if len(p.Acc) != e.ReduceSize {
			return nil, errorf("Merge: shard [%d, %d) has an accumulator of %d, want %d", p.Shard.Lo, p.Shard.Hi, len(p.Acc), e.ReduceSize)
		}
		flat = append(flat, p.U...)
		if res.Acc != nil {
			addInto(res.Acc, p.Acc)
		}
		res.Errors = append(res.Errors, p.Errors...)
		res.Stats.Add(p.Stats)
	}
	if !e.DropOutputs {
		res.U = rows(flat, e.N, c.k)
	}
	return res, finishEnsemble(res, e.N)
}
