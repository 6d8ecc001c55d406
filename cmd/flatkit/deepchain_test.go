package main

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/proptest"
)

// refDeepLoss is the deepchain loss in float64: x + Σ blocks, each block
// x + conv(conv(x)), then the mean over the 2×2 image, summed.
func refDeepLoss(t *testing.T, pr *deepProblem, θ []float64) float64 {
	t.Helper()
	leaf := leaves64(t, pr.net, θ)
	const c, h, w = deepChannels, 2, 2
	x0 := to64(pr.x.Data)
	x := append([]float64(nil), x0...)
	for i := 0; i < pr.n; i++ {
		p := fmt.Sprintf("0.%d.", i)
		y, _, _ := conv2d64(x, c, h, w, leaf(p+"0.weight"), leaf(p+"0.bias"), c, 3, 1)
		y, _, _ = conv2d64(y, c, h, w, leaf(p+"1.weight"), leaf(p+"1.bias"), c, 3, 1)
		for j := range x {
			x[j] += y[j]
		}
	}
	var loss float64
	for j := range x {
		loss += (x[j] + x0[j]) / (h * w) // outer skip, then the mean of each channel, summed
	}
	return loss
}

// TestDeepchainGradient checks the benchmarked computation at two depths:
// the loss against the float64 reference, the gradient against central
// differences of that reference in a random direction, and (at N = 2) the
// gradient and second derivatives with proptest's checkers.
func TestDeepchainGradient(t *testing.T) {
	for _, n := range []int{2, 15} {
		pr, err := newDeepProblem(n, 3)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("N=%d", n)
		g := checkTapeProblem(t, name, pr, pr.θ, func(θ []float64) float64 { return refDeepLoss(t, pr, θ) }, uint64(n))
		if len(g) != len(pr.θ) || len(pr.θ) != n*2*(4*4*9+4) {
			t.Fatalf("%s: %d gradient values for %d parameters, want %d", name, len(g), len(pr.θ), n*2*(4*4*9+4))
		}
		if n == 2 {
			proptest.CheckGrad(t, pr.loss, pr.θ)
			proptest.CheckHVP(t, pr.loss, pr.θ)
		}
	}
}

// TestDeepchainSteadyAllocs pins the steady-state training step at zero
// allocations.
func TestDeepchainSteadyAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool and the race detector allocate")
	}
	pr, err := newDeepProblem(15, 1)
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	step := func() {
		if _, err := pr.gradient(tp); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}
	step()
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("%v allocations per step, want 0", a)
	}
}

// TestBenchDeepchainQuick runs the scenario in quick mode, including the
// fresh child processes of the first-call figures, and checks its output.
func TestBenchDeepchainQuick(t *testing.T) {
	cases := runBench(t, []string{"-samples", "2", "deepchain"})
	for _, n := range deepDepths {
		for _, c := range []string{"forward steady", "gradient steady", "gradient first call (fresh process)", "first call / steady"} {
			name := fmt.Sprintf("N=%d %s", n, c)
			m, ok := cases[name]
			if !ok {
				t.Errorf("no figure %q", name)
				continue
			}
			// The figure counts the whole process's allocations over a few
			// calls in quick mode, so a stray one of the runtime shows (1.5
			// per step was seen under load); TestDeepchainSteadyAllocs pins
			// the step itself at 0. Here: that the figure is reported and
			// no more than a stray, as TestBenchAdamQuick allows.
			if c == "gradient steady" && m["allocs"].(float64) > 2 && !race.Enabled {
				t.Errorf("%s: %v allocs per step, want 0", name, m["allocs"])
			}
			if c == "gradient first call (fresh process)" && m["samples"].(float64) < 3 {
				t.Errorf("%s: %v processes, want ≥ 3 in quick mode", name, m["samples"])
			}
		}
	}
}

// TestDeepChild runs the child mode in this process's binary directly.
func TestDeepChild(t *testing.T) {
	res, err := firstCalls(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.N != 3 || r.FirstNS <= 0 || r.SecondNS <= 0 {
		t.Errorf("child result %+v", r)
	}
}

// BenchmarkDeepchainGradient is the steady-state step, for profiling.
func BenchmarkDeepchainGradient(b *testing.B) {
	for _, n := range []int{5, 15, 120} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			pr, err := newDeepProblem(n, 1)
			if err != nil {
				b.Fatal(err)
			}
			tp := ad.NewTape()
			cputime.Loop(b, func() {
				if _, err := pr.gradient(tp); err != nil {
					b.Fatal(err)
				}
				tp.Reset()
			})
		})
	}
}
