// Package neural registers a neural-ODE ensemble with the cluster runner,
// the kind a training loop differentiates once per step:
//
//	neural.Register() // "node" (float32)
//	args, _ := json.Marshal(neural.Args{N: 64, Hidden: 32})
//	θ, _ := neural.Init(args, 1)
//	for step := range steps {
//		g, rep, err := cluster.Gradient[float32](ctx, coord, cluster.Request{Name: "node", Args: args, Theta: θ, Indices: batch(step)})
//		…
//		opt.Update(θ, grad) // g.P / g.Count
//	}
//
// θ travels once per request (per step) through the object store; each
// worker fetches it once per request, whatever number of shards it
// computes.
//
// The model is u' = NN(u; θ) on odead.NeuralProblem. NN is an MLP 2 →
// Hidden → … → Hidden → 2 with tanh, and Depth hidden layers. Trajectory
// i starts at u0_i, a point on the annulus 0.5 ≤ |u| ≤ 1.5 drawn from Seed
// and i. It is fitted to the damped spiral u' = A·u, with A = [[−0.1, 2],
// [−2, −0.1]]. The spiral's solution e^{−0.1t}·R(2t)·u0_i is known in
// closed form. The loss is the mean squared error over Obs observations
// at T1·k/Obs, for k = 1…Obs.
package neural
