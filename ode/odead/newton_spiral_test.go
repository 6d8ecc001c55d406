package odead_test

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// hvGradients is the cost of one Hessian-vector product in gradients,
// rounded up from bench hvp-ode's spiral ratio (2.7–2.8 under load).
const hvGradients = 3

// Newton-CG with the ODE's Hessian-vector products against L-BFGS on the
// spiral fit, from the PyTorch peer's weights: the cost, in gradient
// equivalents (a product counted as hvGradients gradients), at which
// Newton-CG first reaches the loss L-BFGS ends at after 60 iterations.
// Both must lower the loss; the figures are logged for the note.
func TestNewtonCGSpiralFit(t *testing.T) {
	if testing.Short() {
		t.Skip("a fit of 252 parameters")
	}
	ctx := context.Background()
	f := loadSpiralFixture(t)
	prob, θ0, _ := spiralProblem(t, f)
	loss := spiralLoss(f)
	tol := ode.Tol(1e-5, 1e-7)
	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		t.Fatal(err)
	}
	obj := gs.Objective(ctx, loss)
	var grads int
	var trace []float64 // the loss at each gradient, and its cost so far
	var hvs int
	fg := func(θ, g []float32) (float64, error) {
		v, err := obj(θ, g)
		if g != nil {
			grads++
			trace = append(trace, v, float64(grads+hvGradients*hvs))
		}
		return v, err
	}

	θ := append([]float32(nil), θ0...)
	lr, err := optimisers.Minimize(fg, θ, &optimize.LBFGS{}, &optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-6})
	if lr == nil {
		t.Fatal(err)
	}
	lbfgsLoss, lbfgsCost := lr.F, grads

	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		t.Fatal(err)
	}
	hloss := ode.HvLoss[float32]{Loss: loss}
	dir := make([]float32, len(θ0)+2)
	hv := func(θ, v, out []float32) error {
		hvs++
		copy(dir, v)
		r, err := hs.Hv(ctx, θ, hloss, dir)
		if err != nil {
			return err
		}
		copy(out, r.HvP)
		return nil
	}
	grads, trace = 0, trace[:0]
	θ = append(θ[:0], θ0...)
	nr, err := optimisers.Minimize(fg, θ, &optimisers.NewtonCG{Hv: hv, MaxCG: 20}, &optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-6})
	if nr == nil {
		t.Fatal(err)
	}
	reached := costTo(trace, lbfgsLoss)
	t.Logf("from loss %.6g: L-BFGS %d iterations, %d gradients, loss %.6g; Newton-CG %d iterations, %d gradients + %d products (= %d gradient equivalents), loss %.6g; Newton-CG reached L-BFGS's loss at %v gradient equivalents (−1: not reached)",
		f.Loss, lr.Stats.MajorIterations, lbfgsCost, lbfgsLoss, nr.Stats.MajorIterations, grads, hvs, grads+hvGradients*hvs, nr.F, reached)
	// And the other way: L-BFGS run on until it reaches Newton-CG's loss.
	grads, hvs, trace = 0, 0, trace[:0]
	θ = append(θ[:0], θ0...)
	lr, _ = optimisers.Minimize(fg, θ, &optimize.LBFGS{}, &optimize.Settings{MajorIterations: 2000, GradientThreshold: 1e-6})
	t.Logf("L-BFGS reached Newton-CG's loss %.6g at %v gradients (−1: not within %d gradients, loss %.6g)", nr.F, costTo(trace, nr.F), grads, lr.F)
	if !(lbfgsLoss < f.Loss/2) || !(nr.F < f.Loss/2) {
		t.Errorf("L-BFGS ends at %g, Newton-CG at %g, from %g: want both below half", lbfgsLoss, nr.F, f.Loss)
	}
}

// costTo is the cost in trace (loss, cost pairs) at which the loss first
// falls to at most target, or −1.
func costTo(trace []float64, target float64) float64 {
	for k := 0; k < len(trace); k += 2 {
		if trace[k] <= target {
			return trace[k+1]
		}
	}
	return -1
}
