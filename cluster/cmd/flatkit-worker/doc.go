// Command flatkit-worker serves on NATS JetStream the registered ensembles
// of package lv, "lv" and "lv32", and of package neural, "node":
//
//	go run ./cluster/cmd/flatkit-worker -nats nats://host:4222
//
// It pulls shards, computes them with the in-process runner, publishes their
// partial results and acks them, until interrupted. A worker binary of your
// own registers your ensembles with cluster.Register and runs a
// cluster.Worker the same way: this file is the template. With
// -metrics host:port it serves the worker's Prometheus metrics
// (Worker.RegisterMetrics) on http://host:port/metrics.
//
//	go run ./cluster/cmd/flatkit-worker bench [-n 65536] [-workers 1,2,4] [-shards 16,256,4096]
//
// measures the cluster on this machine. It starts an embedded server and
// worker processes of this binary. It prints the throughput against the
// in-process runner, and the per-shard overhead, one JSON line per figure.
package main
