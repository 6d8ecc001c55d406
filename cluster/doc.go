// Package cluster runs flatkit ensembles across machines on NATS JetStream:
// the same shards as the in-process runner (ode.Ensemble's Shards,
// SolveShard, Merge; GradientShards, GradientShard, MergeGradients),
// computed by worker processes, with the same answer bit for bit, and
// nothing lost or counted twice when workers die, stall or repeat
// themselves.
//
// # The ensemble is code
//
// A Spec (the ensemble, its method and options, and for gradients the
// per-trajectory loss and sensitivity method) is built by a Builder from a
// request's arguments and θ. Every process, coordinator and workers,
// registers the same builders under the same names:
//
//	cluster.Register("lv", lv.Build[float64]) // a Builder[float64]
//
// A request names the ensemble and carries its arguments (bytes in the
// builder's own encoding) and θ:
//
//	coord, err := cluster.NewCoordinator(ctx, nc, cluster.Config{})
//	res, rep, err := cluster.Solve[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: θ})
//	g, rep, err := cluster.Gradient[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: θ, Indices: batch})
//
// and a worker serves the registered names until its context ends:
//
//	w, err := cluster.NewWorker(nc, cluster.WorkerConfig{})
//	err = w.Run(ctx)
//
// res is an *ode.EnsembleResult (outputs, Reduce sums, failed trajectories,
// counters) and g an *ode.EnsembleGradientResult, equal to Ensemble.Solve and
// Ensemble.Gradient in one process, and so is the error (an
// *ode.EnsembleError listing failed trajectories, whose errors keep their
// messages and, for solver failures, their *ode.Error and Retcode).
//
// # The protocol
//
// With the default Prefix "flatkit":
//
//   - θ and the request descriptor (name, arguments, tolerances, Indices,
//     the SHA-256 of θ) are put once in the object store flatkit_params.
//   - Each shard is a small message (request id, θ's hash, shard number,
//     range, seed) on flatkit.shard.NAME.ID in the work-queue stream
//     flatkit_shards, with Nats-Msg-Id ID.SHARD.ATTEMPT. All workers of a
//     name pull from one durable consumer, flatkit_NAME.
//   - A worker loads the descriptor and θ once per request (cached),
//     refuses a θ whose SHA-256 is not the one the shard names, rebuilds the
//     Spec, checks that the shard is the ensemble's own shard of that number,
//     computes it, publishes the partial on flatkit.result.ID (stream
//     flatkit_results) with Nats-Msg-Id ID.SHARD.ATTEMPT, and then acks. It
//     sends in-progress acks every AckWait/3 while it computes.
//   - A result larger than the server's max payload (a gradient of a θ of
//     more than 128k values is 8 bytes a value) is put in the object store
//     as ID.res.RANDOM, and the message on flatkit.result.ID carries only
//     its name, size and SHA-256. The coordinator refuses a stored result
//     larger than its shard can be (its arrays' sizes, which the request
//     fixes, and one error of the longest message per trajectory) before
//     reading it, refuses one of another size or hash, and removes each
//     object once read; a refused one is an invalid result like any other.
//   - The coordinator reads flatkit.result.ID, decodes and checks each result
//     (its shard, the sizes of its arrays, the failures' indices, NaN outputs
//     exactly where trajectories failed, as in-process), keeps the first one
//     of each shard and merges them in shard order with Merge or
//     MergeGradients.
//   - At the end, or on cancellation, the coordinator publishes
//     flatkit.cancel.ID (workers stop the request's shards in flight),
//     purges the request's shards and results and deletes its objects
//     (θ, the descriptor, stored results nobody read: those of duplicates
//     and of lost workers), delete markers included. A worker that stores a
//     result in the instant the request ends may leave it behind; the
//     bucket's 24-hour TTL removes it.
//
// # Delivery
//
// JetStream delivers at least once; the runner makes it exactly once.
// A shard that is not acked within AckWait (its worker was killed, lost its
// connection, or stalled) is delivered again; a worker that fails on a shard
// hands it back (nak with a delay) for another try. A result published twice
// (a redelivered shard computed twice, a retried publish) is dropped by the
// server's de-duplication on Nats-Msg-Id within its two-minute window, and
// by the coordinator's table of done shards after it. A result that fails
// the checks is refused and its shard published again (a new attempt). A
// shard that fails MaxDeliver times — the worker reports its last failure,
// or the server's MAX_DELIVERIES advisory names it — is reported as failed
// trajectories with their indices (each with a *ShardFailedError), as the
// in-process runner reports failed trajectories. Report counts all of
// this.
//
// If no worker answers on flatkit.serve.NAME when a request starts, or
// while it makes no progress, the request ends with a *NoWorkerError.
// Cancellation and deadlines come from the context.
//
// # Messages
//
// The three messages a worker or coordinator decodes (request descriptor,
// shard, result) are a compact little-endian binary format with a magic,
// a version and length-prefixed fields. Every length is checked against a
// limit (MaxNameLen, MaxArgs, MaxTheta, MaxIndices, MaxValues, MaxMessage)
// and against the bytes that remain before anything is allocated, so a
// hostile message is an error wrapping ErrMalformed, never a panic or an
// allocation larger than a small multiple of the message. Objects are read
// only up to the size their descriptor allows. The decoders have fuzz
// targets (go test -fuzz FuzzDecodeResult ./cluster; FuzzOpenStored for
// stored results).
//
// # Commands
//
//	go run ./cluster/cmd/flatkit-worker -nats URL          # a worker for package lv's ensembles
//	go run ./cluster/cmd/flatkit-worker bench              # throughput and per-shard overhead
//	go run ./cluster/examples/sweep [-nats URL] -n 1000000 # a sweep; without -nats, self-contained
//
// This module is separate from flatkit's core module, whose go.mod stays
// small; the go.work at the repository root joins the two, so that
// `go test ./... ./cluster/...` runs everything.
package cluster
