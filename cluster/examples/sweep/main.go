package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
)

// resumeID is -id: resume that request, left by an interrupted sweep on
// the same -nats server.
var resumeID = flag.String("id", "", "resume the request of this id (with -nats; printed when a sweep starts)")

func main() {
	url := flag.String("nats", "", "NATS server URL (default: start an embedded server and in-process workers)")
	n := flag.Int("n", 100000, "trajectories")
	shard := flag.Int("shard", 1024, "trajectories per shard")
	workers := flag.Int("workers", 2, "in-process workers (without -nats)")
	seed := flag.Uint64("seed", 1, "master seed")
	check := flag.Bool("check", false, "also run the sweep in-process and compare the sums bit for bit")
	flag.Parse()
	if err := run(*url, *n, *shard, *workers, *seed, *check); err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

// checkFlags refuses the flag values that would run nothing or run
// otherwise than asked: no trajectories (the mean would be NaN), a shard
// size the ensemble would replace by its default, no workers.
func checkFlags(url string, n, shard, workers int) error {
	switch {
	case n < 1:
		return fmt.Errorf("-n %d: want at least 1 trajectory", n)
	case shard < 1:
		return fmt.Errorf("-shard %d: want at least 1 trajectory per shard", shard)
	case url == "" && workers < 1:
		return fmt.Errorf("-workers %d: want at least 1 in-process worker (or -nats with workers of its own)", workers)
	}
	return nil
}

// connect connects to the NATS server at url; its error names the URL.
func connect(url string) (*nats.Conn, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("connecting to the NATS server at %s: %w", url, err)
	}
	return nc, nil
}

func run(url string, n, shard, workers int, seed uint64, check bool) error {
	if err := checkFlags(url, n, shard, workers); err != nil {
		return err
	}
	lv.Register()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := cluster.Config{}
	if url == "" {
		srv, shutdown, err := embedded.StartTemp("flatkit-sweep")
		if err != nil {
			return err
		}
		defer shutdown()
		url = srv.ClientURL()
		cfg.Memory = true
		for i := range workers {
			nc, err := connect(url)
			if err != nil {
				return err
			}
			defer nc.Close()
			w, err := cluster.NewWorker(nc, cluster.WorkerConfig{Config: cfg, Names: []string{"lv"}, Concurrency: 1, ID: fmt.Sprintf("local-%d", i)})
			if err != nil {
				return err
			}
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(wctx) }()
			defer func() { cancel(); <-done }()
			select {
			case <-w.Ready():
			case err := <-done:
				return err
			}
		}
		fmt.Printf("embedded NATS server at %s, %d in-process workers\n", url, workers)
	}
	nc, err := connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	coord, err := cluster.NewCoordinator(ctx, nc, cfg)
	if err != nil {
		return err
	}
	args, _ := json.Marshal(lv.Args{N: n, Seed: seed, ShardSize: shard, Reduce: true, DropOutputs: true})
	last := time.Time{}
	req := cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(), Progress: func(p cluster.Progress) {
		if time.Since(last) < 500*time.Millisecond && p.Done != p.Total {
			return
		}
		last = time.Now()
		fmt.Printf("\r%d/%d shards, %d trajectories, %.0f trajectories/s   ", p.Done, p.Total, p.Trajectories, float64(p.Trajectories)/p.Elapsed.Seconds())
	}}
	if !cfg.Memory { // a server that outlives this process: the request can be resumed
		req.ID, req.Resume = *resumeID, *resumeID != ""
		if req.ID == "" {
			req.ID = cluster.NewRequestID()
		}
		fmt.Printf("request %s (if interrupted, resume it with -id %s)\n", req.ID, req.ID)
	}
	res, rep, err := cluster.Solve[float64](ctx, coord, req)
	fmt.Println()
	if err != nil {
		return err
	}
	if req.Resume {
		fmt.Printf("resumed: %d of %d shards found done\n", rep.Resumed, rep.Shards)
	}
	m0, m1 := res.Acc[0]/float64(n), res.Acc[1]/float64(n)
	s0, s1 := math.Sqrt(max(res.Acc[2]/float64(n)-m0*m0, 0)), math.Sqrt(max(res.Acc[3]/float64(n)-m1*m1, 0))
	fmt.Printf("%d trajectories in %v on %d workers (%d shards, %d redelivered, %d duplicates dropped, %d failed)\n",
		n, rep.Elapsed.Round(time.Millisecond), rep.Workers, rep.Shards, rep.Redelivered, rep.DuplicatesDropped, rep.Failed)
	fmt.Printf("final prey %.6f ± %.6f, predators %.6f ± %.6f; %d steps, %d f evaluations\n", m0, s0, m1, s1, res.Stats.Accepted, res.Stats.FEvals)
	if check {
		spec, err := lv.Build[float64](args, lv.Theta())
		if err != nil {
			return err
		}
		t0 := time.Now()
		want, err := spec.Ensemble.Solve(ctx, ode.Tsit5())
		if err != nil {
			return err
		}
		for k := range want.Acc {
			if math.Float64bits(want.Acc[k]) != math.Float64bits(res.Acc[k]) {
				return fmt.Errorf("Acc[%d] = %v on the cluster, %v in-process", k, res.Acc[k], want.Acc[k])
			}
		}
		fmt.Printf("in-process: the same sums bit for bit (%v)\n", time.Since(t0).Round(time.Millisecond))
	}
	return nil
}
