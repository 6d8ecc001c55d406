package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Scenario node: the spiral neural ODE of SciMLSensitivity's benchmark
// page, the case of ../shared/peers/torch_node_bench.py (PyTorch autograd
// through fixed-step RK4):
//
//	u0 = (2, 0), t ∈ [0, 1.5], 30 save times (float32 linspace, t = 0 included),
//	data: u' = ((u³)ᵀA)ᵀ, A = [−0.1 2; −2 −0.1], by float32 RK4, 50 steps per save interval,
//	network u → u³ → Dense(2, 50) → tanh → Dense(50, 2)   (252 parameters),
//	L = Σ_k ‖u(t_k) − data_k‖²   (the t = 0 term is 0).
//
// Cases:
//
//   - The peer's: its deterministic weights W[i, j] = 0.1·sin(7i + 3j +
//     k), RK4 with 4 steps per save interval (116 steps of 1.5/116; the
//     save times are read from the steps' interpolants, within 6e-8 of the
//     step ends), the gradient by DiscreteAdjoint in a reused
//     GradientSolver; and the loss alone by a reused Integrator (the
//     peer's "forward"). Each line carries the loss and its relative
//     difference from the peer's (192.64926), the gradient's norm (the
//     peer's is 390.73017). ode/odead/spiral_test.go checks the full gradient
//     against the peer's (ode/odead/testdata/spiral_torch.json).
//   - SciMLSensitivity's setting: weights from model.Init (PCG seed 1, 2),
//     Tsit5 at rtol 1e-3, atol 1e-6, the gradient with respect to θ and
//     u0 by each sensitivity method in a reused GradientSolver. Each line
//     carries the steps and f evaluations, the allocations per gradient
//     and rel_diff_vs_discrete: ‖g − g_DiscreteAdjoint‖/‖g_DiscreteAdjoint‖
//     over (dL/dθ, dL/du0), both at rtol 1e-6, atol 1e-6 (the goal is ≤
//     1e-3 for every method), and rel_diff_timed, the same at the timed
//     tolerances.

func init() {
	register(scenario{
		name:  "node",
		about: "spiral neural ODE 2-50-2 gradient: RK4 4 steps/interval by DiscreteAdjoint (the PyTorch peer's case), Tsit5 rtol 1e-3 by each sensitivity method",
		run:   runNode,
	})
}

// The peer's figures for its deterministic weights (torch_node_bench.py's
// "cross-check values"; ode/odead/testdata/spiral_torch.json has the gradient).
const (
	nodeTorchLoss     = 192.64926147460938
	nodeTorchGradNorm = 390.73016357421875
)

// nodeSaves is the number of save times and nodeRK4Steps the peer's RK4
// steps per save interval.
const (
	nodeSaves    = 30
	nodeRK4Steps = 4
	nodeT1       = 1.5
)

// nodeTimes is torch.linspace(0, 1.5, 30) in float32, as float64, the
// way PyTorch 1.13's CPU kernel computes it here: element i is start +
// i·step before the halfway point and end − (29 − i)·step after it, except
// that the first 16 come from two AVX2 vectors of 8, base + k·step with
// base = start + 8·step for the second (which makes t_15 = 8·step + 7·step
// one ulp above end − 14·step). TestNodeMatchesTorchFixture checks them
// against the peer's dump.
func nodeTimes() []float64 {
	const n, lanes = nodeSaves, 8
	step := float32(nodeT1) / float32(n-1)
	ts := make([]float64, n)
	for i := range n {
		switch {
		case i < 2*lanes: // the vectorized part; both vectors start before halfway
			base := float32(i/lanes*lanes) * step
			ts[i] = float64(base + float32(float32(i%lanes)*step)) // no FMA
		case i < n/2:
			ts[i] = float64(float32(i) * step)
		default:
			ts[i] = float64(float32(nodeT1) - float32(n-1-i)*step)
		}
	}
	return ts
}

// nodeTrueF is the true dynamics u' = ((u³)ᵀA)ᵀ.
func nodeTrueF(du, u []float32, _ []float32, _ float64) {
	c0, c1 := u[0]*u[0]*u[0], u[1]*u[1]*u[1]
	du[0] = -0.1*c0 - 2*c1
	du[1] = 2*c0 - 0.1*c1
}

// nodeData is the true trajectory from (2, 0) at ts, (len(ts), 2)
// row-major: float32 RK4 with 50 steps per save interval, as the peer
// makes it.
func nodeData(ctx context.Context, ts []float64) ([]float32, error) {
	return nodeDataFrom(ctx, ts, []float32{2, 0})
}

// nodeDataFrom is nodeData from u0.
func nodeDataFrom(ctx context.Context, ts []float64, u0 []float32) ([]float32, error) {
	T1 := ts[len(ts)-1]
	steps := 50 * (len(ts) - 1)
	prob := ode.Problem[float32]{F: nodeTrueF, U0: slices.Clone(u0), T0: ts[0], T1: T1}
	sol, err := ode.Solve(ctx, prob, ode.RK4(), ode.FixedStep(T1/float64(steps)), ode.SaveAt(ts...))
	if err != nil {
		return nil, fmt.Errorf("the data: %w", err)
	}
	if len(sol.U) != len(ts) {
		return nil, fmt.Errorf("the data: %d states saved, want %d", len(sol.U), len(ts))
	}
	data := make([]float32, 0, 2*len(ts))
	for _, u := range sol.U {
		data = append(data, u...)
	}
	return data, nil
}

// nodeNet is the network u → u³ → Dense(2, 50) → tanh → Dense(50, 2): the
// cube is a parameter-free layer, so the parameters are "1.weight" (50,
// 2), "1.bias", "3.weight" (2, 50), "3.bias", in PyTorch's order.
func nodeNet() model.Layer {
	cube := model.Func("cube", func(x ad.Var) ad.Var { return ad.Mul(x, ad.Square(x)) })
	return model.Chain(cube, model.Dense(2, 50), model.Tanh(), model.Dense(50, 2))
}

// nodeTorchWeights are the peer's weights 0.1·sin(7i + 3j + k) (k = 0, 1,
// 2, 3 for W1, b1, W2, b2; j = 0 for a bias), laid out by net's paths.
func nodeTorchWeights(net model.Layer) ([]float32, error) {
	lay, err := model.Layout(net)
	if err != nil {
		return nil, err
	}
	θ := make([]float32, lay.Len())
	for k, path := range []string{"1.weight", "1.bias", "3.weight", "3.bias"} {
		leaf, ok := lay.Find(path)
		if !ok {
			return nil, fmt.Errorf("no parameter %q in the network", path)
		}
		cols := 1
		if len(leaf.Shape) == 2 {
			cols = leaf.Shape[1]
		}
		for x := range leaf.Size() {
			i, j := x/cols, x%cols
			θ[leaf.Offset+x] = float32(0.1 * math.Sin(float64(7*i+3*j+k)))
		}
	}
	return θ, nil
}

// nodeLoss is L = Σ_k ‖u(t_k) − data_k‖² over ts.
func nodeLoss(ts []float64, data []float32) ode.Loss[float32] {
	return ode.Loss[float32]{At: ts, Saved: func(_ []float64, us, dl [][]float32) float64 {
		return nodeLossOf(us, dl, data)
	}}
}

// nodeLossOf is the loss of the saved states us and, if dl is not nil, its
// gradient.
func nodeLossOf(us, dl [][]float32, data []float32) float64 {
	var l float64
	for k, u := range us {
		for j := range u {
			d := u[j] - data[2*k+j]
			if dl != nil {
				dl[k][j] = 2 * d
			}
			l += float64(d) * float64(d)
		}
	}
	return l
}

// nodeSetup is the problem, loss and parameters of a case.
type nodeSetup struct {
	ts   []float64
	data []float32
	net  model.Layer
	θ    []float32
	prob ode.Problem[float32]
	loss ode.Loss[float32]
}

// newNodeSetup builds the problem with the peer's weights (torch) or with
// model.Init's (seeded).
func newNodeSetup(ctx context.Context, torch bool) (*nodeSetup, error) {
	s := &nodeSetup{ts: nodeTimes(), net: nodeNet()}
	var err error
	if s.data, err = nodeData(ctx, s.ts); err != nil {
		return nil, err
	}
	if torch {
		s.θ, err = nodeTorchWeights(s.net)
	} else {
		s.θ, err = model.Init(s.net, rand.New(rand.NewPCG(1, 2)))
	}
	if err != nil {
		return nil, err
	}
	if s.prob, err = odead.NeuralProblem(s.net, []float32{2, 0}, s.ts[0], s.ts[len(s.ts)-1], s.θ); err != nil {
		return nil, err
	}
	s.loss = nodeLoss(s.ts, s.data)
	return s, nil
}

// nodeRK4Step is the option of the peer's case: 4 RK4 steps per save
// interval. (FixedStep(interval/4) with TStops at the save times would be
// the peer's steps exactly, but a fixed step shortened to land on a TStop
// stays shortened in ode, which ends in sliver steps: see
// ode/odead/spiral_test.go's TestSpiralFixedStepTStops.)
func nodeRK4Step() ode.Option {
	return ode.FixedStep(nodeT1 / float64(nodeRK4Steps*(nodeSaves-1)))
}

// The tolerances of the adaptive case (SciMLSensitivity's benchmark) and
// of the agreement check.
const (
	nodeRTol, nodeATol           = 1e-3, 1e-6
	nodeAgreeRTol, nodeAgreeATol = 1e-6, 1e-6
)

// newNodeTsit5Solver is the reusable gradient solver of the adaptive case.
func newNodeTsit5Solver(s *nodeSetup, sens ode.Sensitivity, rtol, atol float64) (*ode.GradientSolver[float32], error) {
	return ode.NewGradientSolver(s.prob, ode.Tsit5(), sens, ode.Tol(rtol, atol))
}

// nodeResult is a figure with the scenario's extra fields.
type nodeResult struct {
	result
	Method      string   `json:"method"`
	Sensitivity string   `json:"sensitivity,omitempty"`
	RTol        float64  `json:"rtol,omitempty"`
	ATol        float64  `json:"atol,omitempty"`
	Dt          float64  `json:"dt,omitempty"`
	Params      int      `json:"params"`
	FwdSteps    int      `json:"fwd_steps"`
	FwdRejected int      `json:"fwd_rejected"`
	BwdSteps    int      `json:"bwd_steps"`
	BwdRejected int      `json:"bwd_rejected"`
	FEvals      int      `json:"fevals"` // F evaluations, forward + backward counters
	Loss        float64  `json:"loss"`
	GradNorm    *float64 `json:"grad_norm,omitempty"` // ‖(dL/dθ, dL/du0)‖ (RK4 case: ‖dL/dθ‖, as the peer's)
	// RK4 case: against the peer's printed loss and gradient norm
	LossRelDiffTorch *float64 `json:"loss_rel_diff_torch,omitempty"`
	GradNormRelDiff  *float64 `json:"grad_norm_rel_diff_torch,omitempty"`
	// adaptive case: ‖g − g_DiscreteAdjoint‖/‖g_DiscreteAdjoint‖ over
	// (dL/dθ, dL/du0), both at rtol = atol = 1e-6, and at the timed
	// tolerances
	RelDiffVsDiscrete *float64 `json:"rel_diff_vs_discrete,omitempty"`
	RelDiffTimed      *float64 `json:"rel_diff_timed,omitempty"`
}

// emitNode is bencher.emit for a figure with extra fields.
func (b *bencher) emitNode(r nodeResult) { b.emitExtra(&r.result, &r) }

// nodeFlat appends (dL/dθ, dL/du0) of g to dst as float64.
func nodeFlat(dst []float64, g *ode.GradientResult[float32]) []float64 {
	dst = dst[:0]
	for _, x := range g.P {
		dst = append(dst, float64(x))
	}
	for _, x := range g.U0 {
		dst = append(dst, float64(x))
	}
	return dst
}

func nodeNorm(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// nodeRelDiff is ‖a − b‖/‖b‖.
func nodeRelDiff(a, b []float64) float64 {
	var d float64
	for i := range b {
		d += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(d) / nodeNorm(b)
}

func runNode(b *bencher) error {
	ctx := context.Background()
	if err := runNodeRK4(ctx, b); err != nil {
		return fmt.Errorf("RK4 case: %w", err)
	}
	if err := runNodeTsit5(ctx, b); err != nil {
		return fmt.Errorf("Tsit5 case: %w", err)
	}
	if err := runNodeEnsemble(ctx, b); err != nil {
		return fmt.Errorf("ensemble case: %w", err)
	}
	return nil
}

// runNodeRK4 is the peer's case: its weights, RK4 with 4 steps per save
// interval, the gradient by DiscreteAdjoint and the loss alone.
func runNodeRK4(ctx context.Context, b *bencher) error {
	s, err := newNodeSetup(ctx, true)
	if err != nil {
		return err
	}
	dt := nodeT1 / float64(nodeRK4Steps*(nodeSaves-1))
	wantSteps := nodeRK4Steps * (nodeSaves - 1)

	// The loss alone: a reused Integrator, Reinit + Run + the loss of the
	// saved states (the peer's forward under no_grad).
	it, err := ode.NewIntegrator(s.prob, ode.RK4(), nodeRK4Step(), ode.SaveAt(s.ts...))
	if err != nil {
		return err
	}
	var runErr error
	var l float64
	settleGC()
	fwd := b.measure(func() {
		if err := it.Reinit(s.prob.U0, s.prob.T0, s.prob.T1, s.θ); err != nil && runErr == nil {
			runErr = err
		}
		if err := it.Run(ctx); err != nil && runErr == nil {
			runErr = err
		}
		_, us := it.Saved()
		l = nodeLossOf(us, nil, s.data)
	})
	if runErr != nil {
		return fmt.Errorf("forward solve: %w", runErr)
	}
	st := it.Stats()
	if st.Accepted != wantSteps {
		return fmt.Errorf("forward solve: %d steps, want %d", st.Accepted, wantSteps)
	}
	lossDiff := math.Abs(l-nodeTorchLoss) / nodeTorchLoss
	r := nodeResult{result: scaled(fwd, "us"), Method: "RK4", Dt: dt, Params: len(s.θ),
		FwdSteps: st.Accepted, FwdRejected: st.Rejected, FEvals: st.FEvals, Loss: l, LossRelDiffTorch: ptr(lossDiff)}
	r.Case = "spiral 2-50-2 RK4 4 steps/interval, loss only, reused Integrator"
	r.Note = "torch weights 0.1 sin(7i+3j+k); Reinit + Run + loss, no gradient: compare with run.sh node's torch forward"
	b.emitNode(r)

	gs, err := ode.NewGradientSolver(s.prob, ode.RK4(), ode.DiscreteAdjoint{}, nodeRK4Step())
	if err != nil {
		return err
	}
	settleGC()
	g, grad, err := measured(b.measure, "gradient", func() (*ode.GradientResult[float32], error) { return gs.Gradient(ctx, s.θ, s.loss) })
	if err != nil {
		return err
	}
	if g.Forward.Accepted != wantSteps {
		return fmt.Errorf("gradient: %d forward steps, want %d", g.Forward.Accepted, wantSteps)
	}
	var gp []float64
	for _, x := range g.P {
		gp = append(gp, float64(x))
	}
	gn := nodeNorm(gp)
	r = nodeResult{result: scaled(grad, "us"), Method: "RK4", Sensitivity: "DiscreteAdjoint", Dt: dt, Params: len(s.θ),
		FwdSteps: g.Forward.Accepted, FwdRejected: g.Forward.Rejected,
		BwdSteps: g.Backward.Accepted, BwdRejected: g.Backward.Rejected,
		FEvals: g.Forward.FEvals + g.Backward.FEvals, Loss: g.Value, GradNorm: ptr(gn),
		LossRelDiffTorch: ptr(math.Abs(g.Value-nodeTorchLoss) / nodeTorchLoss),
		GradNormRelDiff:  ptr(math.Abs(gn-nodeTorchGradNorm) / nodeTorchGradNorm)}
	r.Case = "spiral 2-50-2 RK4 4 steps/interval, gradient DiscreteAdjoint"
	r.Note = "torch weights; reused GradientSolver, gs.Gradient per call; goal: ≥ 100× faster than run.sh node's torch gradient (autograd through RK4), same sitting; full gradient vs torch in ode/odead/spiral_test.go"
	b.emitNode(r)
	return nil
}

// runNodeTsit5 is SciMLSensitivity's setting: model.Init's weights, Tsit5
// at rtol 1e-3, atol 1e-6, the gradient with respect to θ and u0 by each
// method.
func runNodeTsit5(ctx context.Context, b *bencher) error {
	s, err := newNodeSetup(ctx, false)
	if err != nil {
		return err
	}
	// The agreement check: every method against DiscreteAdjoint at rtol =
	// atol = 1e-6, and at the timed tolerances.
	ref, err := nodeTsit5Grads(ctx, s, nodeAgreeRTol, nodeAgreeATol)
	if err != nil {
		return err
	}
	timedRef, err := nodeTsit5Grads(ctx, s, nodeRTol, nodeATol)
	if err != nil {
		return err
	}
	last := len(sensMethods) - 1
	for i, sens := range sensMethods {
		name := sensName(sens)
		gs, err := newNodeTsit5Solver(s, sens, nodeRTol, nodeATol)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		settleGC()
		g, sm, err := measured(b.measure, name, func() (*ode.GradientResult[float32], error) { return gs.Gradient(ctx, s.θ, s.loss) })
		if err != nil {
			return err
		}
		flat := nodeFlat(nil, g)
		r := nodeResult{result: scaled(sm, "us"), Method: "Tsit5", Sensitivity: name, RTol: nodeRTol, ATol: nodeATol,
			Params: len(s.θ), FwdSteps: g.Forward.Accepted, FwdRejected: g.Forward.Rejected,
			BwdSteps: g.Backward.Accepted, BwdRejected: g.Backward.Rejected,
			FEvals: g.Forward.FEvals + g.Backward.FEvals, Loss: g.Value, GradNorm: ptr(nodeNorm(flat)),
			RelDiffVsDiscrete: ptr(nodeRelDiff(ref[i], ref[last])),
			RelDiffTimed:      ptr(nodeRelDiff(timedRef[i], timedRef[last]))}
		r.Case = "spiral 2-50-2 Tsit5 rtol 1e-3, gradient d(θ, u0) " + name
		r.Note = "model.Init weights (PCG 1, 2); reused GradientSolver, gs.Gradient per call; goal: the fastest method ≤ 166 µs per gradient, 10× SciMLSensitivity's best published figure for this problem (1.66 ms, InterpolatingAdjoint + ReverseDiffVJP, on other hardware); rel_diff_vs_discrete at rtol = atol = 1e-6, goal ≤ 1e-3; 0 allocs"
		b.emitNode(r)
	}
	return nil
}

// settleGC finishes any garbage collection that the setup's allocations
// started, before a figure's warm-up. The ad right-hand side keeps its
// tape in a sync.Pool, which two collections empty; measure's own
// runtime.GC() after the warm-up, while a background cycle is still
// running, would be two, and the first timed call would grow a new tape
// (~40 allocations) — a figure of the setup, not of the gradient.
func settleGC() { runtime.GC() }

// nodeTsit5Grads is (dL/dθ, dL/du0) by each of sensMethods at the given
// tolerances.
func nodeTsit5Grads(ctx context.Context, s *nodeSetup, rtol, atol float64) ([][]float64, error) {
	out := make([][]float64, len(sensMethods))
	for i, sens := range sensMethods {
		gs, err := newNodeTsit5Solver(s, sens, rtol, atol)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sensName(sens), err)
		}
		g, err := gs.Gradient(ctx, s.θ, s.loss)
		if err != nil {
			return nil, fmt.Errorf("%s at rtol %g: %w", sensName(sens), rtol, err)
		}
		out[i] = nodeFlat(nil, g)
	}
	return out, nil
}
