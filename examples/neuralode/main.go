package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/optimisers"
)

// The true system: u1' = α u1 − β u1 u2, u2' = −δ u2 + γ u1 u2.
const (
	alpha, beta, delta, gamma = 1.5, 1.0, 3.0, 1.0

	sigma  = 0.05 // observation noise
	t1     = 3.0  // the span is [0, t1]
	nSaved = 20   // observations per trajectory, at t1·k/nSaved, k = 1…nSaved
	nTrain = 32   // training trajectories
	nHeld  = 5    // held-out initial conditions
	spread = 0.25 // u0 is uniform on [1 − spread, 1 + spread]²
	nDense = 61   // evaluation times per trajectory: 0, 0.05, …, 3
	rtol   = 1e-5 // Tsit5's tolerances for the model's solves and gradients
	atol   = 1e-7
	lbfgsM = 100 // L-BFGS's memory (gonum's default of 15 converges about half as fast here)

	ckptName  = "neuralode.safetensors" // θ, Adam's state, the step
	modelName = "model.safetensors"     // the fitted θ by name
)

// The network: two hidden layers of 16 tanh units. It sees u/3 and its
// outputs are multiplied by 5: fixed scalings that put its inputs and
// outputs at order one over the data (u up to ~8, u1·u2 up to ~15).
const (
	hidden   = 16
	inScale  = 1.0 / 3
	outScale = 5
)

// config is what the flags set.
type config struct {
	steps   int     // Adam steps in all (a resumed run continues up to this count)
	batch   int     // windows (of distinct trajectories) per Adam step
	window  int     // observations per window at the first Adam step (0: whole trajectories)
	lr      float64 // Adam's learning rate, decayed to lr/20 (cosine)
	lbfgs   int     // L-BFGS iterations at most (0: no polish)
	every   int     // checkpoint every this many Adam steps (and at the last)
	workers int
	seed    uint64
	out     string // output directory
	resume  bool
	plots   bool
	stop    int // end the Adam phase after this step, as an interruption would (0: never)
}

func defaults() config {
	return config{steps: 800, batch: 8, window: 3, lr: 0.02, lbfgs: 250, every: 100,
		workers: runtime.GOMAXPROCS(0), seed: 1, out: "neuralode-out", plots: true}
}

// Summary is what a run measured.
type Summary struct {
	Theta       []float32 // the fitted parameters
	AdamTheta   []float32 // θ at the end of the Adam phase (what the checkpoint holds)
	StartStep   int       // the Adam step the run started from (0, or the checkpoint's)
	AdamSteps   int       // the Adam steps the optimiser had taken at the end of the phase
	AdamLoss    []float64 // per Adam step: the minibatch's mean squared error
	LBFGSLoss   []float64 // per L-BFGS iteration: the mean squared error over all trajectories
	TrainRMS    float64   // RMS residual against the noisy data (σ for a perfect fit)
	HeldOutRMS  float64   // RMS error of the fitted model against the true held-out paths
	Interaction float64   // relative RMS error of NN(u) against (−β u1 u2, γ u1 u2)
	LBFGSStatus optimize.Status
	LBFGSNote   string
	Gradients   int // trajectory gradients taken
	Elapsed     time.Duration
}

// adamRule is the Adam phase's optimiser: Adam with a cosine decay of the
// learning rate from lr to lr/20 over the steps.
func adamRule(cfg config) optimisers.Rule {
	return optimisers.Scheduled(optimisers.Adam(cfg.lr), "lr", optimisers.Cosine(cfg.lr, cfg.lr/20, cfg.steps))
}

func run(ctx context.Context, w io.Writer, cfg config) (*Summary, error) {
	if cfg.steps < 0 || cfg.batch < 1 || cfg.batch > nTrain || cfg.lbfgs < 0 || cfg.workers < 1 || cfg.every < 1 || !(cfg.lr > 0) {
		return nil, fmt.Errorf("want -steps ≥ 0, 1 ≤ -batch ≤ %d, -lbfgs ≥ 0, -workers ≥ 1, -every ≥ 1 and -lr > 0", nTrain)
	}
	start := time.Now()
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	d, err := makeData(ctx, cfg.seed)
	if err != nil {
		return nil, err
	}
	net := network()
	θ, err := model.Init(net, rand.New(rand.NewPCG(cfg.seed, 4)))
	if err != nil {
		return nil, err
	}
	f, err := newFitter(d, cfg, net, θ)
	if err != nil {
		return nil, err
	}
	rule := adamRule(cfg)
	ckpt := filepath.Join(cfg.out, ckptName)
	s := &Summary{}
	var opt *optimisers.Optimiser
	if cfg.resume {
		if opt, s.AdamLoss, err = loadCheckpoint(ckpt, cfg, f.lay, rule, θ); err != nil {
			return nil, err
		}
		s.StartStep = opt.Steps()
	} else if opt, err = optimisers.Setup(rule, f.lay); err != nil {
		return nil, err
	}

	fmt.Fprintf(w, "universal ODE for Lotka-Volterra: u' = (%g u1, −%g u2) + NN(u; θ), α and δ fixed; NN(u) = %g·net(u/%g), net %s: %d parameters\n",
		alpha, delta, float64(outScale), 1/inScale, describe(f.lay), f.lay.Len())
	fmt.Fprintf(w, "data: %d trajectories from u0 in [%g, %g]², %d noisy observations each on (0, %g] (σ = %g); %d held-out u0; Tsit5 rtol %g, %d workers\n",
		nTrain, 1-spread, 1+spread, nSaved, float64(t1), sigma, nHeld, rtol, cfg.workers)
	if cfg.resume {
		fmt.Fprintf(w, "resumed from %s at Adam step %d\n", ckpt, s.StartStep)
	}

	// Adam on minibatches of windows, growing to whole trajectories.
	g := make([]float32, len(θ))
	if s.StartStep < cfg.steps {
		fmt.Fprintf(w, "Adam: %d steps of %d windows, from %d observations to whole trajectories, lr %g cosine to %g\n",
			cfg.steps, cfg.batch, windowAt(cfg, 1), cfg.lr, cfg.lr/20)
		bar := newProgress(w, "Adam", s.StartStep, cfg.steps)
		for step := s.StartStep + 1; step <= cfg.steps; step++ {
			loss, err := f.gradient(ctx, θ, g, windowAt(cfg, step), batchAt(cfg, step))
			if err != nil {
				bar.done()
				if ctx.Err() != nil && opt.Steps() > 0 {
					// Interrupted: keep the steps made so far.
					if err := saveCheckpoint(ckpt, cfg, f.lay, θ, opt, s.AdamLoss); err != nil {
						return nil, err
					}
					return nil, fmt.Errorf("interrupted at Adam step %d: checkpoint of step %d written to %s; continue with -resume", step, opt.Steps(), ckpt)
				}
				return nil, fmt.Errorf("Adam step %d: %w", step, err)
			}
			if err := opt.Update(θ, g); err != nil {
				bar.done()
				return nil, err
			}
			s.AdamLoss = append(s.AdamLoss, loss)
			bar.update(step, loss)
			if step%cfg.every == 0 || step == cfg.steps || step == cfg.stop {
				if err := saveCheckpoint(ckpt, cfg, f.lay, θ, opt, s.AdamLoss); err != nil {
					bar.done()
					return nil, err
				}
			}
			if step == cfg.stop {
				bar.done()
				fmt.Fprintf(w, "stopped after Adam step %d (-stop): checkpoint %s; continue with -resume\n", step, ckpt)
				s.AdamSteps, s.AdamTheta, s.Theta, s.Gradients = opt.Steps(), θ, θ, f.grads
				return s, nil
			}
		}
		bar.done()
		fmt.Fprintf(w, "checkpoint (θ, Adam's state, step %d): %s\n", opt.Steps(), ckpt)
	}
	s.AdamSteps = opt.Steps()
	s.AdamTheta = flat.Clone(θ)

	// L-BFGS on the whole trajectories, from the Adam phase's θ.
	if cfg.lbfgs > 0 {
		if err := polish(ctx, w, f, θ, cfg, s); err != nil {
			return nil, err
		}
	}
	s.Theta = θ

	// Fit quality.
	mse, err := f.gradient(ctx, θ, g, nSaved, whole())
	if err != nil {
		return nil, err
	}
	s.TrainRMS = math.Sqrt(mse)
	var held [][][]float32
	if s.HeldOutRMS, held, err = f.heldOutRMS(ctx, θ); err != nil {
		return nil, err
	}
	s.Interaction = f.interactionError(θ)
	s.Gradients = f.grads
	fmt.Fprintf(w, "fit: RMS residual against the training data %.4f (the noise alone: σ = %g)\n", s.TrainRMS, sigma)
	fmt.Fprintf(w, "fit: held-out RMS error against the true paths %.4f (want < 2σ = %g): %s\n", s.HeldOutRMS, 2*sigma, verdict(s.HeldOutRMS < 2*sigma))
	fmt.Fprintf(w, "fit: NN(u) against (−β u1 u2, γ u1 u2) at the training states, relative RMS error %.3f (want < 0.1): %s\n", s.Interaction, verdict(s.Interaction < 0.1))
	mpath := filepath.Join(cfg.out, modelName)
	if err := layout.SaveFile(mpath, f.lay, θ); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "fitted θ by name: %s\n", mpath)
	if cfg.plots {
		fit, loss := filepath.Join(cfg.out, "fit.png"), filepath.Join(cfg.out, "loss.png")
		if err := plotFit(ctx, fit, f, θ, held); err != nil {
			return nil, err
		}
		if err := plotLoss(loss, s); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "plots: %s, %s\n", fit, loss)
	}
	s.Elapsed = time.Since(start)
	fmt.Fprintf(w, "%d trajectory gradients in %v\n", s.Gradients, s.Elapsed.Round(time.Millisecond))
	return s, nil
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "NOT MET"
}

// describe lists the parameter tensors.
func describe(lay *layout.Layout) string {
	s := ""
	for i, lf := range lay.Leaves() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %v", lf.Path, lf.Shape)
	}
	return "[" + s + "]"
}

func main() {
	cfg := defaults()
	flag.IntVar(&cfg.steps, "steps", cfg.steps, "Adam steps in all (with -resume: continue up to this count)")
	flag.IntVar(&cfg.batch, "batch", cfg.batch, "windows (of distinct trajectories) per Adam step")
	flag.IntVar(&cfg.window, "window", cfg.window, "observations per window at the first Adam step, growing to the whole trajectory (0: whole from the start)")
	flag.Float64Var(&cfg.lr, "lr", cfg.lr, "Adam's learning rate (cosine decay to lr/20)")
	flag.IntVar(&cfg.lbfgs, "lbfgs", cfg.lbfgs, "L-BFGS iterations at most after Adam (0: none)")
	flag.IntVar(&cfg.every, "every", cfg.every, "checkpoint every this many Adam steps")
	flag.IntVar(&cfg.workers, "workers", cfg.workers, "goroutines solving trajectories (results do not depend on it)")
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the data, the initialisation and the minibatches")
	flag.StringVar(&cfg.out, "out", cfg.out, "output directory: checkpoint, fitted model, fit.png, loss.png")
	flag.BoolVar(&cfg.resume, "resume", false, "continue from the checkpoint in -out (give the same -seed, -batch, -window, -lr, -steps)")
	flag.BoolVar(&cfg.plots, "plots", cfg.plots, "write fit.png and loss.png")
	flag.IntVar(&cfg.stop, "stop", 0, "end the run after this Adam step, as an interruption would (to try -resume)")
	flag.Parse()
	// Ctrl-C during the Adam phase writes the checkpoint of the last step made.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if _, err := run(ctx, os.Stdout, cfg); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, "neuralode:", err)
		os.Exit(1)
	}
}
