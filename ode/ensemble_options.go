package ode

import "slices"

// Workers sets how many goroutines Ensemble.Solve and Ensemble.Gradient
// run shards on. The default is runtime.GOMAXPROCS(0). The results do not
// depend on it.
func Workers(n int) WorkersOption {
	return func(o *options) {
		if n < 1 {
			o.fail("Workers(%d): want n ≥ 1", n)
			return
		}
		o.workers = n
	}
}

// Indices makes Ensemble.Gradient differentiate only the trajectories idx,
// a minibatch, in this order. Shards are cut over positions in the list, so
// any subset needs no new ensemble. Each trajectory's generator is still
// seeded by its own index. Repeats are allowed: a trajectory then counts
// as often as it is listed.
func Indices(idx ...int) BatchOption {
	c := slices.Clone(idx)
	return func(o *options) {
		o.indices, o.indicesSet = c, true
	}
}

// PerTrajectoryU0 makes Ensemble.Gradient keep every trajectory's dL/du0,
// in EnsembleGradientResult.U0.
func PerTrajectoryU0() BatchOption {
	return func(o *options) {
		o.perU0 = true
	}
}
