package cluster_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrape reads the sum of the samples of metric (all label sets) from a
// Prometheus text endpoint, as curl would.
func scrape(t *testing.T, url, metric string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		name, _, _ := strings.Cut(l, " ")
		if n, _, ok := strings.Cut(name, "{"); ok {
			name = n
		}
		if name != metric {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %q", metric, l)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("no %s in the scrape of %s", metric, url)
	}
	return sum
}

// A worker's and a coordinator's metrics, scraped over HTTP during a
// request and after it, move with the shards.
func TestMetricsScrape(t *testing.T) {
	url := startServer(t).ClientURL()
	wreg := prometheus.NewRegistry()
	nc := connect(t, url)
	w, err := cluster.NewWorker(nc, cluster.WorkerConfig{Config: testConfig, Names: []string{"lv"}, Concurrency: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterMetrics(wreg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-w.Ready()
	wsrv := httptest.NewServer(promhttp.HandlerFor(wreg, promhttp.HandlerOpts{}))
	defer wsrv.Close()

	c := coordinator(t, url)
	creg := prometheus.NewRegistry()
	if err := c.RegisterMetrics(creg); err != nil {
		t.Fatal(err)
	}
	csrv := httptest.NewServer(promhttp.HandlerFor(creg, promhttp.HandlerOpts{}))
	defer csrv.Close()

	var mid, midC float64
	args := lvArgs(t, lv.Args{N: 200, Seed: 3, ShardSize: 10})
	_, rep, err := cluster.Solve[float64](context.Background(), c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(),
		Progress: func(p cluster.Progress) {
			if p.Done == 5 {
				mid = scrape(t, wsrv.URL, "flatkit_worker_shards_total")
				midC = scrape(t, csrv.URL, "flatkit_coordinator_shards_total")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	// A worker counts a shard after publishing its result, so its counter
	// may lag the coordinator's by the shard in hand: wait for it.
	end := scrape(t, wsrv.URL, "flatkit_worker_shards_total")
	for start := time.Now(); end < float64(rep.Shards) && time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		end = scrape(t, wsrv.URL, "flatkit_worker_shards_total")
	}
	endC := scrape(t, csrv.URL, "flatkit_coordinator_shards_total")
	hist := scrape(t, wsrv.URL, "flatkit_worker_shard_seconds_count")
	get := scrape(t, wsrv.URL, "flatkit_worker_object_bytes_total")
	put := scrape(t, csrv.URL, "flatkit_coordinator_object_bytes_total")
	if mid < 4 || mid >= end || end != float64(rep.Shards) || midC != 5 || endC != float64(rep.Shards) {
		t.Errorf("shards: worker %v during the run, %v after; coordinator %v, %v; want them moving up to %d", mid, end, midC, endC, rep.Shards)
	}
	if hist != float64(rep.Shards) || get != 16 || put != 16 {
		t.Errorf("latency observations %v, want %d; θ bytes read by the worker %v, stored by the coordinator %v, want 16", hist, rep.Shards, get, put)
	}
}
