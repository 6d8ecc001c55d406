package main

import (
	"context"
	"fmt"
	"math"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// Scenario hvp-ode: Hessian-vector products of ODE losses through a solve
// (ode.HvSolver: the state's tangent forwards, the adjoint and its tangent
// backwards), each beside the gradient of the same loss by
// InterpolatingAdjoint, the adjoint the product differentiates, in a
// reused GradientSolver at the same tolerances:
//
//   - Lotka-Volterra, the sens scenario's problem (float64, hand-written
//     F, JVP, VJP and VJPJVP), G = ‖1 − u(10)‖²/2, Tsit5 rtol 1e-6,
//     atol 1e-8, H·v along a fixed direction of (p, u0);
//   - the spiral neural ODE 2-50-2 of the node scenario (float32, the ad
//     bridge's products, model.Init's weights), Tsit5 rtol 1e-3, atol
//     1e-6, H·v along a fixed direction of (θ, u0).
//
// Each line carries median (the product) and gradient_median in the same
// unit, their ratio (and that of the minima, less sensitive to a loaded
// machine), the allocations per product, and the steps of both solves. Issue 31's goal is a ratio ≤ 4 and 0 allocations.

func init() {
	register(scenario{
		name:  "hvp-ode",
		about: "Hessian-vector products through a solve (ode.HvSolver) vs the gradient's time: Lotka-Volterra, spiral neural ODE 2-50-2",
		run:   runHvpODE,
	})
}

// hvpODEResult is a figure with the scenario's extra fields.
type hvpODEResult struct {
	result
	GradientMedian float64 `json:"gradient_median"`
	Ratio          float64 `json:"ratio"`     // median ÷ gradient_median
	RatioMin       float64 `json:"ratio_min"` // min ÷ the gradient's min: less sensitive to load
	GradientAllocs float64 `json:"gradient_allocs"`
	Params         int     `json:"params"`
	FwdSteps       int     `json:"fwd_steps"`
	BwdSteps       int     `json:"bwd_steps"`
	GradFwdSteps   int     `json:"gradient_fwd_steps"`
	GradBwdSteps   int     `json:"gradient_bwd_steps"`
	HvNorm         float64 `json:"hv_norm"`
}

func runHvpODE(b *bencher) error {
	ctx := context.Background()
	if err := runHvpODELV(ctx, b); err != nil {
		return err
	}
	return runHvpODENode(ctx, b)
}

// hvpDirection is a fixed direction of n components, sin(i + 1).
func hvpDirection[T ode.Float](n int) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(math.Sin(float64(i + 1)))
	}
	return v
}

func runHvpODELV(ctx context.Context, b *bencher) error {
	const rtol, atol = 1e-6, 1e-8
	prob := sensProblem()
	prob.VJPJVP = lotkavolterra.VJPJVP[float64]
	loss := ode.Loss[float64]{At: []float64{10}, Saved: sensLossSaved}
	hloss := ode.HvLoss[float64]{Loss: loss, SavedHv: func(_ []float64, _, uds, hvs [][]float64) {
		copy(hvs[0], uds[0])
	}}
	return hvpODECase(ctx, b, "Lotka-Volterra Tsit5 rtol 1e-6, H·v d(p, u0)", prob, loss, hloss, ode.Tol(rtol, atol))
}

func runHvpODENode(ctx context.Context, b *bencher) error {
	s, err := newNodeSetup(ctx, false)
	if err != nil {
		return err
	}
	hloss := ode.HvLoss[float32]{Loss: s.loss, SavedHv: func(_ []float64, _, uds, hvs [][]float32) {
		for k := range hvs {
			for j := range hvs[k] {
				hvs[k][j] = 2 * uds[k][j]
			}
		}
	}}
	prob := s.prob
	prob.P = s.θ
	return hvpODECase(ctx, b, "spiral 2-50-2 Tsit5 rtol 1e-3, H·v d(θ, u0)", prob, s.loss, hloss, ode.Tol(nodeRTol, nodeATol))
}

// hvpODECase measures the product and the gradient of one problem.
func hvpODECase[T ode.Float](ctx context.Context, b *bencher, name string, prob ode.Problem[T], loss ode.Loss[T], hloss ode.HvLoss[T], tol ode.Option) error {
	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	v := hvpDirection[T](len(prob.P) + len(prob.U0))
	settleGC()
	g, gm, err := measured(b.measure, name+" gradient", func() (*ode.GradientResult[T], error) { return gs.Gradient(ctx, prob.P, loss) })
	if err != nil {
		return err
	}
	settleGC()
	h, hm, err := measured(b.measure, name, func() (*ode.HvResult[T], error) { return hs.Hv(ctx, prob.P, hloss, v) })
	if err != nil {
		return err
	}
	var norm float64
	for _, x := range h.HvP {
		norm += float64(x) * float64(x)
	}
	for _, x := range h.HvU0 {
		norm += float64(x) * float64(x)
	}
	r := hvpODEResult{result: scaled(hm, "us"), GradientMedian: round3(gm.median / 1e3), Ratio: round3(hm.median / gm.median), RatioMin: round3(hm.min / gm.min),
		GradientAllocs: gm.allocs, Params: len(prob.P),
		FwdSteps: h.Forward.Accepted, BwdSteps: h.Backward.Accepted,
		GradFwdSteps: g.Forward.Accepted, GradBwdSteps: g.Backward.Accepted, HvNorm: math.Sqrt(norm)}
	r.Case = name
	r.Note = "reused HvSolver and GradientSolver (InterpolatingAdjoint), Tsit5 at the same tolerances; gradient_median in the same unit; goal: ratio ≤ 4, 0 allocs"
	b.emitExtra(&r.result, &r)
	return nil
}
