// Ensemble solves the Lotka–Volterra predator–prey equations
//
//	u1' = 1.5·u1 − u1·u2   (prey)
//	u2' = −3·u2 + u1·u2    (predators)
//
// from 200 perturbed initial populations around (1, 1), on all cores, with
// ode.Ensemble and Tsit5. It draws the phase portrait of every trajectory
// with gonum/plot. The colour is the quantity the equations conserve,
// H = u1 − 3 ln u1 + u2 − 1.5 ln u2: each orbit is a level set of H.
//
//	go run ./examples/ensemble                      # writes ensemble.png here
//	go run ./examples/ensemble -out /tmp/lv.png -n 1000 -workers 2
//
// Each trajectory's initial state is drawn from its own generator, seeded
// from -seed and the trajectory's index. So the ensemble, the printed
// summary and the picture are the same for any -workers. The summary
// gives the mean, minimum and maximum of the final states u(10). The mean
// comes from the ensemble's Reduce, summed in a fixed order. The summary
// also gives the steps and f evaluations of all trajectories, and the
// time taken by the solve and by the plot.
//
// Flags and their defaults:
//
//	-n        trajectories, 200
//	-out      PNG path, ensemble.png
//	-workers  GOMAXPROCS
//	-seed     1
//	-points   saved per trajectory, 301
package main
