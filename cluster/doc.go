// Package cluster runs flatkit ensembles across machines on NATS JetStream.
// Worker processes compute the same shards as the in-process runner:
// ode.Ensemble's Shards, SolveShard and Merge, and GradientShards,
// GradientShard and MergeGradients. The answer is the same bit for bit.
// Nothing is lost or counted twice when workers die, stall or repeat
// themselves.
//
// # The ensemble is code
//
// A Spec holds the ensemble, its method and options, and for gradients the
// per-trajectory loss and sensitivity method. A Builder builds it from a
// request's arguments and θ. Every process, coordinator and workers,
// registers the same builders under the same names:
//
//	cluster.Register("lv", lv.Build[float64]) // a Builder[float64]
//
// A request names the ensemble and carries θ and its arguments, bytes in
// the builder's own encoding:
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
// res is an *ode.EnsembleResult and g an *ode.EnsembleGradientResult, equal to
// Ensemble.Solve's and Ensemble.Gradient's in one process. res holds the
// outputs, the Reduce sums, the failed trajectories and the counters. The
// error is equal too. An *ode.EnsembleError lists the failed trajectories.
// Their errors keep their messages and, for solver failures, their
// *ode.Error and Retcode.
//
// # The protocol
//
// With the default Prefix "flatkit":
//
//   - θ and the request descriptor are put once in the object store
//     flatkit_params. The descriptor holds the name, the arguments, the
//     tolerances, the Indices and the SHA-256 of θ.
//   - Each shard is a small message on flatkit.shard.NAME.ID in the
//     work-queue stream flatkit_shards, with Nats-Msg-Id ID.SHARD.ATTEMPT.
//     It holds the request id, θ's hash, the shard number, the range and
//     the seed. All workers of a name pull from one durable consumer,
//     flatkit_NAME.
//   - A worker loads and caches the descriptor and θ once per request. It
//     refuses a θ whose SHA-256 is not the one the shard names. It rebuilds
//     the Spec and checks that the shard is the ensemble's own shard of
//     that number. It computes the shard and publishes the partial on
//     flatkit.result.ID, in the stream flatkit_results, with Nats-Msg-Id
//     ID.SHARD.ATTEMPT. Then it acks. It sends in-progress acks every
//     AckWait/3 while it computes.
//   - A result larger than the server's max payload is put in the object
//     store as ID.res.RANDOM. A gradient takes 8 bytes a value, so this
//     happens for a θ of more than 128k values. The message on
//     flatkit.result.ID then carries only the object's name, size and
//     SHA-256. Before reading a stored result, the coordinator refuses one
//     larger than its shard can be. That bound is the arrays' sizes, which
//     the request fixes, and one error per trajectory of at most
//     MaxErrorText bytes of text: a worker cuts a longer one, marking the
//     cut with ErrorTextCut. The coordinator also refuses one of another
//     size or hash,
//     and removes each object once read. A refused result is invalid like
//     any other.
//   - The coordinator reads flatkit.result.ID and decodes and checks each
//     result. It checks the shard, the sizes of its arrays, the failures'
//     indices, and that outputs are NaN exactly where trajectories failed,
//     as in-process. It keeps the first result of each shard and merges
//     them in shard order with Merge or MergeGradients.
//   - At the end, or on cancellation of a request without an ID, the
//     coordinator publishes flatkit.cancel.ID, and workers stop the
//     request's shards in flight. It purges the request's shards and
//     results and deletes its objects, delete markers included: θ, the
//     descriptor, and the stored results that the results after the last
//     one it read name. It lists no bucket to find them. A result that a
//     worker stores and names in the instant the request ends is removed
//     by the next sweep (Coordinator.Sweep, run at the start of each
//     request); one stored by a worker that died before naming it is left
//     to the bucket's 24-hour TTL.
//
// # Resume
//
// A request given an ID (Request.ID, from NewRequestID) outlives its
// coordinator. Its coordinator holds a lease on it, its entry in the
// key-value bucket flatkit_requests, renewed by compare-and-set every
// LeaseTTL/3. If the coordinator dies, or its context ends, the request's
// descriptor, θ, shards and results stay where they are, and workers go on
// with its queued shards. The same Solve or Gradient call with the same ID
// (and Resume, to refuse starting it anew) resumes it once the lease has
// lapsed (LeaseTTL after the last renewal; at once if the context ended).
// The resuming coordinator checks that the stored descriptor is the one
// the call would store, reads the results already in the results stream,
// leaves alone the shards still in the work queue (queued, or in flight),
// and publishes only the others. Its attempts are numbered from
// epoch·MaxDeliver, so that its Nats-Msg-Ids are new. The answer is the
// one an uninterrupted run gives, bit for bit; Report.Resumed counts the
// shards found done. A second coordinator on a request whose lease is held
// gets a *BusyError naming the request.
//
// Nothing of a request is removed while it runs or for Config.Retention
// after its lease was last renewed. Then it is expired: the next sweep
// removes it, and a resume gets an *ExpiredError. A request without an ID
// whose coordinator died is removed by the next sweep once its lease
// lapsed. Whatever their request, the results stream and the object store
// drop anything older than 24 hours, the bound of Retention; a running
// coordinator stores θ and the descriptor again every 6 hours, so that
// they stay. A result older than that is computed again on a resume.
//
// # Delivery
//
// JetStream delivers at least once; the runner makes it exactly once. A
// shard that is not acked within AckWait is delivered again: its worker
// was killed, lost its connection, or stalled. A worker that fails on a
// shard hands it back for another try, by a nak with a delay. A result may
// be published twice, by a redelivered shard computed twice or by a
// retried publish. The server's de-duplication on Nats-Msg-Id drops the
// second within its two-minute window, and the coordinator's table of done
// shards drops it after that. A result that fails the checks is refused,
// and its shard is published again as a new attempt. A shard may fail
// MaxDeliver times: the worker reports its last failure, or the server's
// MAX_DELIVERIES advisory names it. Then the shard is reported as failed
// trajectories with their indices, each with a *ShardFailedError, as the
// in-process runner reports failed trajectories. Report counts all of
// this.
//
// If no worker answers on flatkit.serve.NAME when a request starts, or
// while it makes no progress, the request ends with a *NoWorkerError.
// Cancellation and deadlines come from the context.
//
// # Messages
//
// A worker or coordinator decodes three messages: the request descriptor,
// the shard and the result. They are a compact little-endian binary format
// with a magic, a version and length-prefixed fields. Before anything is
// allocated, every length is checked against the bytes that remain and
// against a limit: MaxNameLen, MaxArgs, MaxTheta, MaxIndices, MaxValues or
// MaxMessage. So a hostile message is an error wrapping ErrMalformed. It is
// never a panic, nor an allocation larger than a small multiple of the
// message. Objects are read only up to the size their descriptor allows.
// The decoders have fuzz targets: go test -fuzz FuzzDecodeResult
// ./cluster, and FuzzOpenStored for stored results.
//
// # Watching
//
// Worker.RegisterMetrics and Coordinator.RegisterMetrics register
// Prometheus metrics with a registry of the caller's: shards done, failed,
// retried and redelivered, duplicates dropped, invalid results, bytes
// through the object store, and the histogram of a shard's computing
// time. flatkit-worker serves its worker's on the address given by
// -metrics. Without a registry nothing is counted beyond the atomic
// counters of WorkerStats and Report.
//
// # Commands
//
//	go run ./cluster/cmd/flatkit-worker -nats URL          # a worker for package lv's ensembles
//	go run ./cluster/cmd/flatkit-worker -nats URL -metrics :9090 # with Prometheus metrics on :9090/metrics
//	go run ./cluster/cmd/flatkit-worker bench              # throughput and per-shard overhead
//	go run ./cluster/examples/sweep [-nats URL] -n 1000000 # a sweep; without -nats, self-contained
//	go run ./cluster/examples/sweep -nats URL -id ID       # resume an interrupted sweep
//
// This module is separate from flatkit's core module, whose go.mod stays
// small. The go.work at the repository root joins the two, so that
// `go test ./... ./cluster/...` runs everything.
package cluster
