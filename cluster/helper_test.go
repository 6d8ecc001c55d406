package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/nats-io/nats.go"
)

// The test binary doubles as a worker process: with helperEnv set, TestMain
// runs helperWorker instead of the tests.
const (
	helperEnv      = "FLATKIT_CLUSTER_HELPER_NATS"
	helperIDEnv    = "FLATKIT_CLUSTER_HELPER_ID"
	helperFaultEnv = "FLATKIT_CLUSTER_HELPER_FAULTS"
)

// helperWorker serves "lv" with the faults of helperFaultEnv, a
// comma-separated list of
//
//	delay=D   sleep D before every shard
//	hang=K    on the K-th shard it takes (from 1), print "hang SHARD" and
//	          sleep (while sending in-progress acks) until killed
//	dup=K     publish the K-th shard's result twice more: once with the same
//	          Nats-Msg-Id (the server drops it), once with another (the
//	          coordinator's table drops it); print "dup SHARD"
//
// It prints "ready" once it serves, "done SHARD" after each result, and on
// SIGTERM "stats JSON" before exiting.
func helperWorker(url string) int {
	var delay time.Duration
	hang, dup := -1, -1
	for _, f := range strings.Split(os.Getenv(helperFaultEnv), ",") {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "":
		case "delay":
			delay, err = time.ParseDuration(v)
		case "hang":
			hang, err = strconv.Atoi(v)
		case "dup":
			dup, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown fault %q", f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
	}
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	defer nc.Close()
	w, err := cluster.NewWorker(nc, cluster.WorkerConfig{Config: testConfig, Names: []string{"lv"}, Concurrency: 1, ID: os.Getenv(helperIDEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	var taken atomic.Int64
	cluster.SetHooks(w, cluster.Hooks{
		BeforeCompute: func(shard int) {
			n := taken.Add(1)
			time.Sleep(delay)
			if int(n) == hang {
				say("hang %d", shard)
				select {} // until killed; the worker's keep-alive goes on
			}
		},
		AfterPublish: func(shard int, msgID string, republish func(string) error) bool {
			if int(taken.Load()) == dup {
				republish(msgID)
				republish(msgID + ".again")
				say("dup %d", shard)
			}
			say("done %d", shard)
			return true
		},
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-w.Ready()
		say("ready")
	}()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	b, _ := json.Marshal(w.Stats())
	say("stats %s", b)
	return 0
}

// proc is a worker process started from the test binary.
type proc struct {
	id    string
	cmd   *exec.Cmd
	lines chan string
	stats chan cluster.WorkerStats
	done  chan struct{}
}

// startHelper starts the test binary with env added, as a helper process
// killed at the end of the test, and returns its standard output.
func startHelper(t *testing.T, env ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, out
}

func startProc(t *testing.T, url, id, faults string) *proc {
	t.Helper()
	cmd, out := startHelper(t, helperEnv+"="+url, helperIDEnv+"="+id, helperFaultEnv+"="+faults)
	p := &proc{id: id, cmd: cmd, lines: make(chan string, 1024), stats: make(chan cluster.WorkerStats, 1), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "ready":
				close(ready)
			case strings.HasPrefix(l, "stats "):
				var s cluster.WorkerStats
				json.Unmarshal([]byte(l[6:]), &s)
				p.stats <- s
			default:
				select {
				case p.lines <- l:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("worker process %s not ready after 20 s", id)
	}
	return p
}

// stop ends the process gracefully and returns its counters.
func (p *proc) stop(t *testing.T) cluster.WorkerStats {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case s := <-p.stats:
		p.cmd.Wait()
		return s
	case <-time.After(20 * time.Second):
		t.Errorf("worker process %s did not stop", p.id)
		return cluster.WorkerStats{}
	}
}

// wait returns the first line with prefix, or fails after d.
func (p *proc) wait(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("worker process %s: no %q line after %v", p.id, prefix, d)
			return ""
		}
	}
}
