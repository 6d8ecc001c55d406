package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/flatkit/flatkit/ode"
)

// Scenario ode: the cases of ../shared/peers/ode_bench.py (SciPy) and
// cvode_bench.c (SUNDIALS CVODE), float64, rtol 1e-6 and atol 1e-8 unless a
// case says otherwise.
//
//   - Lotka-Volterra u1' = 1.5u1 − u1u2, u2' = −3u2 + u1u2, u0 = (1, 1), to
//     t = 10, with Tsit5. One solve runs in a reused Integrator, Reinit +
//     Run, as the peers' CVodeReInit loop. One runs by one-shot ode.Solve,
//     as the peers' create + solve + free. The error is against the
//     reference u(10), lvRef.
//   - The ensemble of 1000 trajectories u0 = [1 + 0.001·i, 1] with
//     ode.Ensemble on 1 and 2 workers, after checking that the two agree
//     bit for bit. The error is against a Vern7 solve at rtol 1e-12.
//   - Robertson to t = 1e5 with the stiff methods, with analytic and
//     finite-difference Jacobians. The relative error is against the Bari
//     test set's reference y(1e5), robRef.
//   - Work-precision on Lotka-Volterra: Tsit5, DP5 and Vern7 at rtol 1e-3 …
//     1e-10, with atol = rtol/100. Figures: time per solve, f evaluations,
//     error.
//
// Every line carries the method, tolerances, counters and error as extra
// JSON fields.

func init() {
	register(scenario{
		name:  "ode",
		about: "Lotka-Volterra (Tsit5 single solve, ensemble of 1000 on 1 and 2 workers), Robertson (stiff), work-precision Tsit5/DP5/Vern7",
		run:   runODE,
	})
}

// lvRef is the reference u(10) of Lotka-Volterra from u0 = (1, 1). ode's
// problems_test.go checks the solvers against the same values.
var lvRef = []float64{1.026344767575089319, 0.909691078136041618}

// robRef is y(1e5) of Robertson from y0 = (1, 0, 0), from the Test Set for
// IVP Solvers of the University of Bari.
var robRef = []float64{1.786592114216759e-02, 7.274751468464565e-08, 9.821340061103143e-01}

func lotkaVolterra(du, u []float64, _ []float32, _ float64) {
	du[0] = 1.5*u[0] - u[0]*u[1]
	du[1] = -3*u[1] + u[0]*u[1]
}

func robertson(du, u []float64, _ []float32, _ float64) {
	du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
	du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
	du[2] = 3e7 * u[1] * u[1]
}

func robertsonJac(J, u []float64, _ []float32, _ float64) {
	J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
	J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
	J[6], J[7], J[8] = 0, 6e7*u[1], 0
}

// stiffMethods are the methods of the Robertson case (skipped if empty).
var stiffMethods = []func() ode.Method{ode.Rosenbrock23, ode.Rodas5P}

// odeResult is a figure with the scenario's extra fields.
type odeResult struct {
	result
	Method   string   `json:"method,omitempty"`
	RTol     float64  `json:"rtol,omitempty"`
	ATol     float64  `json:"atol,omitempty"`
	Workers  int      `json:"workers,omitempty"`
	Err      *float64 `json:"err_max_abs,omitempty"`
	RelErr   *float64 `json:"relerr_max,omitempty"`
	FEvals   int      `json:"fevals,omitempty"`
	JacEvals int      `json:"jacevals,omitempty"`
	LUs      int      `json:"lus,omitempty"`
	Steps    int      `json:"steps,omitempty"`
	Rejected int      `json:"rejected,omitempty"`
	// allocations per accepted step, for the single-solve figures
	AllocsPerStep *float64 `json:"allocs_per_step,omitempty"`
}

// emitODE is bencher.emit for a figure with extra fields.
func (b *bencher) emitODE(r odeResult) { b.emitExtra(&r.result, &r) }

// scaled converts a measurement in ns per call to unit (µs or ms).
func scaled(s stats, unit string) result {
	d := map[string]float64{"us": 1e3, "ms": 1e6}[unit]
	return result{Median: s.median / d, Min: s.min / d, Max: s.max / d, Unit: unit,
		Allocs: s.allocs, Samples: s.samples, Inner: s.inner}
}

func maxAbsErr(u, ref []float64) (abs, rel float64) {
	for i := range ref {
		e := math.Abs(u[i] - ref[i])
		abs = max(abs, e)
		rel = max(rel, e/math.Abs(ref[i]))
	}
	return abs, rel
}

func ptr(x float64) *float64 { return &x }

// timeSolve times Reinit + Run of prob in one reused integrator (method
// m, tolerances rtol and atol) and returns the integrator, as the last run
// left it, with the timings. A failed run is an error prefixed by what.
func (b *bencher) timeSolve(what string, prob ode.Problem[float64], m ode.Method, rtol, atol float64) (*ode.Integrator[float64], stats, error) {
	ctx := context.Background()
	it, err := ode.NewIntegrator(prob, m, ode.Tol(rtol, atol))
	if err != nil {
		return nil, stats{}, err
	}
	var runErr error
	s := b.measure(func() {
		if err := it.Reinit(prob.U0, prob.T0, prob.T1, prob.P); err != nil && runErr == nil {
			runErr = err
		}
		if err := it.Run(ctx); err != nil && runErr == nil {
			runErr = err
		}
	})
	if runErr != nil {
		return nil, stats{}, fmt.Errorf("%s: %w", what, runErr)
	}
	return it, s, nil
}

// solveFigure times Reinit + Run of prob in one reused integrator and emits
// it with the counters and the error against ref.
func (b *bencher) solveFigure(name, note string, prob ode.Problem[float64], m ode.Method, rtol, atol float64, ref []float64) error {
	it, s, err := b.timeSolve(name, prob, m, rtol, atol)
	if err != nil {
		return err
	}
	st := it.Stats()
	abs, rel := maxAbsErr(it.U(), ref)
	r := odeResult{result: scaled(s, "us"), Method: m.Name(), RTol: rtol, ATol: atol,
		Err: ptr(abs), RelErr: ptr(rel), FEvals: st.FEvals, JacEvals: st.JacEvals, LUs: st.LUs,
		Steps: st.Accepted, Rejected: st.Rejected, AllocsPerStep: ptr(s.allocs / float64(st.Accepted))}
	r.Case, r.Note = name, note
	b.emitODE(r)
	return nil
}

func runODE(b *bencher) error {
	ctx := context.Background()
	lv := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T0: 0, T1: 10}
	const rtol, atol = 1e-6, 1e-8

	// Lotka-Volterra, one solve.
	if err := b.solveFigure("Lotka-Volterra Tsit5, reused Integrator",
		"Reinit + Run per solve (peer: CVodeReInit + CVode); err vs the issue's u(10)", lv, ode.Tsit5(), rtol, atol, lvRef); err != nil {
		return err
	}
	var sol *ode.Solution[float64]
	var solveErr error
	s := b.measure(func() {
		var err error
		if sol, err = ode.Solve(ctx, lv, ode.Tsit5(), ode.Tol(rtol, atol)); err != nil && solveErr == nil {
			solveErr = err
		}
	})
	if solveErr != nil {
		return solveErr
	}
	abs, rel := maxAbsErr(sol.U[len(sol.U)-1], lvRef)
	r := odeResult{result: scaled(s, "us"), Method: "Tsit5", RTol: rtol, ATol: atol, Err: ptr(abs), RelErr: ptr(rel),
		FEvals: sol.Stats.FEvals, Steps: sol.Stats.Accepted, Rejected: sol.Stats.Rejected}
	r.Case, r.Note = "Lotka-Volterra Tsit5, ode.Solve", "one-shot Solve: Init, Run, Solution (peer: create + solve + free)"
	b.emitODE(r)

	// The ensemble of 1000.
	if err := b.odeEnsemble(lv, rtol, atol); err != nil {
		return err
	}

	// Robertson.
	rob := ode.Problem[float64]{F: robertson, U0: []float64{1, 0, 0}, T0: 0, T1: 1e5}
	if len(stiffMethods) == 0 {
		r := odeResult{}
		r.Case, r.Unit = "Robertson to t=1e5", "skipped"
		r.Note = "skipped: package ode has no stiff method yet (Rosenbrock23, Rodas5P in progress)"
		b.emitODE(r)
	}
	for _, mk := range stiffMethods {
		m := mk()
		for _, jac := range []bool{true, false} {
			p, how := rob, "finite-difference Jacobian"
			if jac {
				p.Jac, how = robertsonJac, "analytic Jacobian"
			}
			if err := b.solveFigure(fmt.Sprintf("Robertson to t=1e5 %s, %s", m.Name(), how),
				"reused Integrator; relerr vs the issue's y(1e5) (peer: CVODE BDF + Newton + dense)", p, m, rtol, atol, robRef); err != nil {
				return err
			}
		}
	}

	// Work-precision.
	for _, m := range []ode.Method{ode.Tsit5(), ode.DP5(), ode.Vern7()} {
		for k := 3; k <= 10; k++ {
			rt := math.Pow(10, -float64(k))
			if err := b.solveFigure(fmt.Sprintf("work-precision Lotka-Volterra %s rtol=1e-%d", m.Name(), k),
				"atol = rtol/100; reused Integrator", lv, m, rt, rt/100, lvRef); err != nil {
				return err
			}
		}
	}
	return nil
}

// odeEnsemble times the 1000-trajectory ensemble on 1 and 2 workers.
func (b *bencher) odeEnsemble(lv ode.Problem[float64], rtol, atol float64) error {
	ctx := context.Background()
	const n, ensembleRefTol = 1000, 1e-10
	ens := ode.Ensemble[float64]{Base: lv, N: n,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 1 + 0.001*float64(i) }}
	ref, err := ens.Solve(ctx, ode.Vern7(), ode.Tol(1e-12, 1e-14))
	if err != nil {
		return err
	}
	if e, _ := maxAbsErr(ref.U[0], lvRef); e > ensembleRefTol {
		return fmt.Errorf("ensemble reference: trajectory 0 is off the issue's u(10) by %g, want ≤ %g", e, ensembleRefTol)
	}
	var res [3]*ode.EnsembleResult[float64]
	for w := 1; w <= 2; w++ {
		if res[w], err = ens.Solve(ctx, ode.Tsit5(), ode.Tol(rtol, atol), ode.Workers(w)); err != nil {
			return err
		}
	}
	for i := range n {
		for j, v := range res[1].U[i] {
			if math.Float64bits(v) != math.Float64bits(res[2].U[i][j]) {
				return fmt.Errorf("ensemble: trajectory %d differs between 1 and 2 workers: %v vs %v, want equal bit for bit", i, res[1].U[i], res[2].U[i])
			}
		}
	}
	var abs float64
	for i := range n {
		e, _ := maxAbsErr(res[1].U[i], ref.U[i])
		abs = max(abs, e)
	}
	var st [3]stats
	for w := 1; w <= 2; w++ {
		var runErr error
		st[w] = b.measure(func() {
			if _, err := ens.Solve(ctx, ode.Tsit5(), ode.Tol(rtol, atol), ode.Workers(w)); err != nil && runErr == nil {
				runErr = err
			}
		})
		if runErr != nil {
			return runErr
		}
		r := odeResult{result: scaled(st[w], "ms"), Method: "Tsit5", RTol: rtol, ATol: atol, Workers: w,
			Err: ptr(abs), FEvals: res[w].Stats.FEvals, Steps: res[w].Stats.Accepted, Rejected: res[w].Stats.Rejected}
		r.Case = fmt.Sprintf("Lotka-Volterra ensemble of 1000, %d worker", w)
		if w > 1 {
			r.Case += "s"
		}
		r.N = n
		r.Note = fmt.Sprintf("ode.Ensemble.Solve, u0 = [1 + 0.001 i, 1], shards of %d; identical results for 1 and 2 workers; err vs Vern7 at rtol 1e-12; allocs per Solve (result, one Integrator per worker), GOMAXPROCS=%d",
			ode.DefaultShardSize, runtime.GOMAXPROCS(0))
		b.emitODE(r)
	}
	r := result{Case: "Lotka-Volterra ensemble of 1000, speedup 2 workers / 1", Unit: "x",
		Median: st[1].median / st[2].median, Min: st[1].min / st[2].min, Max: st[1].max / st[2].max,
		Note: "time on 1 worker ÷ time on 2 (median/median, min/min, max/max)"}
	b.emit(r)
	return nil
}
