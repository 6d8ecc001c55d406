// Package lv registers Lotka-Volterra ensembles with the cluster runner,
// for the worker command, the sweep example, the tests and the benchmarks:
//
//	lv.Register() // "lv" (float64) and "lv32" (float32)
//	args, _ := json.Marshal(lv.Args{N: 1000, Seed: 7})
//	res, rep, err := cluster.Solve[float64](ctx, coord, cluster.Request{Name: "lv", Args: args, Theta: lv.Theta()})
//
// Trajectory i solves
//
//	u0' = θ0·u0 − θ1·u0·u1,   u1' = −θ2·u1 + θ3·u0·u1
//
// on [0, T1]. Its initial state is (1, 1) plus Spread times two standard
// normal draws from its own generator. For gradients, its loss is the sum
// over t = T1/2 and T1 of ‖u(t) − target_i‖²/2, where target_i is 1 +
// 0.01·(i mod 100).
package lv
