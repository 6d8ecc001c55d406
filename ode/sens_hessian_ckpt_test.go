package ode_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products with InterpolatingAdjoint.Checkpoints against
// the same products without them.

// hvCkptCase is a product to take with and without checkpoints.
type hvCkptCase struct {
	name string
	prob ode.Problem[float64]
	m    ode.Method
	loss ode.HvLoss[float64]
	vs   [][]float64
	opts []ode.GradientOption
	fd   bool    // InterpolatingAdjoint.FiniteDiff
	tol  float64 // the bar on the relative difference of each result
}

// hvCkptBudgets are the checkpoint budgets the tests take.
var hvCkptBudgets = []int{1, 3, 8}

// hvFlat is a product's results in one slice: the value, dL/dθ, dL/du0,
// and H·v's θ and u0 rows.
func hvFlat(r *ode.HvResult[float64]) []float64 {
	out := []float64{r.Value}
	for _, s := range [][]float64{r.P, r.U0, r.HvP, r.HvU0} {
		out = append(out, s...)
	}
	return out
}

// hvWorstRel is the largest difference of a and b relative to the
// largest magnitude in b's part it falls in (value, gradient, product).
func hvWorstRel(a, b []float64, np, n int) float64 {
	parts := [][2]int{{0, 1}, {1, 1 + np + n}, {1 + np + n, 1 + 2*(np+n)}}
	var worst float64
	for _, pt := range parts {
		var scale float64
		for _, x := range b[pt[0]:pt[1]] {
			scale = max(scale, math.Abs(x))
		}
		for i := pt[0]; i < pt[1]; i++ {
			if d := math.Abs(a[i] - b[i]); d > 0 {
				worst = max(worst, d/scale)
			}
		}
	}
	return worst
}

// checkHvCheckpoints compares the products of c with Checkpoints 1, 3
// and 8 with those without, and checks that the re-solves are counted in
// the backward counters.
func checkHvCheckpoints(t *testing.T, c hvCkptCase) {
	t.Helper()
	ctx := context.Background()
	np, n := len(c.prob.P), len(c.prob.U0)
	full, err := ode.NewHvSolver(c.prob, c.m, ode.InterpolatingAdjoint{FiniteDiff: c.fd}, c.opts...)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([][]float64, len(c.vs))
	var bwdSteps int
	for i, v := range c.vs {
		r, err := full.Hv(ctx, c.prob.P, c.loss, v)
		if err != nil {
			t.Fatalf("%s without checkpoints: %v", c.name, err)
		}
		ref[i] = hvFlat(r)
		bwdSteps = r.Backward.Accepted
	}
	for _, k := range hvCkptBudgets {
		hs, err := ode.NewHvSolver(c.prob, c.m, ode.InterpolatingAdjoint{Checkpoints: k, FiniteDiff: c.fd}, c.opts...)
		if err != nil {
			t.Fatalf("%s, Checkpoints %d: %v", c.name, k, err)
		}
		var worst float64
		for i, v := range c.vs {
			r, err := hs.Hv(ctx, c.prob.P, c.loss, v)
			if err != nil {
				t.Fatalf("%s, Checkpoints %d: %v", c.name, k, err)
			}
			e := hvWorstRel(hvFlat(r), ref[i], np, n)
			worst = max(worst, e)
			if e > c.tol {
				t.Errorf("%s, Checkpoints %d, v%d: value, gradient and H·v %.15g; without checkpoints %.15g (relative difference %.3g > %g)", c.name, k, i, hvFlat(r), ref[i], e, c.tol)
			}
			if i == len(c.vs)-1 {
				// The backward counters hold the re-solves of the
				// segments besides the adjoint's own steps.
				if r.Backward.Accepted <= bwdSteps {
					t.Errorf("%s, Checkpoints %d: %d backward steps, want more than the %d without checkpoints (the segments' re-solves)", c.name, k, r.Backward.Accepted, bwdSteps)
				}
				t.Logf("%s, Checkpoints %d: worst relative difference %.2g; steps forward %d, backward %d (%d without checkpoints)", c.name, k, worst, r.Forward.Accepted, r.Backward.Accepted, bwdSteps)
			}
		}
	}
}

// Lotka-Volterra, the Hv tests' problem, with its point and running
// costs: the checkpointed products are those without checkpoints.
func TestHvCheckpointsLotkaVolterra(t *testing.T) {
	vs := [][]float64{{0.3, -1, 0.5, 0.25, 1, -0.5}, {0, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 0, 0}}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P(), ode.BDF()} {
		for _, exact := range []bool{true, false} {
			tol := 1e-13
			if m.Name() == "BDF" {
				tol = 1e-5 // segments solved again with error control
			}
			prob := lvHvProblem()
			if !exact {
				prob.VJPJVP = nil
			}
			checkHvCheckpoints(t, hvCkptCase{
				name: fmt.Sprintf("%s/exact=%v", m.Name(), exact),
				prob: prob, m: m, loss: lvPointLoss(exact), vs: vs,
				opts: []ode.GradientOption{ode.Tol(1e-8, 1e-10)}, fd: !exact,
				tol: tol,
			})
		}
	}
	// A span integrated backwards in time, with save times at both ends.
	prob := lvHvProblem()
	prob.T0, prob.T1 = 3, 0
	loss := lvPointLoss(true)
	loss.At = []float64{3, 1.5, 0}
	checkHvCheckpoints(t, hvCkptCase{name: "Tsit5/backwards", prob: prob, m: ode.Tsit5(), loss: loss, vs: vs,
		opts: []ode.GradientOption{ode.Tol(1e-8, 1e-10)}, tol: 1e-13})
}

// CVODES's cvsHessian_ASA_FSA problem with its running cost: the
// checkpointed products are those without checkpoints, and match CVODES's
// figures.
func TestHvCheckpointsCVODES(t *testing.T) {
	vs := [][]float64{{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0.5, -1, 0.25, 1, -0.5}}
	for _, m := range []ode.Method{ode.Vern7(), ode.Tsit5(), ode.Rodas5P(), ode.BDF()} {
		tol := 1e-13
		if m.Name() == "BDF" {
			tol = 1e-5
		}
		c := hvCkptCase{name: m.Name(), prob: cvhProblem(), m: m, loss: cvhLoss(true), vs: vs,
			opts: []ode.GradientOption{ode.Tol(1e-10, 1e-12)}, tol: tol}
		checkHvCheckpoints(t, c)
		hs, err := ode.NewHvSolver(c.prob, m, ode.InterpolatingAdjoint{Checkpoints: 3}, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		H := make([]float64, 25)
		if err := hs.Hessian(context.Background(), c.prob, c.loss, H); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			for j := range 2 {
				if e := relErr(H[i*5+j], cvhH[i*2+j]); e > 1e-6 {
					t.Errorf("%s, Checkpoints 3: H[%d][%d] = %.12g, want %.12g (relative error %.2g > 1e-6)", m.Name(), i, j, H[i*5+j], cvhH[i*2+j], e)
				}
			}
		}
	}
}

// The Brusselator (N = 24, 48 states) in band storage, by Rodas5P with
// and without a running cost, and in sparse storage (the tests above
// take Rodas5P's dense structure): the checkpointed
// products are those without checkpoints. BDF solves the segments again
// with error control: its products agree to about the tolerance.
func TestHvCheckpointsBrusselator(t *testing.T) {
	const N = 24
	vs := brussHvDirections(3, 2*N, 2)
	for _, c := range []struct {
		m       ode.Method
		s       string
		running bool
		tol     float64
	}{
		{ode.Rodas5P(), "band", false, 1e-13},
		{ode.Rodas5P(), "band", true, 1e-13},
		{ode.Rodas5P(), "sparse", true, 1e-13},
		{ode.BDF(), "band", true, 1e-5},
	} {
		name := fmt.Sprintf("%s/%s/running=%v", c.m.Name(), c.s, c.running)
		t.Run(name, func(t *testing.T) {
			checkHvCheckpoints(t, hvCkptCase{
				name: name, prob: brussHvProblem(N, c.s), m: c.m, loss: brussHvLoss(c.running), vs: vs,
				opts: []ode.GradientOption{ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6)}, tol: c.tol,
			})
		})
	}
	// JVP and VJPJVP by differences (N = 8): the forward system's
	// coupling is then a difference of its right-hand side.
	prob := brussHvProblem(8, "band")
	prob.JVP, prob.VJPJVP = nil, nil
	checkHvCheckpoints(t, hvCkptCase{name: "Rodas5P/band/FiniteDiff", prob: prob, m: ode.Rodas5P(), loss: brussHvLoss(true),
		vs: brussHvDirections(3, 16, 2), opts: []ode.GradientOption{ode.Tol(1e-8, 1e-10)}, fd: true, tol: 1e-13})
}

// hvOneProduct is one product to take: of prob's loss by m along v.
type hvOneProduct struct {
	name string
	prob ode.Problem[float64]
	m    ode.Method
	loss ode.HvLoss[float64]
	v    []float64
}

// A warm checkpointed HvSolver allocates nothing per product, explicit
// and stiff, dense and in band storage.
func TestHvCheckpointsAllocateNothingWarm(t *testing.T) {
	ctx := context.Background()
	for _, c := range []hvOneProduct{
		{"LV/Tsit5", lvHvProblem(), ode.Tsit5(), lvPointLoss(true), []float64{0.3, -1, 0.5, 0.25, 1, -0.5}},
		{"LV/Tsit5/by-differences", lvHvProblem(), ode.Tsit5(), lvPointLoss(false), []float64{0.3, -1, 0.5, 0.25, 1, -0.5}},
		{"CVODES/Rodas5P", cvhProblem(), ode.Rodas5P(), cvhLoss(true), []float64{0.5, -1, 0.25, 1, -0.5}},
		{"Brusselator/Rodas5P/band", brussHvProblem(8, "band"), ode.Rodas5P(), brussHvLoss(true), brussHvDirections(3, 16, 1)[0]},
		{"Brusselator/BDF/band", brussHvProblem(8, "band"), ode.BDF(), brussHvLoss(true), brussHvDirections(3, 16, 1)[0]},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs, err := ode.NewHvSolver(c.prob, c.m, ode.InterpolatingAdjoint{Checkpoints: 3, FiniteDiff: true}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := hs.Hv(ctx, c.prob.P, c.loss, c.v); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(5, func() {
				if _, err := hs.Hv(ctx, c.prob.P, c.loss, c.v); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%v allocations per warm checkpointed product, want 0", a)
			}
		})
	}
}

// Ensemble.HessianVector takes the checkpoints too: the same bits as
// without them, for one and two workers.
func TestHvCheckpointsEnsemble(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(6)
	ens.Base.VJPJVP = lotkavolterra.VJPJVP[float64]
	hvLossFor := func(i int) ode.HvLoss[float64] { return ode.HvLoss[float64]{Loss: lossFor(i)} }
	v := []float64{0.3, -1, 0.5, 0.25}
	want, err := ens.HessianVector(ctx, ode.Tsit5(), hvLossFor, v, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	wantP, wantHv := slices.Clone(want.P), slices.Clone(want.HvP)
	for _, w := range []int{1, 2} {
		got, err := ens.HessianVector(ctx, ode.Tsit5(), hvLossFor, v, ode.InterpolatingAdjoint{Checkpoints: 3}, ode.Tol(1e-8, 1e-10), ode.Workers(w))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.P, wantP) || !slices.Equal(got.HvP, wantHv) {
			t.Errorf("workers %d, Checkpoints 3: P %v, HvP %v; without checkpoints %v, %v", w, got.P, got.HvP, wantP, wantHv)
		}
	}
}

// BenchmarkHvCheckpoints: a Lotka-Volterra product (the Hv tests' loss)
// and a Brusselator one (N = 24, band, Rodas5P) with and without
// checkpoints; the checkpointed product solves the forward steps again.
func BenchmarkHvCheckpoints(b *testing.B) {
	ctx := context.Background()
	for _, c := range []hvOneProduct{
		{"LV/Tsit5", lvHvProblem(), ode.Tsit5(), lvPointLoss(true), []float64{0.3, -1, 0.5, 0.25, 1, -0.5}},
		{"Brusselator/Rodas5P/band", brussHvProblem(24, "band"), ode.Rodas5P(), brussHvLoss(true), brussHvDirections(3, 48, 1)[0]},
	} {
		for _, k := range []int{0, 8} {
			b.Run(fmt.Sprintf("%s/Checkpoints=%d", c.name, k), func(b *testing.B) {
				hs, err := ode.NewHvSolver(c.prob, c.m, ode.InterpolatingAdjoint{Checkpoints: k}, ode.Tol(1e-8, 1e-10), ode.MaxSteps(1e6))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := hs.Hv(ctx, c.prob.P, c.loss, c.v); err != nil { // warm
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := hs.Hv(ctx, c.prob.P, c.loss, c.v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
