package lv_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
)

// The Spec a worker builds for a request can run in one process too: here
// the mean final populations of 100 trajectories, as cluster.Solve returns
// them from workers (cluster's Solve example runs these on a server).
func ExampleBuild() {
	args, err := json.Marshal(lv.Args{N: 100, Seed: 1, Reduce: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := lv.Build[float64](args, lv.Theta())
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := ode.OptionsFor[ode.EnsembleSolveOption](spec.Options)
	res, err := spec.Ensemble.Solve(context.Background(), spec.Method, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("mean final prey %.4f, predators %.4f\n", res.Acc[0]/100, res.Acc[1]/100)
	// Output:
	// mean final prey 1.0547, predators 1.0290
}

// Parse fills the defaults and rejects arguments that make no sense.
func ExampleParse() {
	a, err := lv.Parse([]byte(`{"n": 1000, "seed": 7}`))
	fmt.Printf("%+v %v\n", a, err)
	_, err = lv.Parse([]byte(`{"n": 1000, "drop": true}`))
	fmt.Println(err)
	// Output:
	// {N:1000 Seed:7 ShardSize:0 Spread:0.1 T1:10 Reduce:false DropOutputs:false FailEvery:0 MaxSteps:0} <nil>
	// lv: drop without reduce keeps nothing, want reduce with drop
}
