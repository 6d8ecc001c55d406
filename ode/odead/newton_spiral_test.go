package odead_test

import (
	"context"
	"testing"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// spiralRace is Newton-CG, with the ODE's Hessian-vector products,
// against L-BFGS on the spiral fit from the PyTorch peer's weights: L-BFGS
// runs 60 iterations, then Newton-CG runs until it first reaches the loss
// L-BFGS ended at. The cost of each is the time spent in the objective
// and in Hv, measured in the same process; gradient equivalents divide it
// by the mean time of one of L-BFGS's gradients.
type spiralRace struct {
	start                  float64 // the loss at the peer's weights
	lbfgsLoss              float64
	lbfgsGrads             int
	lbfgsTime              time.Duration
	newtonLoss             float64 // where Newton-CG stopped
	newtonIters            int
	reached                bool // Newton-CG reached lbfgsLoss
	reachGrads, reachHvs   int  // the calls it took to get there
	reachTime              time.Duration
	newtonGrads, newtonHvs int
}

// equivalents is Newton-CG's cost to reach L-BFGS's loss in L-BFGS's mean
// gradient times.
func (r *spiralRace) equivalents() float64 {
	return float64(r.reachTime) / (float64(r.lbfgsTime) / float64(r.lbfgsGrads))
}

// runSpiralRace runs the race. Both minimise the same objective, the
// loss and gradient of a Tsit5 solve at rtol 1e-5, atol 1e-7 by
// InterpolatingAdjoint. Newton-CG (MaxCG 20, CGTol 0.1) takes its products
// at rtol 1e-3, atol 1e-5: an inexact Newton method needs products only
// to well within its CG tolerance, and a product at the gradient's
// tolerance costs about twice as much (bench hvp-ode).
func runSpiralRace(tb testing.TB) *spiralRace {
	tb.Helper()
	ctx := context.Background()
	f := loadSpiralFixture(tb)
	prob, θ0, _ := spiralProblem(tb, f)
	loss := spiralLoss(f)
	tol := ode.Tol(1e-5, 1e-7)
	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		tb.Fatal(err)
	}
	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-3, 1e-5))
	if err != nil {
		tb.Fatal(err)
	}
	obj := gs.Objective(ctx, loss)
	race := &spiralRace{start: f.Loss}

	var grads, hvs int
	var spent time.Duration
	target, tracking := 0.0, false
	fg := func(θ, g []float32) (float64, error) {
		t0 := time.Now()
		v, err := obj(θ, g)
		spent += time.Since(t0)
		grads++
		if tracking && !race.reached && err == nil && v <= target {
			race.reached = true
			race.reachGrads, race.reachHvs, race.reachTime = grads, hvs, spent
		}
		return v, err
	}
	θ := append([]float32(nil), θ0...)
	lr, err := optimisers.Minimize(fg, θ, &optimize.LBFGS{}, &optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-6})
	if lr == nil {
		tb.Fatal(err)
	}
	race.lbfgsLoss, race.lbfgsGrads, race.lbfgsTime = lr.F, grads, spent

	hloss := ode.HvLoss[float32]{Loss: loss}
	dir := make([]float32, len(θ0)+2)
	hv := func(θ, v, out []float32) error {
		t0 := time.Now()
		defer func() { spent += time.Since(t0) }()
		hvs++
		copy(dir, v)
		r, err := hs.Hv(ctx, θ, hloss, dir)
		if err != nil {
			return err
		}
		copy(out, r.HvP)
		return nil
	}
	grads, spent, target, tracking = 0, 0, lr.F, true
	θ = append(θ[:0], θ0...)
	nr, err := optimisers.Minimize(fg, θ, &optimisers.NewtonCG{Hv: hv, MaxCG: 20, CGTol: 0.1}, &optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-6})
	if nr == nil {
		tb.Fatal(err)
	}
	race.newtonLoss, race.newtonIters, race.newtonGrads, race.newtonHvs = nr.F, nr.Stats.MajorIterations, grads, hvs
	return race
}

// TestNewtonCGSpiralFit: Newton-CG reaches the loss L-BFGS ends at after
// 60 iterations with fewer calls, gradients and products together, than
// L-BFGS's gradients. A product costs at least a gradient (it computes
// one), so that is a necessary condition of the cost comparison, which
// is timed: the figures are logged, and BenchmarkNewtonCGSpiralFit
// measures them.
func TestNewtonCGSpiralFit(t *testing.T) {
	if testing.Short() {
		t.Skip("a fit of 252 parameters")
	}
	r := runSpiralRace(t)
	t.Logf("from loss %.6g: L-BFGS %d gradients to %.6g (%v); Newton-CG %d iterations, %d gradients and %d products to %.6g",
		r.start, r.lbfgsGrads, r.lbfgsLoss, r.lbfgsTime, r.newtonIters, r.newtonGrads, r.newtonHvs, r.newtonLoss)
	if !r.reached {
		t.Fatalf("Newton-CG did not reach L-BFGS's loss %.6g in %d iterations (it ended at %.6g)", r.lbfgsLoss, r.newtonIters, r.newtonLoss)
	}
	t.Logf("Newton-CG reached it after %d gradients and %d products, %v: %.1f of L-BFGS's gradient times (this run, not a benchmark)",
		r.reachGrads, r.reachHvs, r.reachTime, r.equivalents())
	if calls := r.reachGrads + r.reachHvs; calls >= r.lbfgsGrads {
		t.Errorf("Newton-CG took %d gradients + %d products = %d calls to reach L-BFGS's loss, want fewer than L-BFGS's %d gradients",
			r.reachGrads, r.reachHvs, calls, r.lbfgsGrads)
	}
	if !(r.lbfgsLoss < r.start/2) {
		t.Errorf("L-BFGS ends at %g from %g: want below half", r.lbfgsLoss, r.start)
	}
}

// BenchmarkNewtonCGSpiralFit times the race of TestNewtonCGSpiralFit:
// per run, Newton-CG's time to reach L-BFGS's loss (newton-ms), L-BFGS's
// time for its 60 iterations (lbfgs-ms), their ratio, and Newton-CG's
// cost in L-BFGS's gradients (gradient-equivalents, against
// lbfgs-gradients). Quote the median of -count runs.
func BenchmarkNewtonCGSpiralFit(b *testing.B) {
	var newton, lbfgs time.Duration
	var eq float64
	var grads, runs int
	for b.Loop() {
		r := runSpiralRace(b)
		if !r.reached {
			b.Fatalf("Newton-CG did not reach L-BFGS's loss %.6g (it ended at %.6g)", r.lbfgsLoss, r.newtonLoss)
		}
		newton += r.reachTime
		lbfgs += r.lbfgsTime
		eq += r.equivalents()
		grads += r.lbfgsGrads
		runs++
	}
	n := float64(runs)
	b.ReportMetric(float64(newton.Milliseconds())/n, "newton-ms")
	b.ReportMetric(float64(lbfgs.Milliseconds())/n, "lbfgs-ms")
	b.ReportMetric(float64(newton)/float64(lbfgs), "time-ratio")
	b.ReportMetric(eq/n, "gradient-equivalents")
	b.ReportMetric(float64(grads)/n, "lbfgs-gradients")
}
