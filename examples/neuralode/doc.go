// Neuralode fits a universal differential equation to an ensemble of noisy
// Lotka-Volterra trajectories. It recovers the interaction terms it was
// not told.
//
//	go run ./examples/neuralode                       # the full run
//	go run ./examples/neuralode -stop 300             # stop after Adam step 300 (or press Ctrl-C) …
//	go run ./examples/neuralode -resume               # … and continue from the checkpoint
//
// The true system is u1' = α u1 − β u1 u2, u2' = −δ u2 + γ u1 u2 with α =
// 1.5, β = 1, δ = 3, γ = 1. The program draws 32 initial conditions
// uniformly on [0.75, 1.25]². It solves the true system in float64 at rtol
// 1e-10. It observes both species at 20 times on (0, 3], with Gaussian
// noise σ = 0.05. All of it is drawn from -seed. The model keeps the known
// linear terms and puts a network in place of the interaction terms:
//
//	u' = (α u1, −δ u2) + NN(u; θ),   NN(u) = 5·net(u/3),
//	net = Dense(2, 16), Tanh, Dense(16, 16), Tanh, Dense(16, 2)
//
// α and δ are fixed at their true values, not learned. With them free, a
// network could trade a linear part with them, and "the learned interaction
// terms" would not be defined. The fixed scalings 1/3 and 5 put the
// network's inputs and outputs at order one over the data. θ, of 354 floats,
// is the network's flat buffer, laid out with PyTorch's nn.Sequential
// paths ("0.weight", …, "4.bias"); the right-hand side is written with ad
// ops and odead.NeuralRHS, and odead.Problem gives the solver its
// derivative products. State and parameters are float32.
//
// Fitting, on the loss "mean squared error against the observations":
//
//  1. Adam on minibatches of -batch 8 trajectories, through
//     ode.Ensemble.Gradient with ode.Indices. It runs -steps 800 at -lr
//     0.02, with a cosine decay to lr/20. Each member of a batch is a
//     window of a trajectory. It starts at a random observation, from the
//     noisy observed state; the first window starts from the known initial
//     condition. It is compared with the next W observations. W grows
//     linearly from -window 3 to the whole trajectory at the last step.
//     Short windows make the early problem nearly a regression of the
//     vector field. They keep the optimiser out of the poor local minima
//     that whole oscillating trajectories have at the start, and their
//     gradients are cheap too.
//  2. gonum's L-BFGS through optimisers.Minimize, on the mean over the 32
//     whole trajectories, starting from Adam's θ. It keeps a memory of 100
//     and runs at most -lbfgs 250 iterations. float32 L-BFGS often ends
//     with gonum's "linesearch failed to converge" at the optimum. When the
//     loss is not worse than at the start, the program says so and keeps
//     the point.
//
// Gradients are by the interpolating adjoint with Tsit5 at rtol 1e-5, the
// quadrature of dL/dθ left out of the step-size control (its QuadTol has
// Abs +Inf). Ensemble gradients are the same bits for any -workers, so the
// whole run is.
//
// It prints the fit quality and checks it:
//
//   - held-out: the fitted model solved from 5 held-out initial conditions,
//     drawn like the training ones, against the noise-free true paths. The
//     RMS over both species and 61 times on [0, 3] must be below 2σ = 0.1.
//   - interaction: NN(u) against the true terms −β u1 u2 and γ u1 u2, at
//     the states the data cover: every training trajectory's true state at
//     the 61 times. ‖NN − true‖/‖true‖ must be below 0.1.
//
// It also prints the RMS residual against the training data, where σ is
// the floor. TestFit checks all three on a shorter run.
//
// Output, in -out, by default neuralode-out:
//
//   - neuralode.safetensors, the checkpoint. It is written atomically every
//     -every 100 Adam steps, at the last, at -stop and on Ctrl-C. It holds
//     θ as "theta.<path>" and the Adam optimiser's own checkpoint: its
//     moments "adam.slot0.<path>" and "adam.slot1.<path>", and the document
//     "adam.optimiser" with the step and the schedule's hyperparameters. It
//     also holds "step", "run" with the flags the schedules depend on, and
//     "loss" with every step's minibatch loss, for the loss curve.
//   - model.safetensors, the fitted θ by name, by layout.SaveFile.
//   - fit.png: data and fitted paths of four training trajectories, the
//     held-out paths true and fitted, and the learned interaction terms
//     against the true ones along the held-out paths.
//   - loss.png: the loss per Adam step and per L-BFGS iteration, log scale.
//
// On a terminal the progress of each phase is a bar redrawn in place. It
// shows the loss, the elapsed time and an estimate of the time left. When
// the output is not a terminal, as for a file, a pipe or a test, it is a
// line at every tenth of the phase.
//
// # Resume
//
// -resume reads the checkpoint in -out and continues the Adam phase from
// its step up to -steps. Then it runs the whole L-BFGS phase from the
// resulting θ. L-BFGS is not checkpointed: it restarts from the
// checkpointed θ when Adam had finished. The minibatch and the window of
// step k are functions of -seed and k alone. The optimiser's state is
// restored exactly, and ensemble gradients do not depend on the workers.
// So a run may stop after any step: by -stop, by Ctrl-C, or by a crash
// after a checkpoint. Resumed with the same -seed, -batch, -window, -lr
// and -steps, it ends with the same θ, bit for bit, as the run that was
// never stopped. -workers may differ. The flags are checked against the
// checkpoint's "run" entry. Only the losses of the steps before the
// checkpoint, kept in float32, are rounded in the resumed loss curve.
//
// Flags and their defaults:
//
//	-steps 800     -batch 8       -window 3      -lr 0.02
//	-lbfgs 250     -every 100     -workers GOMAXPROCS
//	-seed 1        -out neuralode-out
//	-resume        -stop 0, none  -plots true
package main
