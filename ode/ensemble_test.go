package ode_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/ode"
)

// nanAfter1 is a right-hand side that turns NaN after t = 1.
func nanAfter1(du, u []float64, p []float32, t float64) {
	lvF(du, u, p, t)
	if t > 1 {
		du[1] = math.NaN()
	}
}

// testEnsemble is an ensemble that exercises everything that could make
// results depend on the worker count: per-trajectory random u0, parameter
// views and spans, failures of two kinds, an Output reading the saved
// points, and a Reduce whose sums depend on their order.
func testEnsemble(n int) (ode.Ensemble[float64], []float32) {
	θ := make([]float32, 4*n)
	for i := range n {
		copy(θ[4*i:], []float32{1.5, 1, 3, 1 + 0.001*float32(i)})
	}
	base := ode.Problem[float64]{F: lvF, U0: []float64{1, 1}, T1: 10, P: θ[:4]}
	return ode.Ensemble[float64]{
		Base: base, N: n, Seed: 42,
		Modify: func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] = 1 + 0.5*rng.Float64() // in place: a private copy
			p.U0[1] = 1 + 0.5*rng.Float64()
			p.T1 = 5 + 5*rng.Float64()
			p.P = θ[4*i : 4*i+4]
			switch {
			case i%41 == 7:
				p.F = nanAfter1
			case i%53 == 11:
				p.U0[0] = math.Inf(1) // invalid problem
			}
		},
		OutputSize: 5,
		Output: func(out []float64, i int, it *ode.Integrator[float64]) {
			ts, us := it.Saved()
			if len(ts) != 2 || ts[1] != 2 {
				panic(fmt.Sprintf("trajectory %d: saved %v", i, ts))
			}
			copy(out, it.U())
			copy(out[2:], us[1])
			out[4] = it.T()
		},
		ReduceSize: 3,
		Reduce: func(acc []float64, i int, out []float64) {
			acc[0] += out[0] * math.Pow(10, float64(i%7*3)) // magnitudes 1 … 1e18: the order shows
			acc[1] += out[1] + out[2]*1e-9
			acc[2]++
		},
	}, θ
}

var ensOpts = []ode.SolveOption{ode.Tol(1e-7, 1e-9), ode.SaveAt(0, 2)}

// ensSolveOpts is ensOpts and then more, as options of Ensemble.Solve.
func ensSolveOpts(more ...ode.EnsembleSolveOption) []ode.EnsembleSolveOption {
	opts := make([]ode.EnsembleSolveOption, 0, len(ensOpts)+len(more))
	for _, o := range ensOpts {
		opts = append(opts, o)
	}
	return append(opts, more...)
}

func sameResult(t *testing.T, what string, got, want *ode.EnsembleResult[float64]) {
	t.Helper()
	if len(got.U) != len(want.U) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got.U), len(want.U))
	}
	for i := range want.U {
		if !bitwise.Equal(got.U[i], want.U[i]) {
			t.Fatalf("%s: output %d = %v, want %v", what, i, got.U[i], want.U[i])
		}
	}
	if !bitwise.Equal(got.Acc, want.Acc) {
		t.Fatalf("%s: Acc = %v, want %v", what, got.Acc, want.Acc)
	}
	if got.Stats != want.Stats {
		t.Fatalf("%s: Stats = %+v, want %+v", what, got.Stats, want.Stats)
	}
	if len(got.Errors) != len(want.Errors) {
		t.Fatalf("%s: %d errors, want %d", what, len(got.Errors), len(want.Errors))
	}
	for j := range want.Errors {
		if got.Errors[j].Index != want.Errors[j].Index || got.Errors[j].Error() != want.Errors[j].Error() {
			t.Fatalf("%s: error %d = %v, want %v", what, j, got.Errors[j], want.Errors[j])
		}
	}
}

func TestEnsembleIdenticalForAnyWorkers(t *testing.T) {
	for _, shard := range []int{0, 5, 1000} {
		ens, _ := testEnsemble(203)
		ens.ShardSize = shard
		var ref *ode.EnsembleResult[float64]
		for _, w := range []int{1, 2, 3, 7} {
			res, err := ens.Solve(bg, ode.Tsit5(), ensSolveOpts(ode.Workers(w))...)
			var ee *ode.EnsembleError
			if !errors.As(err, &ee) || len(ee.Errors) != len(res.Errors) {
				t.Fatalf("shard %d, %d workers: err = %v, want an *EnsembleError listing res.Errors", shard, w, err)
			}
			if ref == nil {
				ref = res
				continue
			}
			sameResult(t, fmt.Sprintf("ShardSize %d, %d workers vs 1", shard, w), res, ref)
		}
		if ref.Acc[2] != float64(203-len(ref.Errors)) {
			t.Errorf("shard %d: reduced %v trajectories, want %d", shard, ref.Acc[2], 203-len(ref.Errors))
		}
	}
}

// Each trajectory's output equals a fresh integrator's on Ensemble.Problem(i): the
// reused integrator carries nothing from one trajectory to the next, and
// Problem(i) reproduces what Modify saw.
func TestEnsembleMatchesSolve(t *testing.T) {
	ens, _ := testEnsemble(120)
	res, _ := ens.Solve(bg, ode.Tsit5(), ensSolveOpts(ode.Workers(3))...)
	failed := map[int]bool{}
	for _, te := range res.Errors {
		failed[te.Index] = true
	}
	var stats ode.Stats
	for i := range ens.N {
		it, err := ode.NewIntegrator(ens.Problem(i), ode.Tsit5(), ensOpts...)
		if err == nil {
			err = it.Run(bg)
		}
		if (err != nil) != failed[i] {
			t.Fatalf("trajectory %d: NewIntegrator+Run error %v, ensemble failed %v", i, err, failed[i])
		}
		if err == nil {
			_, us := it.Saved()
			want := append(append(append([]float64{}, it.U()...), us[1]...), it.T())
			if !bitwise.Equal(res.U[i], want) {
				t.Fatalf("trajectory %d: ensemble %v, fresh integrator %v", i, res.U[i], want)
			}
		}
		if it != nil {
			stats.FEvals += it.Stats().FEvals
			stats.Accepted += it.Stats().Accepted
			stats.Rejected += it.Stats().Rejected
		}
	}
	if stats.FEvals != res.Stats.FEvals || stats.Accepted != res.Stats.Accepted || stats.Rejected != res.Stats.Rejected {
		t.Errorf("summed stats %+v, ensemble %+v", stats, res.Stats)
	}
}

func TestEnsembleFailures(t *testing.T) {
	ens, _ := testEnsemble(100)
	res, err := ens.Solve(bg, ode.Tsit5(), ensSolveOpts(ode.Workers(2))...)
	wantIdx := []int{7, 11, 48, 64, 89}
	var got []int
	for _, te := range res.Errors {
		got = append(got, te.Index)
	}
	if fmt.Sprint(got) != fmt.Sprint(wantIdx) {
		t.Fatalf("failed trajectories %v, want %v", got, wantIdx)
	}
	for _, te := range res.Errors {
		var se *ode.Error
		isSolve := errors.As(te.Err, &se)
		switch {
		case te.Index%41 == 7 && (!isSolve || se.Code != ode.NonFinite || se.Component != 1 || !(se.T > 0.99 && se.T < 1.5)):
			t.Errorf("trajectory %d: %v, want NonFinite in component 1 just after t=1", te.Index, te.Err)
		case te.Index%53 == 11 && (isSolve || !strings.Contains(te.Err.Error(), "U0[0]")):
			t.Errorf("trajectory %d: %v, want an invalid-U0 error", te.Index, te.Err)
		}
		if !strings.Contains(te.Error(), fmt.Sprintf("trajectory %d:", te.Index)) {
			t.Errorf("%q does not name the trajectory", te.Error())
		}
		for _, v := range res.U[te.Index] {
			if !math.IsNaN(v) {
				t.Errorf("failed trajectory %d: output %v, want NaN", te.Index, res.U[te.Index])
				break
			}
		}
	}
	for i, u := range res.U {
		if i != 7 && i != 11 && i != 48 && i != 64 && i != 89 && (math.IsNaN(u[0]) || u[4] < 5) {
			t.Errorf("trajectory %d did not finish: %v", i, u)
		}
	}
	if res.Stats.Retcode != ode.NonFinite || res.Acc[2] != 95 {
		t.Errorf("Retcode %v (want the first failure's, NonFinite), %v reduced (want 95)", res.Stats.Retcode, res.Acc[2])
	}
	var ee *ode.EnsembleError
	var se *ode.Error
	if !errors.As(err, &ee) || ee.N != 100 || !errors.As(err, &se) || !strings.Contains(err.Error(), "5 of 100 trajectories failed") {
		t.Errorf("error %v: want an *EnsembleError wrapping the trajectories' errors", err)
	}
}

// The shard contract: every shard solved on its own (in any order, each in
// a new integrator) and merged is Solve's result.
func TestEnsembleShardsMerge(t *testing.T) {
	ens, _ := testEnsemble(83)
	ens.ShardSize = 10
	want, wantErr := ens.Solve(bg, ode.Tsit5(), ensSolveOpts(ode.Workers(2))...)
	shards := ens.Shards()
	if len(shards) != 9 || shards[8] != (ode.Shard{Lo: 80, Hi: 83, N: 83, Seed: 42}) {
		t.Fatalf("Shards() = %v", shards)
	}
	var parts []*ode.ShardResult[float64]
	for j := len(shards) - 1; j >= 0; j-- {
		p, err := ens.SolveShard(bg, ode.Tsit5(), shards[j], ensOpts...)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	got, gotErr := ens.Merge(parts)
	sameResult(t, "Merge(SolveShard…)", got, want)
	if gotErr.Error() != wantErr.Error() {
		t.Errorf("Merge error %v, Solve error %v", gotErr, wantErr)
	}
	if _, err := ens.Merge(parts[1:]); err == nil {
		t.Error("Merge with a shard missing: no error")
	}
	if _, err := ens.SolveShard(bg, ode.Tsit5(), ode.Shard{Lo: 80, Hi: 84, N: 83}); err == nil || !strings.Contains(err.Error(), "shard [80, 84), want 0 ≤ Lo ≤ Hi ≤ N = 83") {
		t.Errorf("SolveShard beyond N: got %v", err)
	}
	if _, err := ens.SolveShard(bg, ode.Tsit5(), ode.Shard{Lo: 0, Hi: 10, N: 90}); err == nil || !strings.Contains(err.Error(), "shard [0, 10) of N = 90, want the ensemble's N = 83") {
		t.Errorf("SolveShard of another ensemble's shard: got %v", err)
	}
}

func TestEnsembleReduceOnly(t *testing.T) {
	ens := ode.Ensemble[float64]{
		Base: ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, N: 50,
		Modify:      func(i int, _ *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 1 + 0.001*float64(i) },
		DropOutputs: true, ReduceSize: 2,
		Reduce: func(acc []float64, _ int, u []float64) { acc[0] += u[0]; acc[1] += u[1] },
	}
	res, err := ens.Solve(bg, ode.Tsit5(), ode.Workers(2))
	if err != nil || res.U != nil {
		t.Fatalf("err %v, U %v", err, res.U)
	}
	ens.DropOutputs, ens.Reduce, ens.ReduceSize = false, nil, 0
	all, err := ens.Solve(bg, ode.Tsit5(), ode.Workers(1))
	if err != nil {
		t.Fatal(err)
	}
	var s0, s1 float64
	for j := 0; j < 50; j += 16 { // shard by shard, as the ensemble sums
		var p0, p1 float64
		for _, u := range all.U[j:min(j+16, 50)] {
			p0 += u[0]
			p1 += u[1]
		}
		s0 += p0
		s1 += p1
	}
	if res.Acc[0] != s0 || res.Acc[1] != s1 {
		t.Errorf("reduced %v, want %v", res.Acc, []float64{s0, s1})
	}
	if math.Abs(all.U[0][0]-refProblems[0].ref[0]) > 1e-4 {
		t.Errorf("trajectory 0: %v, want ≈ %v", all.U[0], refProblems[0].ref)
	}
}

func TestEnsembleFloat32(t *testing.T) {
	ens := ode.Ensemble[float32]{
		Base: ode.Problem[float32]{F: lotkaVolterra32, U0: []float32{1, 1}, T1: 10}, N: 40,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float32]) { p.U0[0] = 1 + 0.01*float32(i) },
	}
	a, err := ens.Solve(bg, ode.Tsit5(), ode.Tol(1e-5, 1e-7), ode.Workers(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ens.Solve(bg, ode.Tsit5(), ode.Tol(1e-5, 1e-7), ode.Workers(3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.U {
		if a.U[i][0] != b.U[i][0] || a.U[i][1] != b.U[i][1] {
			t.Fatalf("trajectory %d: %v vs %v", i, a.U[i], b.U[i])
		}
	}
}

func TestEnsembleCancel(t *testing.T) {
	ens, _ := testEnsemble(400)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if res, err := ens.Solve(ctx, ode.Tsit5(), ensSolveOpts()...); res != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v, %v", res, err)
	}
	// Cancelled from inside, at trajectory 50: Solve returns promptly with
	// ctx's error, not a result.
	for _, w := range []int{1, 2, 3} {
		ctx, cancel := context.WithCancel(bg)
		inner := ens.Modify
		ens.Modify = func(i int, rng *rand.Rand, p *ode.Problem[float64]) {
			if i == 50 {
				cancel()
			}
			inner(i, rng, p)
		}
		start := time.Now()
		res, err := ens.Solve(ctx, ode.Tsit5(), ensSolveOpts(ode.Workers(w))...)
		if res != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("%d workers, cancelled inside: %v, %v", w, res, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%d workers: cancel took %v", w, d)
		}
		ens.Modify = inner
		cancel()
	}
	if _, err := ens.SolveShard(ctx, ode.Tsit5(), ens.Shards()[0], ensOpts...); !errors.Is(err, context.Canceled) {
		t.Errorf("SolveShard cancelled: %v", err)
	}
}

func TestEnsembleInvalid(t *testing.T) {
	base := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	red := func(acc []float64, _ int, _ []float64) {}
	out := func(out []float64, _ int, _ *ode.Integrator[float64]) {}
	for _, c := range []struct {
		ens  ode.Ensemble[float64]
		opts []ode.EnsembleSolveOption
		want string
	}{
		{ode.Ensemble[float64]{Base: base, N: -1}, nil, "N = -1"},
		{ode.Ensemble[float64]{N: 3}, nil, "Base"},
		{ode.Ensemble[float64]{Base: base, N: 3, OutputSize: 3}, nil, "OutputSize = 3"},
		{ode.Ensemble[float64]{Base: base, N: 3, Output: out}, nil, "OutputSize = 0"},
		{ode.Ensemble[float64]{Base: base, N: 3, Reduce: red}, nil, "ReduceSize = 0"},
		{ode.Ensemble[float64]{Base: base, N: 3, ReduceSize: 2}, nil, "ReduceSize = 2"},
		{ode.Ensemble[float64]{Base: base, N: 3, ShardSize: -2}, nil, "ShardSize = -2"},
		{ode.Ensemble[float64]{Base: base, N: 3}, []ode.EnsembleSolveOption{ode.Workers(0)}, "Workers(0)"},
		{ode.Ensemble[float64]{Base: base, N: 3}, []ode.EnsembleSolveOption{ode.Tol(-1, 1)}, "Tol"},
	} {
		res, err := c.ens.Solve(bg, ode.Tsit5(), c.opts...)
		if res != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, %v", c.want, res, err)
		}
	}
	if _, err := (ode.Ensemble[float64]{Base: base, N: 3}).Solve(bg, nil); err == nil {
		t.Error("nil method: no error")
	}
	res, err := ode.Ensemble[float64]{Base: base}.Solve(bg, ode.Tsit5())
	if err != nil || len(res.U) != 0 || res.Stats.Retcode != ode.Success {
		t.Errorf("N = 0: %v, %v", res, err)
	}
}

// Trajectories allocate nothing: the allocations of a Solve (result,
// workers) do not grow with N.
func TestEnsembleAllocations(t *testing.T) {
	allocs := func(n int) float64 {
		ens := ode.Ensemble[float64]{
			Base: ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, N: n, Seed: 1,
			Modify:     func(i int, rng *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 1 + 0.1*rng.Float64() },
			ReduceSize: 1, Reduce: func(acc []float64, _ int, u []float64) { acc[0] += u[0] },
		}
		return testing.AllocsPerRun(5, func() {
			if _, err := ens.Solve(bg, ode.Tsit5(), ode.Workers(1)); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := allocs(32), allocs(640)
	if a != b {
		t.Errorf("allocations per Solve: %v for 32 trajectories, %v for 640", a, b)
	}
}

func TestTrajectoryRand(t *testing.T) {
	a, b := ode.TrajectoryRand(7, 3), ode.TrajectoryRand(7, 3)
	c, d := ode.TrajectoryRand(7, 4), ode.TrajectoryRand(8, 3)
	x := a.Uint64()
	if x != b.Uint64() || x == c.Uint64() || x == d.Uint64() {
		t.Error("TrajectoryRand: same (seed, i) must agree, different ones differ")
	}
}

// An ensemble of Lotka–Volterra solves from perturbed initial prey
// populations, on two workers, with a reduction to the mean final state.
func ExampleEnsemble() {
	lv := func(du, u []float64, _ []float32, _ float64) {
		du[0] = 1.5*u[0] - u[0]*u[1]
		du[1] = -3*u[1] + u[0]*u[1]
	}
	ens := ode.Ensemble[float64]{
		Base: ode.Problem[float64]{F: lv, U0: []float64{1, 1}, T1: 10},
		N:    1000,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] = 1 + 0.001*float64(i)
		},
		ReduceSize: 2,
		Reduce: func(acc []float64, _ int, u []float64) {
			acc[0] += u[0]
			acc[1] += u[1]
		},
	}
	res, err := ens.Solve(context.Background(), ode.Tsit5(), ode.Tol(1e-8, 1e-10), ode.Workers(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("u(10) of trajectory 0:   (%.6f, %.6f)\n", res.U[0][0], res.U[0][1])
	fmt.Printf("u(10) of trajectory 999: (%.6f, %.6f)\n", res.U[999][0], res.U[999][1])
	fmt.Printf("mean u(10): (%.4f, %.4f)\n", res.Acc[0]/1000, res.Acc[1]/1000)
	// Output:
	// u(10) of trajectory 0:   (1.026345, 0.909691)
	// u(10) of trajectory 999: (3.721219, 0.791773)
	// mean u(10): (2.4048, 0.6121)
}

func BenchmarkEnsembleLV1000(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprint("workers=", w), func(b *testing.B) {
			ens := ode.Ensemble[float64]{Base: ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, N: 1000,
				Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 1 + 0.001*float64(i) }}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ens.Solve(bg, ode.Tsit5(), ode.Tol(1e-6, 1e-8), ode.Workers(w)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func robertsonEns(du, u []float64, _ []float32, _ float64) {
	du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
	du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
	du[2] = 3e7 * u[1] * u[1]
}

// Stiff methods in an ensemble: whatever a stepper keeps (Jacobian, LU
// factors) must not leak from one trajectory into the next.
func TestEnsembleStiff(t *testing.T) {
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		ens := ode.Ensemble[float64]{
			Base: ode.Problem[float64]{F: robertsonEns, U0: []float64{1, 0, 0}, T1: 1e3}, N: 24, ShardSize: 4,
			Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
				p.U0[0], p.U0[2] = 1-0.01*float64(i), 0.01*float64(i)
				p.T1 = 1e3 * (1 + float64(i%5))
			},
		}
		a, err := ens.Solve(bg, m, ode.Workers(1))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		b, err := ens.Solve(bg, m, ode.Workers(3))
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		sameResult(t, m.Name()+" 3 workers vs 1", b, a)
		for _, i := range []int{0, 7, 23} {
			it, err := ode.NewIntegrator(ens.Problem(i), m)
			if err == nil {
				err = it.Run(bg)
			}
			if err != nil || !bitwise.Equal(it.U(), a.U[i]) {
				t.Fatalf("%s trajectory %d: ensemble %v, fresh integrator %v (%v)", m.Name(), i, a.U[i], it.U(), err)
			}
		}
	}
}
