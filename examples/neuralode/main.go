package main

import (
	"context"
	"errors"
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

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
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

// trajectory is one initial condition with its true path and, for training
// trajectories, its noisy observations.
type trajectory struct {
	u0    []float32
	obs   [][]float32 // at obsTimes; nil for held-out ones
	truth [][]float64 // at denseTimes, from the true system
}

type dataset struct {
	train, held []trajectory
}

var (
	obsTimes   = linspace(t1/nSaved, t1, nSaved)
	denseTimes = linspace(0, t1, nDense)
)

func linspace(a, b float64, n int) []float64 {
	ts := make([]float64, n)
	for k := range ts {
		ts[k] = a + (b-a)*float64(k)/float64(n-1)
	}
	return ts
}

// lotkaVolterra is the true right-hand side, in float64.
func lotkaVolterra(du, u []float64, _ []float32, _ float64) {
	du[0] = alpha*u[0] - beta*u[0]*u[1]
	du[1] = -delta*u[1] + gamma*u[0]*u[1]
}

// makeData draws the initial conditions, solves the true system (float64,
// rtol 1e-10) and adds the observation noise, all from seed.
func makeData(ctx context.Context, seed uint64) (*dataset, error) {
	draw := func(rng *rand.Rand, n int) []trajectory {
		tr := make([]trajectory, n)
		for i := range tr {
			tr[i].u0 = []float32{
				float32(1 + spread*(2*rng.Float64()-1)),
				float32(1 + spread*(2*rng.Float64()-1)),
			}
		}
		return tr
	}
	d := &dataset{train: draw(rand.New(rand.NewPCG(seed, 1)), nTrain), held: draw(rand.New(rand.NewPCG(seed, 3)), nHeld)}
	solve := func(tr *trajectory, ts []float64) ([][]float64, error) {
		prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{float64(tr.u0[0]), float64(tr.u0[1])}, T1: t1}
		sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(ts...))
		if err != nil {
			return nil, err
		}
		return sol.U, nil
	}
	for _, set := range [][]trajectory{d.train, d.held} {
		for i := range set {
			var err error
			if set[i].truth, err = solve(&set[i], denseTimes); err != nil {
				return nil, err
			}
		}
	}
	noise := rand.New(rand.NewPCG(seed, 2))
	for i := range d.train {
		tr := &d.train[i]
		us, err := solve(tr, obsTimes)
		if err != nil {
			return nil, err
		}
		tr.obs = make([][]float32, nSaved)
		for k, u := range us {
			tr.obs[k] = []float32{float32(u[0] + sigma*noise.NormFloat64()), float32(u[1] + sigma*noise.NormFloat64())}
		}
	}
	return d, nil
}

// network is the net of NN(u; θ) = outScale·net(inScale·u; θ), the unknown
// interaction terms.
func network() model.Layer {
	return model.Chain(model.Dense(2, hidden), model.Tanh(), model.Dense(hidden, hidden), model.Tanh(), model.Dense(hidden, 2))
}

var (
	knownCoef = []float32{alpha, -delta} // the known terms: (α u1, −δ u2) = u ⊙ (α, −δ)
	shape2    = []int{2}
)

// universal returns the right-hand side of the universal ODE,
// u' = (α u1, −δ u2) + NN(u; θ), with α and δ fixed at their true values:
// the known linear terms plus the network on all of θ.
func universal(net model.Layer) func(u, p ad.Var, t float64) ad.Var {
	nn := ode.NeuralRHS(net)
	return func(u, p ad.Var, t float64) ad.Var {
		known := ad.Mul(u, u.Tape().Const(flat.Tensor{Shape: shape2, Data: knownCoef}))
		return ad.Add(known, ad.Scale(nn(ad.Scale(u, inScale), p, t), outScale))
	}
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

// fitter holds the problem, the data and the solver options.
//
// The ensemble's members are windows of the training trajectories: member
// i·nSaved + s of trajectory i starts at observation s (s = 0: at t = 0
// from the known initial condition; s ≥ 1: at obsTimes[s−1] from the noisy
// observation there) and is compared with the next W observations. With
// W = nSaved and s = 0 a member is the whole trajectory.
type fitter struct {
	net   model.Layer
	lay   *layout.Layout
	prob  ode.Problem[float32]
	data  *dataset
	seed  uint64
	opts  []ode.Option
	grads int
}

func newFitter(d *dataset, cfg config, net model.Layer, θ []float32) (*fitter, error) {
	lay, err := model.Layout(net)
	if err != nil {
		return nil, err
	}
	prob, err := ode.ADProblem(universal(net), []float32{1, 1}, 0, t1, θ)
	if err != nil {
		return nil, err
	}
	// The quadrature of dL/dθ is left out of the step-size control (as
	// CVODES does by default): under it, the float32 rounding of the
	// quadrature drives the backward solve to thousands of steps.
	opts := []ode.Option{ode.Tol(rtol, atol), ode.QuadTol(rtol, math.Inf(1)), ode.Workers(cfg.workers)}
	return &fitter{net: net, lay: lay, prob: prob, data: d, seed: cfg.seed, opts: opts}, nil
}

// ensemble returns the windows of W observations at θ, and their losses:
// each the mean squared error over its 2·W observed values.
func (f *fitter) ensemble(θ []float32, W int) (ode.Ensemble[float32], func(int) ode.Loss[float32]) {
	d := f.data
	// ShardSize 1: minibatches are small, so one shard per member balances
	// the workers (the default of 16 would put a batch of 8 on one worker).
	ens := ode.Ensemble[float32]{Base: f.prob, N: len(d.train) * nSaved, Seed: f.seed, ShardSize: 1,
		Modify: func(m int, _ *rand.Rand, p *ode.Problem[float32]) {
			tr, s := &d.train[m/nSaved], m%nSaved
			if s == 0 {
				copy(p.U0, tr.u0)
				p.T0 = 0
			} else {
				copy(p.U0, tr.obs[s-1])
				p.T0 = obsTimes[s-1]
			}
			p.T1 = obsTimes[s+W-1]
		}}
	ens.Base.P = θ
	scale := 1 / float64(2*W)
	lossFor := func(m int) ode.Loss[float32] {
		s := m % nSaved
		obs := d.train[m/nSaved].obs[s : s+W]
		return ode.Loss[float32]{At: obsTimes[s : s+W], Point: func(k int, _ float64, u, dLdu []float32) float64 {
			var v float64
			for j := range u {
				r := float64(u[j] - obs[k][j])
				v += scale * r * r
				dLdu[j] = float32(2 * scale * r)
			}
			return v
		}}
	}
	return ens, lossFor
}

// gradient returns the mean loss over the members idx of the windows of W
// observations at θ, and writes its gradient into g.
func (f *fitter) gradient(ctx context.Context, θ, g []float32, W int, idx []int) (float64, error) {
	ens, lossFor := f.ensemble(θ, W)
	opts := append(f.opts[:len(f.opts):len(f.opts)], ode.Indices(idx...))
	res, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, opts...)
	if res == nil {
		return math.NaN(), err
	}
	f.grads += res.Count + len(res.Errors)
	if err != nil {
		return math.NaN(), err
	}
	inv := 1 / float32(res.Count)
	for k, v := range res.P {
		g[k] = v * inv
	}
	return res.Value / float64(res.Count), nil
}

// whole lists the members that are the whole training trajectories.
func whole() []int {
	idx := make([]int, nTrain)
	for i := range idx {
		idx[i] = i * nSaved
	}
	return idx
}

// windowAt is the window length of Adam step `step`: cfg.window
// observations at the first step, growing linearly to the whole trajectory
// at the last.
func windowAt(cfg config, step int) int {
	if cfg.window <= 0 || cfg.window >= nSaved || step >= cfg.steps {
		return nSaved
	}
	return cfg.window + (nSaved-cfg.window)*(step-1)/cfg.steps
}

// batchAt returns the minibatch of Adam step `step`: cfg.batch windows of
// distinct trajectories, each at a random start. It is a function of the
// seed and the step alone, so a resumed run draws the same batches.
func batchAt(cfg config, step int) []int {
	W := windowAt(cfg, step)
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6e6f6465<<32|uint64(step)))
	idx := rng.Perm(nTrain)[:cfg.batch]
	for k, i := range idx {
		idx[k] = i*nSaved + rng.IntN(nSaved-W+1)
	}
	return idx
}

// predict solves the fitted model from u0 at the dense times.
func (f *fitter) predict(ctx context.Context, θ, u0 []float32) ([][]float32, error) {
	prob := f.prob
	prob.P, prob.U0 = θ, u0
	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(rtol, atol), ode.SaveAt(denseTimes...))
	if err != nil {
		return nil, err
	}
	return sol.U, nil
}

// heldOutRMS is the RMS error of the fitted model against the true paths of
// the held-out initial conditions over the dense times (both components);
// it also returns the fitted paths.
func (f *fitter) heldOutRMS(ctx context.Context, θ []float32) (float64, [][][]float32, error) {
	var ss float64
	var n int
	preds := make([][][]float32, len(f.data.held))
	for i, tr := range f.data.held {
		us, err := f.predict(ctx, θ, tr.u0)
		if err != nil {
			return math.NaN(), nil, fmt.Errorf("held-out trajectory %d: %w", i, err)
		}
		preds[i] = us
		for k, u := range us {
			for j := range u {
				r := float64(u[j]) - tr.truth[k][j]
				ss += r * r
				n++
			}
		}
	}
	return math.Sqrt(ss / float64(n)), preds, nil
}

// interaction returns the learned interaction terms NN(u; θ) at the states
// pts (u1, u2 interleaved), all in one batch.
func (f *fitter) interaction(θ, pts []float32) []float32 {
	tape := ad.NewTape()
	u := ad.Scale(tape.Const(flat.Tensor{Shape: []int{len(pts) / 2, 2}, Data: pts}), inScale)
	y := ad.Scale(f.net.Apply(nil, tape.Const(flat.Tensor{Shape: []int{len(θ)}, Data: θ}), u), outScale)
	return y.Data()
}

// interactionError compares NN(u; θ) with the true interaction terms
// (−β u1 u2, γ u1 u2) where the training data are: at every training
// trajectory's true state at the dense times (32 × 61 points). It returns
// ‖NN − true‖ / ‖true‖ over all those points, a relative RMS error.
func (f *fitter) interactionError(θ []float32) float64 {
	var pts []float32
	for _, tr := range f.data.train {
		for _, u := range tr.truth {
			pts = append(pts, float32(u[0]), float32(u[1]))
		}
	}
	y := f.interaction(θ, pts)
	var num, den float64
	for k := range len(pts) / 2 {
		u1, u2 := float64(pts[2*k]), float64(pts[2*k+1])
		want := [2]float64{-beta * u1 * u2, gamma * u1 * u2}
		for j := range 2 {
			r := float64(y[2*k+j]) - want[j]
			num += r * r
			den += want[j] * want[j]
		}
	}
	return math.Sqrt(num / den)
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

// lbfgsRecorder follows gonum's iterations for the progress bar and the
// loss curve.
type lbfgsRecorder struct {
	bar  *progress
	s    *Summary
	iter int
}

func (r *lbfgsRecorder) Init() error { return nil }

func (r *lbfgsRecorder) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op == optimize.MajorIteration {
		r.iter++
		r.s.LBFGSLoss = append(r.s.LBFGSLoss, loc.F)
		r.bar.update(r.iter, loc.F)
	}
	return nil
}

// polish runs L-BFGS on the mean loss over the whole trajectories, starting
// from θ, and leaves the point it ends at in θ.
func polish(ctx context.Context, w io.Writer, f *fitter, θ []float32, cfg config, s *Summary) error {
	start := flat.Clone(θ)
	var fgErr error
	f0 := math.NaN() // the loss at the start
	fg := func(x, grad []float32) float64 {
		v, err := f.gradient(ctx, x, grad, nSaved, whole())
		if err != nil {
			// A trajectory failed at this point (a step too far): an
			// infinite loss makes the line search back off.
			fgErr = err
			v = math.Inf(1)
		}
		if math.IsNaN(f0) {
			f0 = v
			s.LBFGSLoss = append(s.LBFGSLoss, v)
		}
		return v
	}
	fmt.Fprintf(w, "L-BFGS (memory %d): at most %d iterations on all %d whole trajectories\n", lbfgsM, cfg.lbfgs, nTrain)
	bar := newProgress(w, "L-BFGS", 0, cfg.lbfgs)
	res, err := optimisers.Minimize(fg, θ, &optimize.LBFGS{Store: lbfgsM}, &optimize.Settings{
		MajorIterations: cfg.lbfgs, GradientThreshold: 1e-7, Recorder: &lbfgsRecorder{bar: bar, s: s},
		Converger: &optimize.FunctionConverge{Absolute: 1e-9, Relative: 1e-7, Iterations: 20}})
	bar.done()
	if res == nil {
		return fmt.Errorf("L-BFGS: %w", err)
	}
	s.LBFGSStatus = res.Status
	switch {
	case err == nil:
		s.LBFGSNote = fmt.Sprintf("status %v", res.Status)
	case errors.Is(err, optimize.ErrLinesearcherFailure) && res.F <= f0:
		// float32 losses leave L-BFGS no decrease to find near an optimum:
		// its line search then fails, at a point no worse than the start.
		s.LBFGSNote = "ended by gonum's failed line search (float32 rounding leaves no decrease to find); the loss is not worse than at the start, so the point is kept"
	default:
		if fgErr != nil {
			err = fmt.Errorf("%w (last failed evaluation: %v)", err, fgErr)
		}
		copy(θ, start)
		return fmt.Errorf("L-BFGS: %w", err)
	}
	fmt.Fprintf(w, "L-BFGS: %d iterations, mean squared error %.6g → %.6g; %s\n", res.Stats.MajorIterations, f0, res.F, s.LBFGSNote)
	return nil
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
