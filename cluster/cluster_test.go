package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
)

func init() {
	// A name that serves solves only (no LossFor).
	cluster.Register("solveonly", func(args []byte, θ []float32) (*cluster.Spec[float64], error) {
		s, err := lv.Build[float64](args, θ)
		if err != nil {
			return nil, err
		}
		s.LossFor = nil
		return s, nil
	})
}

// A solve through JetStream by three workers equals the in-process solve
// bit for bit: outputs, Reduce sums, counters.
func TestSolveRoundTrip(t *testing.T) {
	url := startServer(t).ClientURL()
	for range 3 {
		goWorker(t, url, cluster.WorkerConfig{}, nil)
	}
	c := coordinator(t, url)
	args := lvArgs(t, lv.Args{N: 1000, Seed: 7, ShardSize: 16, Reduce: true})
	θ := lv.Theta()
	got, rep, err := cluster.Solve[float64](context.Background(), c, cluster.Request{Name: "lv", Args: args, Theta: θ, RelTol: 1e-8, AbsTol: 1e-10})
	spec := inProcess[float64](t, args, θ)
	want, werr := spec.Ensemble.Solve(context.Background(), spec.Method, solveOpts(spec.Options, ode.Tol(1e-8, 1e-10))...)
	sameErr(t, "solve", err, werr)
	sameSolve(t, "solve", got, want)
	if rep.Completed != rep.Shards || rep.Shards != 63 || rep.DuplicatesDropped != 0 || rep.Failed != 0 || rep.Workers != 3 {
		t.Errorf("report %+v", rep)
	}
}

// float32 state, Reduce only (DropOutputs), and failing trajectories: the
// failures come back with their indices, messages and Retcode, as in-process.
func TestSolveFloat32ReduceAndFailures(t *testing.T) {
	url := startServer(t).ClientURL()
	for range 2 {
		goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv32"}}, nil)
	}
	c := coordinator(t, url)
	for _, a := range []lv.Args{
		{N: 300, Seed: 3, ShardSize: 32, Reduce: true, DropOutputs: true},
		{N: 300, Seed: 3, ShardSize: 32, FailEvery: 37},
		{N: 200, Seed: 5, ShardSize: 10, MaxSteps: 20}, // every trajectory: max steps
	} {
		args := lvArgs(t, a)
		got, _, err := cluster.Solve[float32](context.Background(), c, cluster.Request{Name: "lv32", Args: args, Theta: lv.Theta()})
		spec := inProcess[float32](t, args, lv.Theta())
		want, werr := spec.Ensemble.Solve(context.Background(), spec.Method, solveOpts(spec.Options)...)
		sameErr(t, string(args), err, werr)
		if got == nil {
			t.Fatalf("%s: no result: %v", args, err)
		}
		sameSolve(t, string(args), got, want)
		if got.Stats.Retcode != want.Stats.Retcode {
			t.Errorf("%s: Retcode %v, want %v", args, got.Stats.Retcode, want.Stats.Retcode)
		}
		var ee *ode.EnsembleError
		if a.FailEvery > 0 && (!errors.As(err, &ee) || len(ee.Errors) != 300/37) {
			t.Errorf("%s: error %v, want an EnsembleError of %d", args, err, 300/37)
		}
		var oe *ode.Error
		if a.MaxSteps > 0 && (len(got.Errors) != a.N || !errors.As(got.Errors[0].Err, &oe) || oe.Code != ode.MaxStepsReached) {
			t.Errorf("%s: errors %v, want max steps", args, got.Errors[:1])
		}
	}
}

// An ensemble gradient through JetStream equals Ensemble.Gradient bit for
// bit: all trajectories, and a minibatch with repeats and per-trajectory
// dL/du0, with failing trajectories left out as in-process.
func TestGradientRoundTrip(t *testing.T) {
	url := startServer(t).ClientURL()
	for range 3 {
		goWorker(t, url, cluster.WorkerConfig{}, nil)
	}
	c := coordinator(t, url)
	ctx := context.Background()
	θ := lv.Theta()
	for _, tc := range []struct {
		a     lv.Args
		idx   []int
		perU0 bool
	}{
		{a: lv.Args{N: 200, Seed: 7, ShardSize: 16}},
		{a: lv.Args{N: 100, Seed: 9, ShardSize: 7, FailEvery: 13}, idx: []int{5, 12, 12, 99, 0, 25, 38, 3, 3, 3, 64, 77, 51}, perU0: true},
	} {
		args := lvArgs(t, tc.a)
		req := cluster.Request{Name: "lv", Args: args, Theta: θ, RelTol: 1e-7, AbsTol: 1e-9, Indices: tc.idx, PerTrajectoryU0: tc.perU0}
		got, rep, err := cluster.Gradient[float64](ctx, c, req)
		spec := inProcess[float64](t, args, θ)
		opts := gradOpts(spec.Options, ode.Tol(1e-7, 1e-9))
		if tc.idx != nil {
			opts = append(opts, ode.Indices(tc.idx...))
		}
		if tc.perU0 {
			opts = append(opts, ode.PerTrajectoryU0())
		}
		want, werr := spec.Ensemble.Gradient(ctx, spec.Method, spec.LossFor, spec.Sensitivity, opts...)
		sameErr(t, string(args), err, werr)
		if got == nil {
			t.Fatalf("%s: no result: %v", args, err)
		}
		sameGrad(t, string(args), got, want)
		if rep.Completed != rep.Shards {
			t.Errorf("report %+v", rep)
		}
	}
	// float32.
	args := lvArgs(t, lv.Args{N: 50, Seed: 1, ShardSize: 8})
	got, _, err := cluster.Gradient[float32](ctx, c, cluster.Request{Name: "lv32", Args: args, Theta: θ})
	spec := inProcess[float32](t, args, θ)
	want, werr := spec.Ensemble.Gradient(ctx, spec.Method, spec.LossFor, spec.Sensitivity, gradOpts(spec.Options)...)
	sameErr(t, "float32", err, werr)
	sameGrad(t, "float32", got, want)
}

// A θ that does not hash to what the shards name is refused by every
// worker; after MaxDeliver deliveries each shard is reported as failed
// trajectories, with the reason.
func TestThetaHashRefused(t *testing.T) {
	url := startServer(t).ClientURL()
	w, _ := goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv"}, Concurrency: 2}, nil)
	c := coordinator(t, url)
	cluster.CorruptTheta(c)
	args := lvArgs(t, lv.Args{N: 20, ShardSize: 10})
	res, rep, err := cluster.Solve[float64](context.Background(), c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
	var ee *ode.EnsembleError
	if !errors.As(err, &ee) || len(res.Errors) != 20 || rep.Failed != 2 {
		t.Fatalf("got %v, report %+v; want all 20 trajectories failed", err, rep)
	}
	var fe *cluster.ShardFailedError
	if !errors.As(res.Errors[13].Err, &fe) || fe.Number != 1 || res.Errors[13].Index != 13 || !strings.Contains(fe.Reason, "refused: θ") || fe.Deliveries != testConfig.MaxDeliver {
		t.Errorf("trajectory 13: %v", res.Errors[13])
	}
	want := func(st cluster.WorkerStats) bool {
		return st.Failed == 2 && st.Retried == int64(2*(testConfig.MaxDeliver-1))
	}
	if st := settledStats(w, want); !want(st) {
		t.Errorf("worker stats %+v", st)
	}
}

// settledStats returns w's stats once done holds, or after 10 s: counters
// move when the server acknowledges a publication, not when the
// coordinator sees it.
func settledStats(w *cluster.Worker, done func(cluster.WorkerStats) bool) cluster.WorkerStats {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := w.Stats()
		if done(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without a worker for the name, the request fails at once with a
// NoWorkerError; names not registered here, precision mismatches, and a
// gradient of a solves-only name are refused before anything is sent.
func TestRequestErrors(t *testing.T) {
	url := startServer(t).ClientURL()
	c := coordinator(t, url)
	ctx := context.Background()
	args := lvArgs(t, lv.Args{N: 10})
	_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
	var nw *cluster.NoWorkerError
	if !errors.As(err, &nw) || nw.Name != "lv" {
		t.Errorf("no worker: %v", err)
	}
	goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv"}}, nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{func() error {
			_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "nope", Args: args})
			return err
		}(), `"nope" is not registered`},
		{func() error {
			_, _, err := cluster.Solve[float32](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
			return err
		}(), "registered for float64, asked for float32"},
		{func() error {
			_, _, err := cluster.Gradient[float64](ctx, c, cluster.Request{Name: "solveonly", Args: args, Theta: lv.Theta()})
			return err
		}(), "solves only"},
		{func() error {
			_, _, err := cluster.Gradient[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(), Indices: []int{3, 10}})
			return err
		}(), "Indices[1] = 10"},
		{func() error {
			_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: []byte("{"), Theta: lv.Theta()})
			return err
		}(), "lv: arguments"},
		{func() error {
			_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(), RelTol: -1, AbsTol: 1})
			return err
		}(), "Tol(-1, 1)"},
		{func() error {
			big := lvArgs(t, lv.Args{N: cluster.MaxValues, ShardSize: cluster.MaxValues})
			_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: big, Theta: lv.Theta()})
			return err
		}(), "more than MaxValues"},
		{func() error {
			_, _, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv.x", Args: args})
			return err
		}(), `Request.Name "lv.x"`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want an error with %q", tc.err, tc.want)
		}
	}
}

// Cancellation and deadlines end a request with the context's error, and
// the workers stop computing its shards (the request's messages and
// objects are removed).
func TestCancelAndDeadline(t *testing.T) {
	url := startServer(t).ClientURL()
	slow := &cluster.Hooks{BeforeCompute: func(int) { time.Sleep(50 * time.Millisecond) }}
	w, _ := goWorker(t, url, cluster.WorkerConfig{Names: []string{"lv"}}, slow)
	c := coordinator(t, url)
	args := lvArgs(t, lv.Args{N: 2000, ShardSize: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, rep, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
	// No time bound (CI machines vary): a request that ignored its
	// deadline would end without its error and with every shard done.
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v after %v", err, time.Since(start))
	}
	if rep.Completed == rep.Shards {
		t.Errorf("report %+v: want the request cut short, not every shard done", rep)
	}
	// The rest of the request's shards are gone: the worker does no more.
	time.Sleep(300 * time.Millisecond)
	n := w.Stats().Shards
	time.Sleep(500 * time.Millisecond)
	if m := w.Stats().Shards; m != n {
		t.Errorf("the worker went on with the cancelled request: %d shards, then %d", n, m)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel2() }()
	if _, _, err := cluster.Gradient[float64](ctx2, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}
