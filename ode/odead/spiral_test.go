package odead_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// spiralFixture is testdata/spiral_torch.json, written by
// `/usr/bin/python3 ../shared/peers/torch_node_bench.py --dump FILE`
// (PyTorch 1.13, float32): the spiral problem of SciMLSensitivity's
// benchmark page, its deterministic weights and the loss and gradient of
// autograd through fixed-step RK4.
type spiralFixture struct {
	TS     []float64 `json:"ts"`      // the 30 save times, torch.linspace(0, 1.5, 30) in float32 (t = 0 included)
	Data   []float32 `json:"data"`    // the true trajectory at ts, (30, 2) row-major; data[0] = u0 = (2, 0)
	W      []float32 `json:"weights"` // W1 (50, 2), b1 (50), W2 (2, 50), b2 (2), flat in this order
	Layout string    `json:"layout"`
	Steps  int       `json:"steps_per_interval"` // RK4 steps per save interval (4)
	Loss   float64   `json:"loss"`               // Σ_{k=1}^{29} ‖u(t_k) − data_k‖²
	Grad   []float64 `json:"grad"`               // dLoss/d(W1, b1, W2, b2), in the weights' order
}

func loadSpiralFixture(t testing.TB) *spiralFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/spiral_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var f spiralFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.TS) != 30 || len(f.Data) != 60 || len(f.W) != 252 || len(f.Grad) != 252 || f.Steps <= 0 {
		t.Fatalf("fixture: %d times, %d data, %d weights, %d gradient components, %d steps; want 30, 60, 252, 252, > 0",
			len(f.TS), len(f.Data), len(f.W), len(f.Grad), f.Steps)
	}
	return &f
}

// spiralNet is the peer's network u → u³ → Dense(2, 50) → tanh → Dense(50,
// 2), with the cube as a parameter-free layer: parameters "1.weight" (50,
// 2), "1.bias", "3.weight" (2, 50), "3.bias".
func spiralNet() model.Layer {
	cube := model.Func("cube", func(x ad.Var) ad.Var { return ad.Mul(x, ad.Square(x)) })
	return model.Chain(cube, model.Dense(2, 50), model.Tanh(), model.Dense(50, 2))
}

// spiralProblem is the fixture's problem: spiralNet with the fixture's
// weights (θ and perm as spiralTheta returns them), from the first data
// point over the fixture's times.
func spiralProblem(t testing.TB, f *spiralFixture) (prob ode.Problem[float32], θ []float32, perm []int) {
	t.Helper()
	net := spiralNet()
	θ, perm = spiralTheta(t, net, f.W)
	prob, err := odead.NeuralProblem(net, []float32{f.Data[0], f.Data[1]}, f.TS[0], f.TS[len(f.TS)-1], θ)
	if err != nil {
		t.Fatal(err)
	}
	return prob, θ, perm
}

// spiralTheta lays the fixture's weights (W1, b1, W2, b2, PyTorch order)
// into net's layout by path, and returns the offset of each fixture block
// in θ, so that a gradient in θ's layout can be read in the fixture's.
func spiralTheta(t testing.TB, net model.Layer, w []float32) (θ []float32, perm []int) {
	t.Helper()
	lay, err := model.Layout(net)
	if err != nil {
		t.Fatal(err)
	}
	if lay.Len() != len(w) {
		t.Fatalf("the network has %d parameters, the fixture %d", lay.Len(), len(w))
	}
	θ = make([]float32, lay.Len())
	perm = make([]int, 0, len(w)) // θ index of each fixture index
	off := 0
	for _, path := range []string{"1.weight", "1.bias", "3.weight", "3.bias"} {
		leaf, ok := lay.Find(path)
		if !ok {
			t.Fatalf("no parameter %q in %v", path, lay)
		}
		for i := range leaf.Size() { // both row-major, (out, in) like PyTorch
			θ[leaf.Offset+i] = w[off+i]
			perm = append(perm, leaf.Offset+i)
		}
		off += leaf.Size()
	}
	if off != len(w) {
		t.Fatalf("the four blocks hold %d weights, the fixture %d", off, len(w))
	}
	return θ, perm
}

// spiralLoss is the peer's loss Σ_k ‖u(t_k) − data_k‖² over the fixture's
// save times. t = 0 is among them: its term is 0 (u(0) = u0 = data_0) and
// adds nothing to the gradient.
func spiralLoss(f *spiralFixture) ode.Loss[float32] {
	return ode.Loss[float32]{At: f.TS, Saved: func(_ []float64, us, dl [][]float32) float64 {
		var l float64
		for k, u := range us {
			for j := range u {
				d := u[j] - f.Data[2*k+j]
				dl[k][j] = 2 * d
				l += float64(d) * float64(d)
			}
		}
		return l
	}}
}

// TestSpiralDiscreteAdjointMatchesTorch reproduces the PyTorch peer's loss
// and gradient (autograd through fixed-step float32 RK4, 4 steps per save
// interval) by DiscreteAdjoint with RK4 on the same steps: 116 steps of
// FixedStep(1.5/116), with the save times read from the steps' Hermite
// interpolants.
//
// The peer divides each save interval [t_k, t_k+1] into 4 equal steps;
// its save times are float32 values, so the intervals (and its steps)
// differ from 1.5/29 (and 1.5/116) by up to 1.2e-6 relative, and the save
// times lie within 6e-8 of the step ends 4k·h. Landing on them with
// TStops is the peer's steps exactly: TestSpiralFixedStepTStops.
func TestSpiralDiscreteAdjointMatchesTorch(t *testing.T) {
	f := loadSpiralFixture(t)
	T1 := f.TS[len(f.TS)-1]
	intervals := len(f.TS) - 1
	spiralCheckTorch(t, f, intervals*f.Steps, ode.FixedStep(T1/float64(intervals*f.Steps)))
}

// TestSpiralFixedStepTStops is the cross-check with the peer's steps
// exactly: FixedStep(interval/4) with TStops at the save times. The save
// intervals differ (float32 times), so some steps landing on a TStop are
// shortened; the step after each is the fixed size again
// (TestFixedStepTStops), so every interval takes 4 steps.
func TestSpiralFixedStepTStops(t *testing.T) {
	f := loadSpiralFixture(t)
	var hmax float64
	for k := 1; k < len(f.TS); k++ {
		hmax = max(hmax, f.TS[k]-f.TS[k-1])
	}
	prob, _, _ := spiralProblem(t, f)
	opts := []ode.Option{ode.FixedStep(hmax / float64(f.Steps)), ode.TStops(f.TS...)}
	want := f.Steps * (len(f.TS) - 1)
	sol, err := ode.Solve(context.Background(), prob, ode.RK4(), append(ode.OptionsFor[ode.SolveOption](opts), ode.MaxSteps(10*want))...)
	if err != nil || sol.Stats.Accepted != want {
		acc := -1
		if sol != nil {
			acc = sol.Stats.Accepted
		}
		t.Fatalf("FixedStep with TStops: %d steps, want %d (4 per save interval); err %v", acc, want, err)
	}
	spiralCheckTorch(t, f, want, opts...)
}

// spiralCheckTorch differentiates the fixture's problem by DiscreteAdjoint
// with RK4 and opts, checks the step count and compares the loss and the
// gradient with torch's.
func spiralCheckTorch(t *testing.T, f *spiralFixture, steps int, opts ...ode.Option) {
	t.Helper()
	prob, θ, perm := spiralProblem(t, f)
	gs, err := ode.NewGradientSolver(prob, ode.RK4(), ode.DiscreteAdjoint{}, ode.OptionsFor[ode.GradientOption](opts)...)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gs.Gradient(context.Background(), θ, spiralLoss(f))
	if err != nil {
		t.Fatal(err)
	}
	if g.Forward.Accepted != steps || g.Forward.Rejected != 0 {
		t.Errorf("forward solve: %d steps accepted, %d rejected; want %d (%d per save interval), 0",
			g.Forward.Accepted, g.Forward.Rejected, steps, f.Steps)
	}
	lossErr := math.Abs(g.Value-f.Loss) / math.Abs(f.Loss)
	var dd, nn float64
	for i, w := range f.Grad {
		d := float64(g.P[perm[i]]) - w
		dd += d * d
		nn += w * w
	}
	gradErr := math.Sqrt(dd / nn)
	t.Logf("loss %.8g (torch %.8g, relative error %.3g); gradient relative error in norm %.3g (‖g‖ = %.6g)",
		g.Value, f.Loss, lossErr, gradErr, math.Sqrt(nn))
	if !(lossErr <= 1e-4) {
		t.Errorf("loss %.8g, torch %.8g: relative error %.3g, want ≤ 1e-4", g.Value, f.Loss, lossErr)
	}
	if !(gradErr <= 1e-4) {
		t.Errorf("gradient: relative error in norm %.3g against torch, want ≤ 1e-4", gradErr)
	}
	// The first components (torch prints them as grad_first4), as a
	// readable failure.
	for i := range 4 {
		if w, got := f.Grad[i], float64(g.P[perm[i]]); math.Abs(got-w) > 1e-4*math.Sqrt(nn) {
			t.Errorf("dL/dW1[%d] = %.8g, torch %.8g", i, got, w)
		}
	}
}

// TestSpiralFixtureData checks the fixture's data against the true
// dynamics u' = ((u³)ᵀA)ᵀ solved by flatkit's RK4 with the peer's 50 steps
// per save interval, and its weights against the peer's formula
// 0.1·sin(7i + 3j + k): the fixture is what the peer's docstring says.
func TestSpiralFixtureData(t *testing.T) {
	f := loadSpiralFixture(t)
	for k, n := range [][2]int{{50, 2}, {50, 1}, {2, 50}, {2, 1}} {
		off := []int{0, 100, 150, 250}[k]
		for i := range n[0] {
			for j := range n[1] {
				w := float32(0.1 * math.Sin(float64(7*i+3*j+k)))
				if got := f.W[off+i*n[1]+j]; math.Abs(float64(got-w)) > 1e-7 {
					t.Fatalf("weight block %d [%d, %d] = %g, want 0.1 sin(7i+3j+k) = %g", k, i, j, got, w)
				}
			}
		}
	}
	trueF := func(du, u []float32, _ []float32, _ float64) {
		c0, c1 := u[0]*u[0]*u[0], u[1]*u[1]*u[1]
		du[0] = -0.1*c0 - 2*c1
		du[1] = 2*c0 - 0.1*c1
	}
	prob := ode.Problem[float32]{F: trueF, U0: []float32{2, 0}, T0: 0, T1: f.TS[len(f.TS)-1]}
	steps := 50 * (len(f.TS) - 1)
	sol, err := ode.Solve(context.Background(), prob, ode.RK4(), ode.FixedStep(prob.T1/float64(steps)), ode.SaveAt(f.TS...))
	if err != nil {
		t.Fatal(err)
	}
	if sol.Stats.Accepted != steps || len(sol.U) != len(f.TS) {
		t.Fatalf("%d steps, %d states saved; want %d, %d", sol.Stats.Accepted, len(sol.U), steps, len(f.TS))
	}
	var e float64
	for k, u := range sol.U {
		for j := range u {
			e = max(e, math.Abs(float64(u[j]-f.Data[2*k+j])))
		}
	}
	t.Logf("data: max abs difference %.3g from flatkit's RK4", e)
	if e > 1e-4 {
		t.Errorf("data: max abs difference %.3g from flatkit's RK4 of the true dynamics, want ≤ 1e-4", e)
	}
}
