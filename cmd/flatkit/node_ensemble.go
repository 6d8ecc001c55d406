package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ode"
)

// The ensemble case of scenario node: the gradient of Σ_i L_i over 1000
// spiral trajectories. Trajectory i starts at u0 = (2, 0) + 0.1·N(0, 1),
// two draws from its own generator, ode.TrajectoryRand(seed, i). It is
// compared with data from the true dynamics from that u0, made as the
// single-trajectory data is: float32 RK4, 50 steps per save interval. The
// weights come from model.Init. The gradient is by InterpolatingAdjoint
// with Tsit5 at rtol 1e-3 and atol 1e-6, on 1 and on 2 workers. The two
// results must be equal bit for bit, or the case fails. The 2-worker line
// carries speedup_vs_1, the 1-worker median over the 2-worker one. Its
// goal is at least 1.8 on 2 cores.
const (
	nodeEnsembleN      = 1000
	nodeEnsembleQuick  = 64 // trajectories in -quick mode
	nodeEnsembleSeed   = 1
	nodeEnsembleSpread = 0.1
)

// nodeEnsembleU0 is trajectory i's initial state, drawn from rng.
func nodeEnsembleU0(u0 []float32, rng *rand.Rand) {
	u0[0] = 2 + float32(nodeEnsembleSpread*rng.NormFloat64())
	u0[1] = float32(nodeEnsembleSpread * rng.NormFloat64())
}

// nodeEnsembleResult is an ensemble figure with its extra fields.
type nodeEnsembleResult struct {
	result
	Method       string   `json:"method"`
	Sensitivity  string   `json:"sensitivity"`
	RTol         float64  `json:"rtol"`
	ATol         float64  `json:"atol"`
	Params       int      `json:"params"`
	Trajectories int      `json:"trajectories"`
	Workers      int      `json:"workers"`
	Steps        int      `json:"steps"` // forward and backward, summed over the trajectories
	Loss         float64  `json:"loss"`
	GradNorm     float64  `json:"grad_norm"`
	SpeedupVs1   *float64 `json:"speedup_vs_1,omitempty"`
}

func runNodeEnsemble(ctx context.Context, b *bencher) error {
	s, err := newNodeSetup(ctx, false)
	if err != nil {
		return err
	}
	n := nodeEnsembleN
	if b.opt.quick {
		n = nodeEnsembleQuick
	}
	losses := make([]ode.Loss[float32], n)
	u0 := make([]float32, 2)
	for i := range losses {
		nodeEnsembleU0(u0, ode.TrajectoryRand(nodeEnsembleSeed, i))
		data, err := nodeDataFrom(ctx, s.ts, u0)
		if err != nil {
			return fmt.Errorf("trajectory %d: %w", i, err)
		}
		losses[i] = nodeLoss(s.ts, data)
	}
	ens := ode.Ensemble[float32]{Base: s.prob, N: n, Seed: nodeEnsembleSeed,
		Modify: func(_ int, rng *rand.Rand, p *ode.Problem[float32]) { nodeEnsembleU0(p.U0, rng) }}
	lossFor := func(i int) ode.Loss[float32] { return losses[i] }
	sens := ode.InterpolatingAdjoint{}

	var first *ode.EnsembleGradientResult[float32]
	var median1 float64
	for _, workers := range []int{1, 2} {
		settleGC()
		sevenCalls := func(fn func()) stats { return b.measureCalls(7, fn) }
		g, sm, err := measured(sevenCalls, fmt.Sprintf("%d workers", workers), func() (*ode.EnsembleGradientResult[float32], error) {
			return ens.Gradient(ctx, ode.Tsit5(), lossFor, sens, ode.Tol(nodeRTol, nodeATol), ode.Workers(workers))
		})
		if err != nil {
			return err
		}
		if g.Count != n {
			return fmt.Errorf("%d workers: %d trajectories summed, want %d", workers, g.Count, n)
		}
		r := nodeEnsembleResult{result: scaled(sm, "ms"), Method: "Tsit5", Sensitivity: sensName(sens),
			RTol: nodeRTol, ATol: nodeATol, Params: len(s.θ), Trajectories: n, Workers: workers,
			Steps: g.Stats.Accepted, Loss: g.Value, GradNorm: nodeNorm32(g.P)}
		if first == nil {
			first, median1 = g, sm.median
		} else {
			if g.Value != first.Value || !slices.Equal(g.P, first.P) {
				return fmt.Errorf("%d workers: the ensemble gradient differs from 1 worker's (loss %v against %v): it must be equal bit for bit", workers, g.Value, first.Value)
			}
			r.SpeedupVs1 = ptr(median1 / sm.median)
		}
		r.Case = fmt.Sprintf("spiral 2-50-2 ensemble of %d, Tsit5 rtol 1e-3, gradient dθ InterpolatingAdjoint, %d worker", n, workers)
		if workers > 1 {
			r.Case += "s"
		}
		r.Note = "u0 = (2, 0) + 0.1 N(0, 1) per trajectory's generator, data from the true dynamics; ens.Gradient per call; results equal bit for bit on 1 and 2 workers (checked); goal: speedup_vs_1 ≥ 1.8 on 2 cores"
		b.emitEnsemble(r)
	}
	return nil
}

// emitEnsemble is bencher.emit for an ensemble figure.
func (b *bencher) emitEnsemble(r nodeEnsembleResult) {
	b.emitExtra(&r.result, &r)
}

// nodeNorm32 is ‖x‖ in float64.
func nodeNorm32(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}
