package main

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/internal/race"
)

// refConvLoss is the convchain loss in float64: six (conv, relu), the
// dense layer, then the mean over the batch of −Σ y·log softmax.
func refConvLoss(t *testing.T, pr *convProblem, θ []float64) float64 {
	t.Helper()
	leaf := leaves64(t, pr.net, θ)
	c := pr.cfg
	var loss float64
	per := c.ch[0] * convSide * convSide
	for n := 0; n < c.batch; n++ {
		x := to64(pr.x.Data[n*per : (n+1)*per])
		h, w := convSide, convSide
		for i := 0; i < 6; i++ {
			x, h, w = conv2d64(x, c.ch[i], h, w, leaf(fmt.Sprintf("%d.weight", 2*i)), leaf(fmt.Sprintf("%d.bias", 2*i)), c.ch[i+1], 3, 0)
			for j, v := range x {
				x[j] = math.Max(v, 0)
			}
		}
		W, b := leaf("13.weight"), leaf("13.bias")
		z := make([]float64, convClasses)
		m := math.Inf(-1)
		for k := range z {
			z[k] = b[k]
			for j, v := range x {
				z[k] += W[k*len(x)+j] * v
			}
			m = math.Max(m, z[k])
		}
		var se float64
		for _, v := range z {
			se += math.Exp(v - m)
		}
		lse := m + math.Log(se)
		for k := range z {
			loss -= float64(pr.y.Data[n*convClasses+k]) * (z[k] - lse)
		}
	}
	return loss / float64(c.batch)
}

// TestConvchainGradient checks the small variant (and a batch-2 variant
// with wider channels, which takes the im2col + GEMM path): the loss
// against the float64 reference and the gradient against central
// differences of that reference in a random direction.
func TestConvchainGradient(t *testing.T) {
	wide := convCfg{name: "wide b2", batch: 2, ch: [7]int{1, 8, 16, 16, 8, 8, 4}}
	for _, c := range []convCfg{convSmall, wide} {
		pr, err := newConvProblem(c, 5)
		if err != nil {
			t.Fatal(err)
		}
		checkTapeProblem(t, c.name, pr, pr.θ, func(θ []float64) float64 { return refConvLoss(t, pr, θ) }, 11)
	}
}

// TestConvchainSteadyAllocs pins the steady-state forward and training
// step at zero allocations (the batch-64 variant unless -short), on one
// goroutine as the benchmark's peer figures: with more, flat.Gemm splits
// the largest products (the dense layer's weight gradient) across
// goroutines, whose hand-off allocates now and then.
func TestConvchainSteadyAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool and the race detector allocate")
	}
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	cfgs := []convCfg{convSmall}
	if !testing.Short() {
		cfgs = append(cfgs, convBig)
	}
	for _, c := range cfgs {
		pr, err := newConvProblem(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		tp := ad.NewTape()
		for _, grad := range []bool{false, true} {
			step := func() {
				if err := runTapeProblem(pr, tp, grad); err != nil {
					t.Fatal(err)
				}
				tp.Reset()
			}
			step()
			// Finish the collection the warm-up's allocations started: the
			// runtime allocates for itself (new Ms, sudogs) when a cycle
			// ends during the measured steps.
			runtime.GC()
			runs := 10
			if c.batch > 8 {
				runs = 1
			}
			// The least of three measurements: a step of the batch-64 net
			// is long enough for a GC cycle (whose runtime bookkeeping
			// allocates) to end inside a one-step measurement on a loaded
			// machine; an allocation of the step itself shows in all three.
			a := testing.AllocsPerRun(runs, step)
			for try := 1; try < 3 && a != 0; try++ {
				a = min(a, testing.AllocsPerRun(runs, step))
			}
			if a != 0 {
				t.Errorf("%s (gradient %v): %v allocations per step, want 0", c.name, grad, a)
			}
		}
	}
}

// TestConvchainRestoresThreads runs the scenario in quick mode, checks its
// figures and that it restores flat's thread limit after the
// one-goroutine figures.
func TestConvchainRestoresThreads(t *testing.T) {
	old := flat.SetMaxThreads(3)
	defer flat.SetMaxThreads(old)
	cases := runBench(t, []string{"-samples", "2", "convchain"})
	if got := flat.SetMaxThreads(3); got != 3 {
		t.Errorf("the scenario left flat's thread limit at %d, want 3 restored", got)
	}
	for _, v := range []string{convSmall.name + " forward", convSmall.name + " gradient",
		convBig.name + " forward, 1 goroutine", convBig.name + " gradient, 1 goroutine",
		convBig.name + " forward", convBig.name + " gradient"} {
		if cases[v] == nil {
			t.Errorf("no figure %q; got %v", v, cases)
		}
	}
}

// BenchmarkConvchain is the steady-state forward and step of both
// variants on one goroutine, for profiling.
func BenchmarkConvchain(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	for _, c := range []convCfg{convSmall, convBig} {
		for _, grad := range []bool{false, true} {
			name := "forward"
			if grad {
				name = "gradient"
			}
			b.Run(strings.Fields(c.name)[0]+"/"+name, func(b *testing.B) {
				pr, err := newConvProblem(c, 1)
				if err != nil {
					b.Fatal(err)
				}
				tp := ad.NewTape()
				cputime.Loop(b, func() {
					if err := runTapeProblem(pr, tp, grad); err != nil {
						b.Fatal(err)
					}
					tp.Reset()
				})
			})
		}
	}
}
