// Command sweep runs a Lotka-Volterra parameter sweep on NATS JetStream:
// N trajectories from perturbed initial populations, reduced on the workers
// to the mean and spread of the final populations.
//
//	go run ./cluster/examples/sweep                        # embedded server, two in-process workers
//	go run ./cluster/examples/sweep -nats URL -n 1000000   # workers started with flatkit-worker -nats URL
//
// It prints progress (shards done, trajectories per second) and a summary,
// and checks the sums against the in-process runner with -check.
package main
