// Command sweep runs a Lotka-Volterra parameter sweep on NATS JetStream:
// N trajectories from perturbed initial populations, reduced on the workers
// to the mean and spread of the final populations.
//
//	go run ./cluster/examples/sweep                        # embedded server, two in-process workers
//	go run ./cluster/examples/sweep -nats URL -n 1000000   # workers started with flatkit-worker -nats URL
//
// It prints progress (shards done, trajectories per second) and a summary,
// and checks the sums against the in-process runner with -check.
//
// With -nats, it prints the request's id first. A sweep interrupted
// (Ctrl-C, or its process killed) is resumed by the same command with
// -id ID: it prints how many shards it found done and computes only the
// others.
package main
