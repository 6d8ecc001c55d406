package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
)

// With helperCoordEnv set to a server's URL, the test binary is a
// coordinator process: it runs the request of helperCoordKind ("solve" or
// "gradient"), helperCoordArgs (lv's JSON) and helperCoordID, with
// lv.Theta(), and prints "progress DONE SHARD" after each shard.
const (
	helperCoordEnv  = "FLATKIT_CLUSTER_HELPER_COORD"
	helperCoordKind = "FLATKIT_CLUSTER_HELPER_COORD_KIND"
	helperCoordArgs = "FLATKIT_CLUSTER_HELPER_COORD_ARGS"
	helperCoordID   = "FLATKIT_CLUSTER_HELPER_COORD_ID"
)

func helperCoordinator(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper coordinator:", err)
		return 1
	}
	defer nc.Close()
	ctx := context.Background()
	c, err := cluster.NewCoordinator(ctx, nc, testConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper coordinator:", err)
		return 1
	}
	var mu sync.Mutex
	req := cluster.Request{Name: "lv", Args: []byte(os.Getenv(helperCoordArgs)), Theta: lv.Theta(), ID: os.Getenv(helperCoordID),
		Progress: func(p cluster.Progress) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Printf("progress %d %d\n", p.Done, p.Shard)
		}}
	switch os.Getenv(helperCoordKind) {
	case "solve":
		_, _, err = cluster.Solve[float64](ctx, c, req)
	case "gradient":
		req.PerTrajectoryU0 = true
		_, _, err = cluster.Gradient[float64](ctx, c, req)
	default:
		err = errors.New("unknown kind")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper coordinator:", err)
		return 1
	}
	fmt.Println("finished")
	return 0
}

// resumeRun is a 1000-trajectory request of 63 shards computed by three
// worker processes, whose coordinator, a process too, is killed (SIGKILL)
// once about half the shards are done. While it runs, a second coordinator
// on the request is refused. Then a coordinator here resumes the request
// with its id; its answer must equal the in-process one bit for bit.
func resumeRun(t *testing.T, kind string, args []byte, resume func(ctx context.Context, c *cluster.Coordinator, req cluster.Request) (cluster.Report, error)) {
	url := startServer(t).ClientURL()
	var workers []*proc
	for _, id := range []string{"A", "B", "C"} {
		workers = append(workers, startProc(t, url, id, "delay=40ms"))
	}
	id := cluster.NewRequestID()
	cmd, out := startHelper(t, helperCoordEnv+"="+url, helperCoordKind+"="+kind, helperCoordArgs+"="+string(args), helperCoordID+"="+id)

	c := coordinator(t, url)
	req := cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(), ID: id, Resume: true, PerTrajectoryU0: kind == "gradient"}
	before := map[int]bool{} // shards the killed coordinator saw done
	sc := bufio.NewScanner(out)
	refused := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "progress" {
			t.Fatalf("coordinator process: %q", sc.Text())
		}
		done, _ := strconv.Atoi(f[1])
		shard, _ := strconv.Atoi(f[2])
		before[shard] = true
		if done == 8 && !refused {
			// A second coordinator on the running request is refused.
			_, err := resume(context.Background(), c, req)
			var be *cluster.BusyError
			if !errors.As(err, &be) || be.Request != id || !strings.Contains(err.Error(), id) {
				t.Errorf("a second coordinator on running request %s: %v, want a *BusyError naming it", id, err)
			}
			refused = true
		}
		if done >= 31 {
			break
		}
	}
	// The workers pause (SIGSTOP) across the kill, so that the resume
	// finds shards left to publish; they stay paused for less than
	// AckWait, so that the shards they hold are not delivered again.
	for _, w := range workers {
		w.cmd.Process.Signal(syscall.SIGSTOP)
	}
	cmd.Process.Kill() // SIGKILL: no cleanup, the lease is left to lapse
	cmd.Wait()
	t.Logf("coordinator process killed after %d shards", len(before))
	time.Sleep(testConfig.LeaseTTL + 200*time.Millisecond)
	for _, w := range workers {
		w.cmd.Process.Signal(syscall.SIGCONT)
	}

	// Resume once the dead coordinator's lease lapses.
	var rep cluster.Report
	var err error
	busy := 0
	for {
		rep, err = resume(context.Background(), c, req)
		var be *cluster.BusyError
		if !errors.As(err, &be) {
			break
		}
		busy++
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Request != id || rep.Completed != rep.Shards || rep.Failed != 0 || rep.DuplicatesDropped != 0 || rep.Republished != 0 {
		t.Errorf("report %+v: want request %s, every shard completed once", rep, id)
	}
	if rep.Resumed < len(before) || rep.Resumed == rep.Shards {
		t.Errorf("report %+v: %d shards found done at the resume, want ≥ %d (those done before the kill) and some left", rep, rep.Resumed, len(before))
	}

	// The workers' counters: a shard done before the kill was computed
	// once, and no more than the shards in flight at the kill (one a
	// worker) were computed twice.
	computed := map[int]int{}
	total := int64(0)
	for _, w := range workers {
		s := w.stop(t)
		t.Logf("worker %s: %+v", w.id, s)
		total += s.Shards
	drain:
		for {
			select {
			case l := <-w.lines:
				if k, ok := strings.CutPrefix(l, "done "); ok {
					n, _ := strconv.Atoi(k)
					computed[n]++
				}
			default:
				break drain
			}
		}
	}
	for j := range before {
		if computed[j] != 1 {
			t.Errorf("shard %d, done before the kill, was computed %d times", j, computed[j])
		}
	}
	// A shard may also show no count: its result was stored but the
	// publication's ack came back as an error to a worker just resumed
	// from its pause, and the request ended before the shard, handed
	// back, was delivered again. Its result is still the one used.
	twice, uncounted := 0, 0
	for j := 0; j < rep.Shards; j++ {
		switch n := computed[j]; {
		case n == 0:
			uncounted++
		case n > 1:
			twice++
		}
	}
	if twice > len(workers) || uncounted > len(workers) || int(total) != rep.Shards+twice-uncounted {
		t.Errorf("workers computed %d shards, %d of them twice and %d not counted; want %d shards, at most %d twice", total, twice, uncounted, rep.Shards, len(workers))
	}
	if uncounted > 0 {
		t.Logf("%d shards not counted by their workers (a publication whose ack was lost)", uncounted)
	}
	if n, err := cluster.ObjectStoreMessages(context.Background(), c); err != nil || n != 0 {
		t.Errorf("after the request the object store holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.ResultMessages(context.Background(), c); err != nil || n != 0 {
		t.Errorf("after the request the results stream holds %d messages (%v), want 0", n, err)
	}
	if n, err := cluster.LeaseMessages(context.Background(), c); err != nil || n != 0 {
		t.Errorf("after the request the lease bucket holds %d messages (%v), want 0", n, err)
	}
	t.Logf("refused %d times before the lease lapsed; resumed %d of %d shards found done, %d computed twice; elapsed %v",
		busy, rep.Resumed, rep.Shards, twice, rep.Elapsed.Round(time.Millisecond))
}

// TestResumeSolve: a 1000-trajectory Lotka-Volterra ensemble solve whose
// coordinator process is killed half-way, resumed by another with its id,
// equals the in-process solve bit for bit.
func TestResumeSolve(t *testing.T) {
	args := lvArgs(t, lv.Args{N: 1000, Seed: 21, ShardSize: 16, Reduce: true})
	var got *ode.EnsembleResult[float64]
	resumeRun(t, "solve", args, func(ctx context.Context, c *cluster.Coordinator, req cluster.Request) (cluster.Report, error) {
		res, rep, err := cluster.Solve[float64](ctx, c, req)
		if err == nil {
			got = res
		}
		return rep, err
	})
	spec := inProcess[float64](t, args, lv.Theta())
	want, err := spec.Ensemble.Solve(context.Background(), spec.Method, solveOpts(spec.Options)...)
	if err != nil {
		t.Fatal(err)
	}
	sameSolve(t, "resumed solve", got, want)
}

// TestResumeGradient: the same for an ensemble gradient with
// per-trajectory dL/du0.
func TestResumeGradient(t *testing.T) {
	args := lvArgs(t, lv.Args{N: 1000, Seed: 22, ShardSize: 16})
	var got *ode.EnsembleGradientResult[float64]
	resumeRun(t, "gradient", args, func(ctx context.Context, c *cluster.Coordinator, req cluster.Request) (cluster.Report, error) {
		res, rep, err := cluster.Gradient[float64](ctx, c, req)
		if err == nil {
			got = res
		}
		return rep, err
	})
	spec := inProcess[float64](t, args, lv.Theta())
	want, err := spec.Ensemble.Gradient(context.Background(), spec.Method, spec.LossFor, spec.Sensitivity, gradOpts(spec.Options, ode.PerTrajectoryU0())...)
	if err != nil {
		t.Fatal(err)
	}
	sameGrad(t, "resumed gradient", got, want)
}
