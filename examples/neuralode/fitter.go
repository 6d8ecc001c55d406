package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

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
func universal(net model.Layer) func(u, p, t ad.Var) ad.Var {
	nn := odead.NeuralRHS(net)
	// t as a Var: odead then replays the recording by default (the
	// network sees no time, and neither do the known terms).
	return func(u, p, _ ad.Var) ad.Var {
		known := ad.Mul(u, u.Tape().Const(flat.Tensor{Shape: shape2, Data: knownCoef}))
		return ad.Add(known, ad.Scale(nn(ad.Scale(u, inScale), p, 0), outScale))
	}
}

// fitter holds the problem, the data and the solver options.
//
// The ensemble's members are windows of the training trajectories. Member
// i·nSaved + s of trajectory i starts at observation s, and is compared
// with the next W observations. For s = 0 it starts at t = 0 from the known
// initial condition. For s ≥ 1 it starts at obsTimes[s−1] from the noisy
// observation there. With W = nSaved and s = 0 a member is the whole
// trajectory.
type fitter struct {
	net   model.Layer
	lay   *layout.Layout
	prob  ode.Problem[float32]
	data  *dataset
	seed  uint64
	opts  []ode.EnsembleGradientOption
	sens  ode.Sensitivity
	grads int
}

func newFitter(d *dataset, cfg config, net model.Layer, θ []float32) (*fitter, error) {
	lay, err := model.Layout(net)
	if err != nil {
		return nil, err
	}
	prob, err := odead.Problem(universal(net), []float32{1, 1}, 0, t1, θ)
	if err != nil {
		return nil, err
	}
	// The quadrature of dL/dθ is left out of the step-size control (as
	// CVODES does by default): under it, the float32 rounding of the
	// quadrature drives the backward solve to thousands of steps.
	sens := ode.InterpolatingAdjoint{QuadTol: ode.Tolerance{Rel: rtol, Abs: math.Inf(1)}}
	opts := []ode.EnsembleGradientOption{ode.Tol(rtol, atol), ode.Workers(cfg.workers)}
	return &fitter{net: net, lay: lay, prob: prob, data: d, seed: cfg.seed, opts: opts, sens: sens}, nil
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
	res, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, f.sens, opts...)
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
// the held-out initial conditions, over both components at the dense
// times. It also returns the fitted paths.
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
// pts, all in one batch. pts holds u1 and u2 interleaved.
func (f *fitter) interaction(θ, pts []float32) []float32 {
	tape := ad.NewTape()
	u := ad.Scale(tape.Const(flat.Tensor{Shape: []int{len(pts) / 2, 2}, Data: pts}), inScale)
	y := ad.Scale(f.net.Apply(nil, tape.Const(flat.Tensor{Shape: []int{len(θ)}, Data: θ}), u), outScale)
	return y.Data()
}

// interactionError compares NN(u; θ) with the true interaction terms
// −β u1 u2 and γ u1 u2 where the training data are. Those are the 32 × 61
// points of every training trajectory's true state at the dense times. It
// returns ‖NN − true‖ / ‖true‖ over all those points, a relative RMS
// error.
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
