package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
)

// A durable request whose call is cancelled stays in the store; its
// queued shards dropped (as if its coordinator had died before publishing
// them), a resume publishes them and returns the in-process answer. Once
// it finished, nothing of it is left, and a resume says it expired or
// finished. A request left alone past its retention is removed by the next
// request's sweep, and a resume of it says it expired.
func TestResumeMissingAndExpired(t *testing.T) {
	url := startServer(t).ClientURL()
	cfg := cluster.Config{AckWait: 2 * time.Second, MaxDeliver: 5, LeaseTTL: 300 * time.Millisecond, Retention: time.Second}
	slow := &cluster.Hooks{BeforeCompute: func(int) { time.Sleep(20 * time.Millisecond) }}
	w, _ := goWorker(t, url, cluster.WorkerConfig{Config: cfg, Names: []string{"lv"}}, slow)
	c, err := cluster.NewCoordinator(context.Background(), connect(t, url), cfg)
	if err != nil {
		t.Fatal(err)
	}
	args := lvArgs(t, lv.Args{N: 200, Seed: 5, ShardSize: 10})
	θ := lv.Theta()
	bg := context.Background()

	id := cluster.NewRequestID()
	ctx, cancel := context.WithCancel(bg)
	req := cluster.Request{Name: "lv", Args: args, Theta: θ, ID: id, Progress: func(p cluster.Progress) {
		if p.Done == 5 {
			cancel()
		}
	}}
	if _, _, err := cluster.Solve[float64](ctx, c, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := cluster.DropQueuedShards(bg, c, id); err != nil {
		t.Fatal(err)
	}
	req.Progress, req.Resume = nil, true
	got, rep, err := cluster.Solve[float64](bg, c, req)
	if err != nil {
		t.Fatal(err)
	}
	spec := inProcess[float64](t, args, θ)
	want, _ := spec.Ensemble.Solve(bg, spec.Method, solveOpts(spec.Options)...)
	sameSolve(t, "resumed after its shards were lost", got, want)
	if rep.Resumed < 5 || rep.Resumed == rep.Shards || rep.Completed != rep.Shards {
		t.Errorf("report %+v: want ≥ 5 shards found done, some published again, all completed", rep)
	}
	if n, err := cluster.ObjectStoreMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the request the object store holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.ResultMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the request the results stream holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.LeaseMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the request the lease bucket holds %d messages (%v), want 0", n, err)
	}
	var ee *cluster.ExpiredError
	if _, _, err := cluster.Solve[float64](bg, c, req); !errors.As(err, &ee) || ee.Request != id {
		t.Errorf("resume of a finished request: %v, want an *ExpiredError naming it", err)
	}

	// A stored result a worker leaves in the instant its request ended is
	// removed by the sweep.
	if err := cluster.LeaveStoredResult(bg, c, id); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Sweep(bg); n != 1 || err != nil {
		t.Errorf("sweep of a leftover: %d requests removed (%v), want 1", n, err)
	}
	if n, err := cluster.ObjectStoreMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the sweep the object store holds %d messages (%v), want 0", n, err)
	}

	// Expiry.
	id2 := cluster.NewRequestID()
	ctx, cancel = context.WithCancel(bg)
	req = cluster.Request{Name: "lv", Args: args, Theta: θ, ID: id2, Progress: func(p cluster.Progress) {
		if p.Done == 3 {
			cancel()
		}
	}}
	if _, _, err := cluster.Solve[float64](ctx, c, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	time.Sleep(cfg.Retention + 200*time.Millisecond)
	req.Progress, req.Resume = nil, true
	_, _, err = cluster.Solve[float64](bg, c, req)
	if !errors.As(err, &ee) || ee.Request != id2 || ee.At.IsZero() || !strings.Contains(err.Error(), "expired at") {
		t.Errorf("resume of an expired request: %v, want an *ExpiredError saying when it expired", err)
	}
	// That call swept it.
	if n, err := cluster.ObjectStoreMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the expiry the object store holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.ResultMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the expiry the results stream holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.LeaseMessages(bg, c); err != nil || n != 0 {
		t.Errorf("after the expiry the lease bucket holds %d messages (%v), want 0", n, err)
	}
	t.Logf("resumed %d of %d shards found done; worker %+v", rep.Resumed, rep.Shards, w.Stats())
}
