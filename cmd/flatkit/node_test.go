package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode"
)

// TestBenchNodeQuick runs the node scenario with tiny sample counts and
// checks that every case has its figure, the RK4 case the peer's step
// count, loss and gradient norm, every method of the Tsit5 case its step
// counters, agreement with DiscreteAdjoint within 1e-3 and no allocation
// per gradient; not the timings.
func TestBenchNodeQuick(t *testing.T) {
	// One P: the right-hand side's ad tape lives in a sync.Pool
	// (ode/adfunc.go), and after a garbage collection (measure runs one
	// before its timed batches) a pooled item is only found again on the
	// P that put it; on another P the next call makes and grows a new tape
	// (~35 allocations, once per figure, over ~21 calls in quick mode).
	// With one P the figure counts the gradient's own allocations.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// 21 samples, as in TestBenchSensQuick: the runtime's own allocations
	// then stay below 1 per call. Under -race, where allocations are not
	// checked, 1 (ForwardSensitivity takes ~1 s a gradient there).
	samples := "21"
	if race.Enabled {
		samples = "1"
	}
	cases := runBench(t, []string{"-samples", samples, "node"})
	for c, m := range cases {
		keys := []string{"fwd_steps", "bwd_steps", "loss"}
		if _, ok := m["trajectories"]; ok {
			keys = []string{"steps", "loss", "grad_norm", "workers"}
		}
		for _, k := range keys {
			if _, ok := m[k].(float64); !ok {
				t.Errorf("case %q: field %q missing or not a number", c, k)
			}
		}
	}
	if want := 2 + len(sensMethods) + 2; len(cases) != want {
		t.Errorf("%d figures, want %d", len(cases), want)
	}
	wantSteps := float64(nodeRK4Steps * (nodeSaves - 1))
	for _, name := range []string{
		"spiral 2-50-2 RK4 4 steps/interval, loss only, reused Integrator",
		"spiral 2-50-2 RK4 4 steps/interval, gradient DiscreteAdjoint",
	} {
		m := figure(t, cases, name)
		if m == nil {
			continue
		}
		if m["fwd_steps"].(float64) != wantSteps || m["fwd_rejected"].(float64) != 0 {
			t.Errorf("%s: %v steps, %v rejected; want %v, 0", name, m["fwd_steps"], m["fwd_rejected"], wantSteps)
		}
		checkAtMost(t, name, m, "loss_rel_diff_torch", 1e-4)
		if a := m["allocs"].(float64); a >= 1 && !race.Enabled {
			t.Errorf("%s: %v allocs per call, want 0", name, a)
		}
	}
	if m := cases["spiral 2-50-2 RK4 4 steps/interval, gradient DiscreteAdjoint"]; m != nil {
		if e, ok := m["grad_norm_rel_diff_torch"].(float64); !ok || !(e <= 1e-4) {
			t.Errorf("RK4 gradient: grad_norm_rel_diff_torch %v, want ≤ 1e-4", m["grad_norm_rel_diff_torch"])
		}
	}
	for _, s := range sensMethods {
		name := "spiral 2-50-2 Tsit5 rtol 1e-3, gradient d(θ, u0) " + sensName(s)
		m := figure(t, cases, name)
		if m == nil {
			continue
		}
		checkAtMost(t, name, m, "rel_diff_vs_discrete", 1e-3)
		if _, ok := m["rel_diff_timed"].(float64); !ok {
			t.Errorf("%s: rel_diff_timed missing", name)
		}
		// As in TestBenchSensQuick: the runtime's own allocations show as
		// a fraction per call in quick mode; a gradient that allocated
		// would show at least 1. TestNodeGradientAllocatesNothing pins
		// the gradient itself at exactly 0.
		if a := m["allocs"].(float64); a >= 1 && !race.Enabled { // -race: sync.Pool drops items on purpose
			t.Errorf("%s: %v allocs per gradient, want 0", name, a)
		}
		checkSensSteps(t, name, s, m)
	}
	// The ensemble case: both lines, equal losses (the case itself fails
	// unless the gradients are equal bit for bit), and the 2-worker line's
	// speedup, whatever its value on a shared machine.
	one := cases[fmt.Sprintf("spiral 2-50-2 ensemble of %d, Tsit5 rtol 1e-3, gradient dθ InterpolatingAdjoint, 1 worker", nodeEnsembleQuick)]
	two := cases[fmt.Sprintf("spiral 2-50-2 ensemble of %d, Tsit5 rtol 1e-3, gradient dθ InterpolatingAdjoint, 2 workers", nodeEnsembleQuick)]
	switch {
	case one == nil || two == nil:
		t.Errorf("ensemble case: figures for 1 and 2 workers missing (%v, %v)", one != nil, two != nil)
	case one["loss"] != two["loss"] || one["grad_norm"] != two["grad_norm"]:
		t.Errorf("ensemble case: 1 worker's loss %v, gradient norm %v; 2 workers' %v, %v", one["loss"], one["grad_norm"], two["loss"], two["grad_norm"])
	case !(one["loss"].(float64) > 0):
		t.Errorf("ensemble case: loss %v", one["loss"])
	default:
		if _, ok := two["speedup_vs_1"].(float64); !ok {
			t.Errorf("ensemble case: no speedup_vs_1 on the 2-worker line")
		}
	}
}

// TestNodeMatchesTorchFixture checks the scenario's own setup against the
// PyTorch peer's dump (ode/odead/testdata/spiral_torch.json): the save times and
// weights exactly, the data within 1e-5, and the RK4 DiscreteAdjoint
// gradient as the scenario times it within 1e-4 relative in norm.
func TestNodeMatchesTorchFixture(t *testing.T) {
	b, err := os.ReadFile("../../ode/odead/testdata/spiral_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		TS   []float64 `json:"ts"`
		Data []float32 `json:"data"`
		W    []float32 `json:"weights"`
		Loss float64   `json:"loss"`
		Grad []float64 `json:"grad"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := newNodeSetup(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.TS) != len(s.ts) || len(f.Data) != len(s.data) || len(f.W) != len(s.θ) || len(f.Grad) != len(s.θ) {
		t.Fatalf("fixture sizes %d, %d, %d, %d; want %d, %d, %d, %d", len(f.TS), len(f.Data), len(f.W), len(f.Grad),
			len(s.ts), len(s.data), len(s.θ), len(s.θ))
	}
	for i, want := range f.TS {
		if s.ts[i] != want {
			t.Errorf("ts[%d] = %v, torch.linspace's %v", i, s.ts[i], want)
		}
	}
	for i, want := range f.Data {
		if d := math.Abs(float64(s.data[i] - want)); d > 1e-5 {
			t.Errorf("data[%d] = %v, the peer's %v", i, s.data[i], want)
		}
	}
	// The network's layout is PyTorch's order (W1, b1, W2, b2), so θ is
	// the fixture's weights as they stand.
	for i, want := range f.W {
		if s.θ[i] != want {
			t.Fatalf("θ[%d] = %v, the peer's weight %v", i, s.θ[i], want)
		}
	}
	gs, err := ode.NewGradientSolver(s.prob, ode.RK4(), ode.DiscreteAdjoint{}, nodeRK4Step())
	if err != nil {
		t.Fatal(err)
	}
	g, err := gs.Gradient(ctx, s.θ, s.loss)
	if err != nil {
		t.Fatal(err)
	}
	var dd, nn float64
	for i, w := range f.Grad {
		d := float64(g.P[i]) - w
		dd += d * d
		nn += w * w
	}
	if e := math.Sqrt(dd / nn); !(e <= 1e-4) {
		t.Errorf("gradient: relative error in norm %.3g against torch's, want ≤ 1e-4", e)
	}
	if e := math.Abs(g.Value-f.Loss) / f.Loss; !(e <= 1e-4) {
		t.Errorf("loss %v, torch %v: relative error %.3g", g.Value, f.Loss, e)
	}
	if f.Loss != nodeTorchLoss {
		t.Errorf("nodeTorchLoss %v, the fixture's %v", nodeTorchLoss, f.Loss)
	}
	if e := math.Abs(math.Sqrt(nn)-nodeTorchGradNorm) / nodeTorchGradNorm; e > 1e-7 {
		t.Errorf("nodeTorchGradNorm %v, the fixture's gradient norm %v", nodeTorchGradNorm, math.Sqrt(nn))
	}
}

// TestNodeGradientAllocatesNothing pins each warm gradient solver of the
// scenario, as it is timed, at exactly zero allocations per gradient, and
// the RK4 case's loss-only solve.
func TestNodeGradientAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	check := func(name string, gs *ode.GradientSolver[float32], s *nodeSetup, runs int) {
		t.Helper()
		var err error
		grad := func() {
			if _, err = gs.Gradient(ctx, s.θ, s.loss); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		grad()
		if a := testing.AllocsPerRun(runs, grad); a != 0 {
			t.Errorf("%s: %v allocations per gradient, want 0", name, a)
		}
	}
	s, err := newNodeSetup(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := ode.NewGradientSolver(s.prob, ode.RK4(), ode.DiscreteAdjoint{}, nodeRK4Step())
	if err != nil {
		t.Fatal(err)
	}
	check("RK4 DiscreteAdjoint", gs, s, 20)

	it, err := ode.NewIntegrator(s.prob, ode.RK4(), nodeRK4Step(), ode.SaveAt(s.ts...))
	if err != nil {
		t.Fatal(err)
	}
	solve := func() {
		if err := it.Reinit(s.prob.U0, s.prob.T0, s.prob.T1, s.θ); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			t.Fatal(err)
		}
		_, us := it.Saved()
		nodeLossOf(us, nil, s.data)
	}
	solve()
	if a := testing.AllocsPerRun(20, solve); a != 0 {
		t.Errorf("RK4 loss only: %v allocations per solve, want 0", a)
	}

	s, err = newNodeSetup(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, sens := range sensMethods {
		gs, err := newNodeTsit5Solver(s, sens, nodeRTol, nodeATol)
		if err != nil {
			t.Fatal(err)
		}
		runs := 20
		if _, ok := sens.(ode.ForwardSensitivity); ok {
			runs = 3 // ~0.1 s a gradient
		}
		check("Tsit5 "+sensName(sens), gs, s, runs)
	}
}
