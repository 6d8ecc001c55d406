package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/nats-io/nats.go"
)

// shardsDone scrapes flatkit_worker_shards_total from url, as curl would;
// ok is false while nothing answers.
func shardsDone(url string) (v float64, ok bool) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "flatkit_worker_shards_total{") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// flatkit-worker -metrics serves the worker's counters; a scrape during a
// request and one after it show them moving.
func TestMetricsFlag(t *testing.T) {
	lv.Register()
	srv, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"-nats", srv.ClientURL(), "-names", "lv", "-concurrency", "1", "-quiet", "-metrics", addr})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	url := "http://" + addr + "/metrics"
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := shardsDone(url); ok {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("nothing serves %s", url)
		}
	}

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := cluster.NewCoordinator(ctx, nc, cluster.Config{})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(lv.Args{N: 2000, Seed: 1, ShardSize: 100})
	var mid float64
	_, rep, err := cluster.Solve[float64](ctx, c, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta(), Progress: func(p cluster.Progress) {
		// The worker counts a shard after publishing its result, so at
		// two results its counter is at least 1 (one shard at a time).
		if p.Done == 2 {
			mid, _ = shardsDone(url)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := shardsDone(url)
	for start := time.Now(); end < float64(rep.Shards) && time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		end, _ = shardsDone(url)
	}
	if mid < 1 || mid >= end || end != float64(rep.Shards) {
		t.Errorf("flatkit_worker_shards_total: %v after the second shard, %v at the end; want it moving from ≥ 1 to %d", mid, end, rep.Shards)
	}
}
