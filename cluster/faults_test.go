package cluster_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
)

// faultRun is a 1000-trajectory request computed by three worker processes:
// A is killed (SIGKILL) in the middle of its third shard, B publishes its
// second shard's result twice more, C starts once 20 shards are done. The
// result must equal the in-process one bit for bit.
type faultRun struct {
	rep       cluster.Report
	recovery  time.Duration // from A's kill to the result of the shard it held
	statsB    cluster.WorkerStats
	statsC    cluster.WorkerStats
	byWorker  map[string]int
	hungShard int
}

func runFaults(t *testing.T, do func(ctx context.Context, c *cluster.Coordinator, progress func(cluster.Progress)) (cluster.Report, error)) faultRun {
	url := startServer(t).ClientURL()
	var fr faultRun
	fr.byWorker = map[string]int{}
	a := startProc(t, url, "A", "delay=20ms,hang=3")
	b := startProc(t, url, "B", "delay=20ms,dup=2")
	c := coordinator(t, url)

	var mu sync.Mutex
	var killed time.Time
	fr.hungShard = -1
	go func() {
		l := a.wait(t, "hang ", 30*time.Second)
		time.Sleep(100 * time.Millisecond) // well inside the shard
		mu.Lock()
		fr.hungShard, _ = strconv.Atoi(strings.TrimPrefix(l, "hang "))
		killed = time.Now()
		mu.Unlock()
		a.cmd.Process.Kill()
	}()
	var late *proc
	lateStarted := make(chan struct{})
	progress := func(p cluster.Progress) {
		mu.Lock()
		defer mu.Unlock()
		fr.byWorker[p.Worker]++
		if p.Shard == fr.hungShard && !killed.IsZero() {
			fr.recovery = time.Since(killed)
		}
		if p.Done == 20 {
			go func() {
				late = startProc(t, url, "C", "delay=20ms")
				close(lateStarted)
			}()
		}
	}
	rep, err := do(context.Background(), c, progress)
	if err != nil {
		t.Fatal(err)
	}
	fr.rep = rep
	<-lateStarted
	fr.statsB = b.stop(t)
	fr.statsC = late.stop(t)

	if fr.hungShard < 0 || fr.recovery == 0 {
		t.Errorf("the killed worker's shard (%d) was not seen recovered", fr.hungShard)
	}
	if rep.Completed != rep.Shards || rep.Failed != 0 {
		t.Errorf("report %+v: every shard must be completed once", rep)
	}
	if rep.Redelivered < 1 {
		t.Errorf("report %+v: the killed worker's shard must come from a redelivery", rep)
	}
	if rep.DuplicatesDropped != 1 || fr.statsB.ServerDuplicates != 1 {
		t.Errorf("duplicates: coordinator %d (report %+v), server %d; want 1 and 1", rep.DuplicatesDropped, rep, fr.statsB.ServerDuplicates)
	}
	if fr.byWorker["A"] == 0 || fr.byWorker["B"] == 0 || fr.byWorker["C"] == 0 {
		t.Errorf("shards by worker %v: each of A (before its kill), B and C (late) must have done some", fr.byWorker)
	}
	total := 0
	for _, n := range fr.byWorker {
		total += n
	}
	if total != rep.Shards {
		t.Errorf("shards by worker %v sum to %d, want %d", fr.byWorker, total, rep.Shards)
	}
	t.Logf("shards %d, redelivered %d, duplicates dropped by the coordinator %d and by the server %d, recovery from the kill %v, by worker %v, elapsed %v",
		rep.Shards, rep.Redelivered, rep.DuplicatesDropped, fr.statsB.ServerDuplicates, fr.recovery.Round(time.Millisecond), fr.byWorker, rep.Elapsed.Round(time.Millisecond))
	return fr
}

// TestSolveFaults: a 1000-trajectory Lotka-Volterra solve (outputs and
// Reduce sums) through JetStream by three worker processes, one killed in
// the middle of a shard, one shard result delivered twice, one worker
// started late, equals the in-process solve bit for bit.
func TestSolveFaults(t *testing.T) {
	args := lvArgs(t, lv.Args{N: 1000, Seed: 11, ShardSize: 16, Reduce: true})
	θ := lv.Theta()
	var got *ode.EnsembleResult[float64]
	runFaults(t, func(ctx context.Context, c *cluster.Coordinator, progress func(cluster.Progress)) (cluster.Report, error) {
		var rep cluster.Report
		var err error
		got, rep, err = cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: θ, Progress: progress})
		return rep, err
	})
	spec := inProcess[float64](t, args, θ)
	want, err := spec.Ensemble.Solve(context.Background(), spec.Method, solveOpts(spec.Options)...)
	if err != nil {
		t.Fatal(err)
	}
	sameSolve(t, "solve with faults", got, want)
}

// TestGradientFaults: the same faults in a 1000-trajectory ensemble
// gradient (with per-trajectory dL/du0): equal to Ensemble.Gradient bit for
// bit.
func TestGradientFaults(t *testing.T) {
	args := lvArgs(t, lv.Args{N: 1000, Seed: 12, ShardSize: 16})
	θ := lv.Theta()
	var got *ode.EnsembleGradientResult[float64]
	runFaults(t, func(ctx context.Context, c *cluster.Coordinator, progress func(cluster.Progress)) (cluster.Report, error) {
		var rep cluster.Report
		var err error
		got, rep, err = cluster.Gradient[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: θ, PerTrajectoryU0: true, Progress: progress})
		return rep, err
	})
	spec := inProcess[float64](t, args, θ)
	want, err := spec.Ensemble.Gradient(context.Background(), spec.Method, spec.LossFor, spec.Sensitivity, gradOpts(spec.Options, ode.PerTrajectoryU0())...)
	if err != nil {
		t.Fatal(err)
	}
	sameGrad(t, "gradient with faults", got, want)
}

// A shard whose every delivery is lost (each worker that takes it has its
// connection closed abruptly in the middle of it) is given up after
// MaxDeliver deliveries, on the server's MAX_DELIVERIES advisory: its
// trajectories are reported failed with their indices; the other shard is
// exact.
func TestMaxDeliverLostWorkers(t *testing.T) {
	url := startServer(t).ClientURL()
	cfg := cluster.Config{AckWait: 300 * time.Millisecond, MaxDeliver: 2}
	coord, err := cluster.NewCoordinator(context.Background(), connect(t, url), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range 3 {
		nc := connect(t, url)
		w, err := cluster.NewWorker(nc, cluster.WorkerConfig{Config: cfg, Names: []string{"lv"}, Concurrency: 1, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		cluster.SetHooks(w, cluster.Hooks{BeforeCompute: func(shard int) {
			if shard == 1 {
				nc.Close() // abruptly, in the middle of the shard
			}
		}})
		wg.Go(func() { w.Run(ctx) })
		<-w.Ready()
	}
	args := lvArgs(t, lv.Args{N: 20, Seed: 4, ShardSize: 10})
	res, rep, err := cluster.Solve[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
	var ee *ode.EnsembleError
	if !errors.As(err, &ee) || res == nil || len(res.Errors) != 10 || rep.Failed != 1 || rep.Completed != 1 {
		t.Fatalf("got %v, report %+v; want shard 1's 10 trajectories failed", err, rep)
	}
	var fe *cluster.ShardFailedError
	if res.Errors[0].Index != 10 || !errors.As(res.Errors[0].Err, &fe) || fe.Deliveries != 2 || !strings.Contains(fe.Reason, "not acknowledged") {
		t.Errorf("first failure: %v", res.Errors[0])
	}
	spec := inProcess[float64](t, args, lv.Theta())
	want, _ := spec.Ensemble.Solve(context.Background(), spec.Method)
	for i := 0; i < 10; i++ {
		if res.U[i][0] != want.U[i][0] || res.U[i][1] != want.U[i][1] {
			t.Errorf("U[%d] = %v, want %v", i, res.U[i], want.U[i])
		}
	}
	t.Logf("given up after %v", rep.Elapsed.Round(time.Millisecond))
}
