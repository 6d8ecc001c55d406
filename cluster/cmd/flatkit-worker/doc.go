// Command flatkit-worker serves the registered ensembles of packages lv
// ("lv", "lv32") and neural ("node") on NATS JetStream:
//
//	go run ./cluster/cmd/flatkit-worker -nats nats://host:4222
//
// It pulls shards, computes them with the in-process runner, publishes their
// partial results and acks them, until interrupted. A worker binary of your
// own registers your ensembles (cluster.Register) and runs a cluster.Worker
// the same way: this file is the template.
//
//	go run ./cluster/cmd/flatkit-worker bench [-n 65536] [-workers 1,2,4] [-shards 16,256,4096]
//
// measures the cluster on this machine: an embedded server, worker processes
// of this binary, throughput against the in-process runner, and the
// per-shard overhead; one JSON line per figure.
package main
