package cluster

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// coordStats counts what a coordinator did, over all its requests.
type coordStats struct {
	done, failed, redelivered, dups, invalid atomic.Int64
	putBytes, getBytes                       atomic.Int64
}

// shardBuckets are the bounds of the shard latency histogram (seconds).
var shardBuckets = prometheus.ExponentialBuckets(0.001, 4, 10) // 1 ms … 4.4 min

func counter(name, help string, v *atomic.Int64, labels prometheus.Labels) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "flatkit", Name: name, Help: help, ConstLabels: labels},
		func() float64 { return float64(v.Load()) })
}

func register(reg prometheus.Registerer, cs []prometheus.Collector) error {
	var errs error
	for _, c := range cs {
		errs = errors.Join(errs, reg.Register(c))
	}
	return errs
}

// RegisterMetrics registers the worker's counters with reg, under the
// names flatkit_worker_*: shards done, failed, retried, refused and
// redelivered, results the server dropped as duplicates, bytes through
// the object store (op="get": θ; op="put": stored results) and the
// histogram of a shard's computing time. The counters are read at each
// scrape. Call it before Run; a worker registers once per registry.
func (w *Worker) RegisterMetrics(reg prometheus.Registerer) error {
	id := prometheus.Labels{"worker": w.cfg.ID}
	with := func(op string) prometheus.Labels { return prometheus.Labels{"worker": w.cfg.ID, "op": op} }
	w.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "flatkit", Name: "worker_shard_seconds",
		Help: "Time to compute one shard.", Buckets: shardBuckets, ConstLabels: id})
	return register(reg, []prometheus.Collector{
		w.latency,
		counter("worker_shards_total", "Shard results published.", &w.shards, id),
		counter("worker_shards_failed_total", "Shards given up after their last delivery.", &w.failed, id),
		counter("worker_shards_retried_total", "Deliveries that failed and were handed back.", &w.retried, id),
		counter("worker_shards_refused_total", "Deliveries refused: malformed, or of a finished request.", &w.refused, id),
		counter("worker_shards_redelivered_total", "Deliveries received that were not a shard's first.", &w.redelivered, id),
		counter("worker_duplicates_total", "Results the server dropped as duplicates.", &w.dups, id),
		counter("worker_object_bytes_total", "Bytes read from the object store.", &w.thetaBytes, with("get")),
		counter("worker_object_bytes_total", "Bytes read from the object store.", &w.putBytes, with("put")),
	})
}

// RegisterMetrics registers the coordinator's counters, over all its
// requests, with reg, under the names flatkit_coordinator_*: shards done
// (their result used), failed (given up), redelivered (their result came
// from a redelivery), duplicates dropped, invalid results, and bytes
// through the object store (op="put": θ; op="get": stored results).
func (c *Coordinator) RegisterMetrics(reg prometheus.Registerer) error {
	s := &c.stats
	with := func(op string) prometheus.Labels { return prometheus.Labels{"op": op} }
	return register(reg, []prometheus.Collector{
		counter("coordinator_shards_total", "Shards whose result was used.", &s.done, nil),
		counter("coordinator_shards_failed_total", "Shards given up, reported as failed trajectories.", &s.failed, nil),
		counter("coordinator_shards_redelivered_total", "Shards whose result came from a redelivery.", &s.redelivered, nil),
		counter("coordinator_duplicates_dropped_total", "Results dropped because their shard was done.", &s.dups, nil),
		counter("coordinator_invalid_total", "Results refused.", &s.invalid, nil),
		counter("coordinator_object_bytes_total", "Bytes through the object store.", &s.putBytes, with("put")),
		counter("coordinator_object_bytes_total", "Bytes through the object store.", &s.getBytes, with("get")),
	})
}
