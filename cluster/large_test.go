package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
)

// emptyStore fails the test if anything of a finished request is left in
// the object store: θ, the descriptor, a stored result, a delete marker.
func emptyStore(t *testing.T, c *cluster.Coordinator, what string) {
	t.Helper()
	n, err := cluster.ObjectStoreMessages(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%s: %d messages left in the object store's stream, want 0", what, n)
	}
}

// Results that go through the object store (every one, here, however
// small) give the in-process answer bit for bit, solves and gradients, and
// leave nothing in the store.
func TestStoredResults(t *testing.T) {
	url := startServer(t).ClientURL()
	var ws []*cluster.Worker
	for range 2 {
		w, _ := goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv"}}, &cluster.Hooks{StoreAll: true})
		ws = append(ws, w)
	}
	c := coordinator(t, url)
	ctx := context.Background()
	θ := lv.Theta()

	args := lvArgs(t, lv.Args{N: 300, Seed: 2, ShardSize: 16, Reduce: true, FailEvery: 41})
	got, rep, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: θ})
	spec := inProcess[float64](t, args, θ)
	want, werr := spec.Ensemble.Solve(ctx, spec.Method, solveOpts(spec.Options)...)
	sameErr(t, "solve", err, werr)
	sameSolve(t, "solve", got, want)
	if rep.Offloaded != rep.Shards || rep.Completed != rep.Shards || rep.Invalid != 0 {
		t.Errorf("solve: report %+v, want every shard offloaded and completed", rep)
	}
	emptyStore(t, c, "solve")

	gargs := lvArgs(t, lv.Args{N: 100, Seed: 9, ShardSize: 7, FailEvery: 13})
	idx := []int{5, 12, 12, 99, 0, 25, 38, 3, 3, 3, 64, 77, 51, 26}
	ggot, grep, err := cluster.Gradient[float64](ctx, c, cluster.Request{Name: "lv", Args: gargs, Theta: θ, Indices: idx, PerTrajectoryU0: true})
	gspec := inProcess[float64](t, gargs, θ)
	gwant, werr := gspec.Ensemble.Gradient(ctx, gspec.Method, gspec.LossFor, gspec.Sensitivity, gradOpts(gspec.Options, ode.Indices(idx...), ode.PerTrajectoryU0())...)
	sameErr(t, "gradient", err, werr)
	sameGrad(t, "gradient", ggot, gwant)
	if grep.Offloaded != grep.Shards || grep.Completed != grep.Shards {
		t.Errorf("gradient: report %+v, want every shard offloaded and completed", grep)
	}
	emptyStore(t, c, "gradient")
	if n := ws[0].Stats().Offloaded + ws[1].Stats().Offloaded; n != int64(rep.Shards+grep.Shards) {
		t.Errorf("the workers stored %d results, want %d", n, rep.Shards+grep.Shards)
	}
}

// A stored result that was tampered with (a flipped bit, a byte more) or
// is missing is refused: once, and the shard is computed again and the
// answer is exact; on every attempt, and the shard's trajectories are
// reported failed (a ShardFailedError saying why), never summed.
func TestStoredResultFaults(t *testing.T) {
	args := lvArgs(t, lv.Args{N: 40, Seed: 6, ShardSize: 10, Reduce: true})
	θ := lv.Theta()
	spec := inProcess[float64](t, args, θ)
	want, err := spec.Ensemble.Solve(context.Background(), spec.Method, solveOpts(spec.Options)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fault, reason string
	}{
		{"flip", "SHA-256"},
		{"grow", "bytes, want"},
		{"delete", "not found"},
	} {
		for _, always := range []bool{false, true} {
			name := fmt.Sprintf("%s/always=%v", tc.fault, always)
			t.Run(name, func(t *testing.T) {
				url := startServer(t).ClientURL()
				h := &cluster.Hooks{StoreAll: true, StoredResult: func(shard, attempt int) string {
					if shard == 1 && (always || attempt == 0) {
						return tc.fault
					}
					return ""
				}}
				goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv"}}, h)
				c := coordinator(t, url)
				got, rep, err := cluster.Solve[float64](context.Background(), c, cluster.Request{Name: "lv", Args: args, Theta: θ})
				emptyStore(t, c, name)
				if !always {
					if err != nil {
						t.Fatal(err)
					}
					sameSolve(t, name, got, want)
					if rep.Invalid != 1 || rep.Republished != 1 || rep.Completed != rep.Shards {
						t.Errorf("report %+v: want one invalid result, published again once", rep)
					}
					return
				}
				var ee *ode.EnsembleError
				if !errors.As(err, &ee) || got == nil || len(got.Errors) != 10 || rep.Failed != 1 || rep.Invalid != testConfig.MaxDeliver {
					t.Fatalf("got %v, report %+v; want shard 1's 10 trajectories failed after %d invalid results", err, rep, testConfig.MaxDeliver)
				}
				var fe *cluster.ShardFailedError
				if got.Errors[0].Index != 10 || !errors.As(got.Errors[0].Err, &fe) || fe.Number != 1 || !strings.Contains(fe.Reason, tc.reason) {
					t.Errorf("first failure %v, want shard 1's with %q", got.Errors[0], tc.reason)
				}
				// The sums hold the other shards only, as in-process
				// when shard 1's trajectories fail.
				for i, u := range got.U {
					if i >= 10 && i < 20 {
						continue
					}
					if !sameBits(u[0], want.U[i][0]) || !sameBits(u[1], want.U[i][1]) {
						t.Errorf("U[%d] = %v, want %v", i, u, want.U[i])
					}
				}
			})
		}
	}
}
