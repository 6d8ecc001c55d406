package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
)

// figure is one JSON line, as cmd/flatkit bench prints them.
type figure struct {
	Scenario string  `json:"scenario"`
	Case     string  `json:"case"`
	Median   float64 `json:"median"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Unit     string  `json:"unit"`
}

func emit(c string, unit string, xs []float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	b, _ := json.Marshal(figure{"cluster", c, s[len(s)/2], s[0], s[len(s)-1], unit})
	fmt.Println(string(b))
}

func ints(s string) ([]int, error) {
	var v []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad list %q, want integers ≥ 1 separated by commas", s)
		}
		v = append(v, n)
	}
	return v, nil
}

func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	n := fs.Int("n", 65536, "trajectories of the throughput runs")
	shard := fs.Int("shard", 256, "shard size of the throughput runs")
	workersList := fs.String("workers", "1,2,4", "worker processes of the throughput runs")
	shardsList := fs.String("shards", "16,256,4096", "shard sizes of the overhead runs")
	reps := fs.Int("reps", 3, "repetitions of each run")
	grad := fs.Int("grad", 4096, "trajectories of the gradient runs (0: none)")
	url := fs.String("nats", "", "an existing server (default: an embedded one)")
	fs.Parse(args)
	ws, err := ints(*workersList)
	if err != nil {
		return err
	}
	sizes, err := ints(*shardsList)
	if err != nil {
		return err
	}
	if *url == "" {
		srv, stop, err := embedded.StartTemp("flatkit-bench")
		if err != nil {
			return err
		}
		defer stop()
		*url = srv.ClientURL()
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx := context.Background()
	cfg := cluster.Config{Prefix: "flatkit_bench", Memory: true}
	coord, err := cluster.NewCoordinator(ctx, nc, cfg)
	if err != nil {
		return err
	}
	θ := lv.Theta()

	solveArgs := func(n, shard int) []byte {
		b, _ := json.Marshal(lv.Args{N: n, Seed: 1, ShardSize: shard, Reduce: true, DropOutputs: true})
		return b
	}
	inProcess := func(args []byte, workers int) (time.Duration, error) {
		s, err := lv.Build[float64](args, θ)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		_, err = s.Ensemble.Solve(ctx, ode.Tsit5(), append(ode.OptionsFor[ode.EnsembleSolveOption](s.Options), ode.Workers(workers))...)
		return time.Since(t0), err
	}
	onCluster := func(args []byte) (time.Duration, cluster.Report, error) {
		t0 := time.Now()
		_, rep, err := cluster.Solve[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: θ})
		return time.Since(t0), rep, err
	}

	// Throughput: in-process on 1 and 2 goroutines, then 1, 2, 4 worker
	// processes of one shard at a time each.
	sargs := solveArgs(*n, *shard)
	for _, w := range []int{1, 2} {
		var xs []float64
		for range *reps {
			d, err := inProcess(sargs, w)
			if err != nil {
				return err
			}
			xs = append(xs, float64(*n)/d.Seconds())
		}
		emit(fmt.Sprintf("solve N=%d shard=%d in-process Workers(%d)", *n, *shard, w), "traj/s", xs)
	}
	for _, w := range ws {
		procs, err := startWorkers(*url, cfg.Prefix, w)
		if err != nil {
			return err
		}
		var xs []float64
		var last cluster.Report
		for range *reps {
			d, rep, err := onCluster(sargs)
			if err != nil {
				stopWorkers(procs)
				return err
			}
			last = rep
			xs = append(xs, float64(*n)/d.Seconds())
		}
		emit(fmt.Sprintf("solve N=%d shard=%d cluster %d worker processes", *n, *shard, w), "traj/s", xs)
		fmt.Fprintf(os.Stderr, "  %d workers: last report %+v\n", w, last)
		if w == 2 && *grad > 0 {
			if err := benchGradient(ctx, coord, *grad, *reps); err != nil {
				stopWorkers(procs)
				return err
			}
		}
		stopWorkers(procs)
	}

	// Per-shard overhead: one worker process, one shard at a time, against
	// the in-process runner on one goroutine, for each shard size.
	procs, err := startWorkers(*url, cfg.Prefix, 1)
	if err != nil {
		return err
	}
	defer stopWorkers(procs)
	for _, s := range sizes {
		m := max(*n/s, 4) * s
		args := solveArgs(m, s)
		shards := m / s
		var in, cl, over []float64
		for range *reps {
			di, err := inProcess(args, 1)
			if err != nil {
				return err
			}
			dc, _, err := onCluster(args)
			if err != nil {
				return err
			}
			in = append(in, float64(di.Microseconds())/float64(shards))
			cl = append(cl, float64(dc.Microseconds())/float64(shards))
			over = append(over, float64(dc.Microseconds()-di.Microseconds())/float64(shards))
		}
		emit(fmt.Sprintf("shard=%d in-process time per shard (N=%d)", s, m), "us", in)
		emit(fmt.Sprintf("shard=%d cluster time per shard, 1 worker process (N=%d)", s, m), "us", cl)
		emit(fmt.Sprintf("shard=%d per-shard overhead of the cluster", s), "us", over)
	}
	return nil
}

func benchGradient(ctx context.Context, coord *cluster.Coordinator, n, reps int) error {
	args, _ := json.Marshal(lv.Args{N: n, Seed: 2, ShardSize: 64})
	θ := lv.Theta()
	s, err := lv.Build[float64](args, θ)
	if err != nil {
		return err
	}
	var in, cl []float64
	for range reps {
		t0 := time.Now()
		if _, err := s.Ensemble.Gradient(ctx, ode.Tsit5(), s.LossFor, ode.InterpolatingAdjoint{}, ode.Workers(2)); err != nil {
			return err
		}
		in = append(in, float64(n)/time.Since(t0).Seconds())
		t0 = time.Now()
		if _, _, err := cluster.Gradient[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: θ}); err != nil {
			return err
		}
		cl = append(cl, float64(n)/time.Since(t0).Seconds())
	}
	emit(fmt.Sprintf("gradient N=%d shard=64 in-process Workers(2)", n), "traj/s", in)
	emit(fmt.Sprintf("gradient N=%d shard=64 cluster 2 worker processes", n), "traj/s", cl)
	return nil
}

type workerProc struct {
	cmd *exec.Cmd
}

// startWorkers starts k worker processes of this binary (one shard at a
// time each) and waits until they serve.
func startWorkers(url, prefix string, k int) ([]*workerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var ps []*workerProc
	for i := range k {
		cmd := exec.Command(exe, "-nats", url, "-prefix", prefix, "-concurrency", "1", "-quiet", "-names", "lv", "-id", fmt.Sprintf("bench-%d", i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return ps, err
		}
		if err := cmd.Start(); err != nil {
			return ps, err
		}
		ps = append(ps, &workerProc{cmd: cmd})
		ready := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() == "ready" {
					close(ready)
				}
			}
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			stopWorkers(ps)
			return nil, fmt.Errorf("worker process %d not ready after 30 s", i)
		}
	}
	return ps, nil
}

func stopWorkers(ps []*workerProc) {
	for _, p := range ps {
		p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range ps {
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
		}
	}
}
