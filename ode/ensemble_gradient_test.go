package ode_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// lvEnsemble: N Lotka-Volterra trajectories from u0 = (1, 1) + 0.1·N(0, 1),
// each with its own target at t = 5 and 10.
func lvEnsemble(n int) (ode.Ensemble[float64], func(i int) ode.Loss[float64]) {
	ens := ode.Ensemble[float64]{Base: lvProblem(), N: n, Seed: 7, ShardSize: 3,
		Modify: func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] += 0.1 * rng.NormFloat64()
			p.U0[1] += 0.1 * rng.NormFloat64()
		}}
	lossFor := func(i int) ode.Loss[float64] {
		target := 1 + 0.01*float64(i)
		return ode.Loss[float64]{At: []float64{5, 10}, Point: func(k int, t float64, u, dl []float64) float64 {
			var v float64
			for j := range u {
				d := u[j] - target
				v += d * d / 2
				dl[j] = d
			}
			return v
		}}
	}
	return ens, lossFor
}

// The ensemble gradient is the sum of the trajectories' gradients, taken
// shard by shard, bit for bit the same on any number of workers.
func TestEnsembleGradientSumsTrajectories(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(10)
	tol := ode.Tol(1e-8, 1e-10)
	var want [4]float64
	var wantV float64
	var shardP [4]float64
	var shardV float64
	for i := 0; i < ens.N; i++ {
		g, err := ode.Gradient(ctx, ens.Problem(i), ode.Tsit5(), lossFor(i), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		shardV += g.Value
		for k, v := range g.P {
			shardP[k] += v
		}
		if i%ens.ShardSize == ens.ShardSize-1 || i == ens.N-1 {
			wantV += shardV
			for k := range want {
				want[k] += shardP[k]
			}
			shardV, shardP = 0, [4]float64{}
		}
	}
	var first *ode.EnsembleGradientResult[float64]
	for _, w := range []int{1, 2, 3} {
		g, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, tol, ode.Workers(w), ode.PerTrajectoryU0())
		if err != nil {
			t.Fatal(err)
		}
		if g.Count != ens.N || g.Value != wantV {
			t.Errorf("workers %d: count %d value %v, want %d %v", w, g.Count, g.Value, ens.N, wantV)
		}
		for k := range want {
			if g.P[k] != want[k] {
				t.Errorf("workers %d: P[%d] = %v, want %v (the shard-ordered sum)", w, k, g.P[k], want[k])
			}
		}
		if len(g.U0) != ens.N || g.U0[3][0] == 0 {
			t.Errorf("workers %d: per-trajectory dL/du0 missing: %v", w, g.U0)
		}
		if first == nil {
			first = g
		} else if math.Float64bits(g.U0[9][1]) != math.Float64bits(first.U0[9][1]) {
			t.Errorf("workers %d: dL/du0 differs from one worker's", w)
		}
	}
}

// A minibatch (Indices) is the sum over those trajectories, each seeded by
// its own index.
func TestEnsembleGradientMinibatch(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(10)
	batch := []int{7, 2, 9}
	g, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.ForwardSensitivity{}, ode.Indices(batch...), ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	var want [4]float64
	var wantV float64
	for _, i := range batch {
		gi, err := ode.Gradient(ctx, ens.Problem(i), ode.Tsit5(), lossFor(i), ode.ForwardSensitivity{}, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		wantV += gi.Value
		for k, v := range gi.P {
			want[k] += v
		}
	}
	if g.Count != 3 || g.Value != wantV {
		t.Errorf("count %d value %v, want 3 %v", g.Count, g.Value, wantV)
	}
	for k := range want {
		if g.P[k] != want[k] {
			t.Errorf("P[%d] = %v, want %v", k, g.P[k], want[k])
		}
	}
	if _, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, nil, ode.Indices(3, 10)); err == nil || !strings.Contains(err.Error(), "Indices[1] = 10") {
		t.Errorf("index out of range: got %v", err)
	}
}

// Trajectories on their own slices of one flat buffer get their gradients
// at those offsets; a P outside the buffer and a failing trajectory are
// reported with their index and left out.
func TestEnsembleGradientParameterSlicesAndFailures(t *testing.T) {
	ctx := context.Background()
	θ := []float32{1.5, 1, 3, 1, 1.4, 1.1, 2.9, 1, 1.6, 0.9, 3.1, 1}
	foreign := []float32{1.5, 1, 3, 1}
	base := lvProblem()
	base.P = θ
	ens := ode.Ensemble[float64]{Base: base, N: 5,
		Modify: func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
			switch i {
			case 3:
				p.P = foreign
			case 4:
				p.T1 = math.Inf(1)
			default:
				p.P = θ[4*i : 4*i+4]
			}
		}}
	lossFor := func(i int) ode.Loss[float64] { return lvLoss() }
	g, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.DiscreteAdjoint{}, ode.Tol(1e-8, 1e-10))
	var ee *ode.EnsembleError
	if !errors.As(err, &ee) || len(g.Errors) != 2 || g.Errors[0].Index != 3 || g.Errors[1].Index != 4 {
		t.Fatalf("got %v (errors %v), want trajectories 3 and 4 reported", err, g.Errors)
	}
	if !strings.Contains(g.Errors[0].Error(), "not within Base.P") {
		t.Errorf("trajectory 3: %v", g.Errors[0])
	}
	if g.Count != 3 {
		t.Errorf("count %d, want 3", g.Count)
	}
	for i := 0; i < 3; i++ {
		p := lvProblem()
		p.P = θ[4*i : 4*i+4]
		gi, err := ode.Gradient(ctx, p, ode.Tsit5(), lvLoss(), ode.DiscreteAdjoint{}, ode.Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range gi.P {
			if g.P[4*i+k] != v {
				t.Errorf("P[%d] = %v, want trajectory %d's %v", 4*i+k, g.P[4*i+k], i, v)
			}
		}
	}
}

// GradientShard and MergeGradients, in any order, equal Gradient bit for
// bit: the contract a remote runner relies on.
func TestEnsembleGradientShardsMerge(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(11)
	batch := []int{10, 0, 4, 4, 7, 1, 2, 9}
	opts := []ode.GradientShardOption{ode.Tol(1e-8, 1e-10), ode.Indices(batch...), ode.PerTrajectoryU0()}
	want, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, opts[0], opts[1], opts[2])
	if err != nil {
		t.Fatal(err)
	}
	shards := ens.GradientShards(opts...)
	parts := make([]*ode.GradientShardResult[float64], len(shards))
	for k := len(shards) - 1; k >= 0; k-- {
		if parts[k], err = ens.GradientShard(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, shards[k], opts...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ens.MergeGradients([]*ode.GradientShardResult[float64]{parts[2], parts[0], parts[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != want.Value || got.Count != want.Count || !slices.Equal(got.P, want.P) {
		t.Errorf("merged %v %d %v, Gradient %v %d %v", got.Value, got.Count, got.P, want.Value, want.Count, want.P)
	}
	for q := range want.U0 {
		if !slices.Equal(got.U0[q], want.U0[q]) {
			t.Errorf("position %d: dL/du0 %v, want %v", q, got.U0[q], want.U0[q])
		}
	}
	if _, err := ens.MergeGradients(parts[:2]); err == nil {
		t.Error("a missing shard: no error")
	}
	if _, err := ens.MergeGradients(parts[1:]); err == nil || !strings.Contains(err.Error(), "2 shard results, want 3") {
		t.Errorf("the first shard missing: got %v", err)
	}
	noU0 := *parts[1]
	noU0.U0 = nil
	if _, err := ens.MergeGradients([]*ode.GradientShardResult[float64]{parts[0], &noU0, parts[2]}); err == nil || !strings.Contains(err.Error(), "shard [3, 6) has 0 dL/du0 values and shard [0, 3) 6, want them in every shard (PerTrajectoryU0) or in none") {
		t.Errorf("a shard without dL/du0: got %v", err)
	}
	other := *parts[2]
	other.Shard.N = 9
	if _, err := ens.MergeGradients([]*ode.GradientShardResult[float64]{parts[0], parts[1], &other}); err == nil || !strings.Contains(err.Error(), "shard 2 is [6, 8) of N = 9, want [6, 8) of N = 8") {
		t.Errorf("a shard of another list: got %v", err)
	}
	if _, err := ens.GradientShard(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, shards[0], ode.Tol(1e-8, 1e-10)); err == nil || !strings.Contains(err.Error(), "shard [0, 3) of N = 8, want N = 11 (the positions)") {
		t.Errorf("GradientShard without the Indices its shard was cut with: got %v", err)
	}
	beyond := ode.Shard{Lo: 6, Hi: 9, N: 8, Seed: ens.Seed}
	if _, err := ens.GradientShard(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, beyond, opts...); err == nil || !strings.Contains(err.Error(), "shard [6, 9), want 0 ≤ Lo ≤ Hi ≤ 8 (the positions)") {
		t.Errorf("GradientShard beyond the positions: got %v", err)
	}
}

// A trajectory that fails on its input (T1 = +Inf) adds no counters: the
// ensemble's Stats are the same whether its worker ran other trajectories
// first (Gradient, one worker over every shard) or starts with it
// (GradientShard); before, a failed call reported the previous call's.
func TestEnsembleGradientStatsOfFailedTrajectories(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(12)
	modify := ens.Modify
	ens.Modify = func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
		modify(i, rng, p)
		if i%4 == 3 {
			p.T1 = math.Inf(1)
		}
	}
	tol := ode.Tol(1e-8, 1e-10)
	want, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, tol, ode.Workers(1))
	if err == nil || len(want.Errors) != 3 {
		t.Fatalf("Gradient: %v, %d failed trajectories; want an error and 3", err, len(want.Errors))
	}
	var parts []*ode.GradientShardResult[float64]
	for _, sh := range ens.GradientShards() {
		p, err := ens.GradientShard(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, sh, tol)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	got, _ := ens.MergeGradients(parts)
	if got.Stats != want.Stats {
		t.Errorf("merged shards' Stats %+v, Gradient's %+v", got.Stats, want.Stats)
	}
	if got.Value != want.Value || !slices.Equal(got.P, want.P) {
		t.Errorf("merged %v %v, Gradient %v %v", got.Value, got.P, want.Value, want.P)
	}
}
