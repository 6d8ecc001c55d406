package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/nats-io/nats.go"
)

// A sweep of 100 Lotka-Volterra trajectories on an embedded server, one
// worker, and the coordinator: the sums equal the in-process ones.
func ExampleSolve() {
	lv.Register() // in every process: the coordinator's and the workers'
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A worker (normally its own process: flatkit-worker -nats URL).
	wc, _ := nats.Connect(srv.ClientURL())
	defer wc.Close()
	w, _ := cluster.NewWorker(wc, cluster.WorkerConfig{Names: []string{"lv"}, Concurrency: 1})
	go w.Run(ctx)
	<-w.Ready()

	// The coordinator.
	nc, _ := nats.Connect(srv.ClientURL())
	defer nc.Close()
	coord, err := cluster.NewCoordinator(ctx, nc, cluster.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	args, _ := json.Marshal(lv.Args{N: 100, Seed: 1, ShardSize: 25, Reduce: true})
	res, rep, err := cluster.Solve[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d shards, %d outputs, mean final prey %.4f\n", rep.Completed, len(res.U), res.Acc[0]/100)

	spec, _ := lv.Build[float64](args, lv.Theta())
	want, _ := spec.Ensemble.Solve(ctx, spec.Method)
	fmt.Println("equal to in-process:", want.Acc[0] == res.Acc[0] && want.U[99][1] == res.U[99][1])
	// Output:
	// 4 shards, 100 outputs, mean final prey 1.0547
	// equal to in-process: true
}
