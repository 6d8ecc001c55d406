package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// Scenario stiffsens: issue 28's gradient through a large stiff solve. The
// 1-D Brusselator of internal/stiffprob (Bruss1DParams: 2N interleaved
// states, band 2, t ∈ [0, 10]) with θ = (A, B, α) = (1, 3, 1/50) and the
// loss G = ½ Σᵢ uᵢ(10)², differentiated with respect to θ and the 2N
// initial values at rtol 1e-6, atol 1e-8, by
//
//   - flatkit: each sensitivity method over BDF and Rodas5P with the exact
//     Jacobian in band and in sparse (CSR) storage, in one reused ode.GradientSolver, gs.Gradient per
//     call; a method ode refuses, or whose gradient fails (BacksolveAdjoint
//     blows up integrating the diffusion backwards), is a line with unit
//     "skipped" and ode's reason. The sensitivity systems are solved in the
//     problem's structure;
//     the adjoints run at -stiffsens-n grid points (100 by default; the
//     issue's 500 needs the peer for its reference, see below) and
//     ForwardSensitivity, whose 2N+4 systems share the
//     state's factorisation but cost (2N+4)× its work, at -stiffsens-fwdn
//     (10). Beside them, the forward solve alone;
//   - the CVODES peer, peers/cvodes_bruss_sens.c, built with cc when
//     SUNDIALS is installed ("peer": true): its adjoint (BDF, band LU,
//     backward quadrature) and its staggered forward sensitivities of θ
//     (dG/dθ only; -stiffsens-u0sens adds the 2N initial values), at N =
//     500, the size, and at each N of the flatkit lines.
//
// Every gradient line carries max_rel_err against the reference of
// stiffsens_ref.go (central differences of tight solves, cached; above
// N = 200 CVODES's adjoint at rtol 1e-10 when the peer is built): the
// larger of the largest relative error over dG/dθ (rel_err_theta) and the
// relative error in norm of dG/du0 (rel_err_u0, absent when the method
// gives no dG/du0). Each N's reference line also scores CVODES's adjoint
// at rtol 1e-10 (the peer's -check) against it. p holds (A, B, 50α), so
// that α = 1/50 is exact in float32; the lines give dG/dα.
//
// -quick runs every part at N = 5, the peer once. -stiffsens-scale runs
// the scaling lines of stiffsens_scale.go instead.

func init() {
	register(scenario{
		name:  "stiffsens",
		about: "gradient of the 1-D Brusselator (θ and u0) by each sensitivity method over BDF and Rodas5P, band; the CVODES peer (adjoint, staggered sensitivities) when SUNDIALS is installed",
		run:   runStiffSens,
	})
	benchFlags = append(benchFlags, func(fs *flag.FlagSet) {
		fs.IntVar(&stiffSensOpt.n, "stiffsens-n", stiffSensOpt.n, "stiffsens: grid points (2N states) of flatkit's adjoint lines")
		fs.IntVar(&stiffSensOpt.fwdN, "stiffsens-fwdn", stiffSensOpt.fwdN, "stiffsens: grid points of flatkit's ForwardSensitivity lines")
		fs.IntVar(&stiffSensOpt.peerN, "stiffsens-peern", stiffSensOpt.peerN, "stiffsens: grid points of the CVODES peer's own lines (0: none)")
		fs.BoolVar(&stiffSensOpt.u0sens, "stiffsens-u0sens", false, "stiffsens: the peer's forward sensitivities of the 2N initial values too (slow)")
		fs.BoolVar(&stiffSensOpt.noPeer, "stiffsens-nopeer", false, "stiffsens: leave the CVODES peer out")
		fs.BoolVar(&stiffSensOpt.scale, "stiffsens-scale", false, "stiffsens: only the scaling lines: BDF's adjoint at each N of -stiffsens-scalen, with 3 and 3 + -stiffsens-dummy parameters")
		fs.StringVar(&stiffSensOpt.scaleN, "stiffsens-scalen", stiffSensOpt.scaleN, "stiffsens: grid points of the scaling lines, separated by commas")
		fs.IntVar(&stiffSensOpt.dummy, "stiffsens-dummy", stiffSensOpt.dummy, "stiffsens: parameters added to θ in the scaling lines (0: none)")
	})
}

// stiffSensOpt are the scenario's flags.
var stiffSensOpt = struct {
	n, fwdN, peerN, dummy int
	u0sens, noPeer, scale bool
	scaleN                string
}{n: 100, fwdN: 10, peerN: 500, dummy: 100, scaleN: "250,500,1000,2000"}

// The tolerances of the scenario (and of the peer).
const stiffSensRTol, stiffSensATol = 1e-6, 1e-8

// stiffSensQuickN is the grid of -quick mode.
const stiffSensQuickN = 5

// stiffSensMethods are the stiff methods of the flatkit lines.
var stiffSensMethods = []struct {
	name   string
	method func() ode.Method
}{{"BDF", ode.BDF}, {"Rodas5P", ode.Rodas5P}}

// stiffSensAdjoints and stiffSensForward are the sensitivity methods run
// at -stiffsens-n and at -stiffsens-fwdn.
var (
	stiffSensAdjoints = []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 10}, ode.GaussAdjoint{}, ode.DiscreteAdjoint{}, ode.BacksolveAdjoint{}}
	stiffSensForward  = []ode.Sensitivity{ode.ForwardSensitivity{}}
)

// stiffSensResult is a figure with the scenario's extra fields.
type stiffSensResult struct {
	result
	Skipped     string    `json:"skipped,omitempty"`
	Method      string    `json:"method,omitempty"`
	Sensitivity string    `json:"sensitivity,omitempty"`
	Structure   string    `json:"structure,omitempty"`
	States      int       `json:"states,omitempty"`
	RTol        float64   `json:"rtol,omitempty"`
	ATol        float64   `json:"atol,omitempty"`
	MaxRelErr   *float64  `json:"max_rel_err,omitempty"`
	RelErrTheta *float64  `json:"rel_err_theta,omitempty"`
	RelErrU0    *float64  `json:"rel_err_u0,omitempty"`
	Covers      string    `json:"covers,omitempty"`
	G           *float64  `json:"G,omitempty"`
	DGdTheta    []float64 `json:"dGdtheta,omitempty"` // dG/dA, dG/dB, dG/dα
	DGdU0Norm   *float64  `json:"dGdu0_norm,omitempty"`
	FwdSteps    int       `json:"fwd_steps,omitempty"`
	FwdRejected int       `json:"fwd_rejected,omitempty"`
	BwdSteps    int       `json:"bwd_steps,omitempty"`
	FEvals      int       `json:"fevals,omitempty"`
	LUs         int       `json:"lus,omitempty"`
	VsSolve     *float64  `json:"x_forward_solve,omitempty"` // time ÷ the same method's forward solve
	Reference   string    `json:"reference,omitempty"`
	Cached      *bool     `json:"cached,omitempty"`
	CheckRelErr *float64  `json:"cvodes_check_rel_err,omitempty"` // the peer's rtol 1e-10 adjoint vs the reference
	Params      int       `json:"params,omitempty"`               // len(p), in the scaling lines
	UsPerState  *float64  `json:"us_per_state,omitempty"`         // median ÷ states, in the scaling lines
	VsFirst     *float64  `json:"x_first_per_state,omitempty"`    // us_per_state ÷ the smallest N's
	VsThree     *float64  `json:"x_3_params,omitempty"`           // time ÷ the same N's with 3 parameters
	RelDiff3    *float64  `json:"rel_diff_3_params,omitempty"`    // max_rel_err's measure against the 3-parameter gradient
	grad        []float64 // dG/dθ (α, not 50α) then dG/du0
}

func (b *bencher) emitStiffSens(r stiffSensResult) { b.emitExtra(&r.result, &r) }

func runStiffSens(b *bencher) error {
	ctx := context.Background()
	o := stiffSensOpt
	adjN, fwdN, peerN := o.n, o.fwdN, o.peerN
	if b.opt.quick {
		adjN, fwdN, peerN = stiffSensQuickN, stiffSensQuickN, 0
	}
	if adjN < 1 || fwdN < 1 || peerN < 0 {
		return fmt.Errorf("want -stiffsens-n, -stiffsens-fwdn ≥ 1 and -stiffsens-peern ≥ 0, got %d, %d, %d", adjN, fwdN, peerN)
	}
	var peer *stiffSensPeer
	peerWhy := "left out (-stiffsens-nopeer)"
	if !o.noPeer {
		peer, peerWhy = buildStiffSensPeer(ctx)
	}
	if peer != nil {
		defer peer.close()
	} else {
		r := stiffSensResult{Skipped: peerWhy}
		r.Case, r.Unit, r.Allocs = "CVODES peer", "skipped", -1
		b.emitStiffSens(r)
	}
	if o.scale {
		return b.runStiffSensScale(ctx, peer)
	}
	ns := []int{adjN, fwdN}
	if peerN > 0 && peer != nil {
		ns = append(ns, peerN)
	}
	slices.Sort(ns)
	for _, n := range slices.Compact(ns) {
		var sens []ode.Sensitivity
		if n == adjN {
			sens = append(sens, stiffSensAdjoints...)
		}
		if n == fwdN {
			sens = append(sens, stiffSensForward...)
		}
		if err := b.stiffSensAt(ctx, n, sens, peer); err != nil {
			return fmt.Errorf("N=%d: %w", n, err)
		}
	}
	return nil
}

// stiffSensAt emits the lines at N grid points: the reference, flatkit's
// forward solves and gradients by sens, and the peer's.
func (b *bencher) stiffSensAt(ctx context.Context, n int, sens []ode.Sensitivity, peer *stiffSensPeer) error {
	ref, err := b.stiffSensRefLine(ctx, n, peer)
	if err != nil {
		return err
	}
	if len(sens) > 0 {
		for _, m := range stiffSensMethods {
			if err := b.stiffSensFlatkit(ctx, n, m.name, m.method, sens, ref); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
	}
	if peer != nil {
		return b.stiffSensPeerLines(ctx, n, peer, ref)
	}
	return nil
}

// stiffSensCentralMax is the largest N whose reference is computed by
// central differences when the peer can give one instead: at N = 500
// they take 2012 tight solves, many minutes on a loaded machine.
const stiffSensCentralMax = 200

// stiffSensRefLine gets the reference at N and emits its line, with
// CVODES's tight adjoint (the peer's -check) scored against it. Above
// stiffSensCentralMax, unless central differences are cached, the
// peer's tight adjoint is the reference.
func (b *bencher) stiffSensRefLine(ctx context.Context, n int, peer *stiffSensPeer) (*stiffSensRef, error) {
	var check []float64
	if peer != nil {
		lines, err := peer.run(ctx, n, "-check")
		if err != nil {
			return nil, err
		}
		if len(lines) != 1 || len(lines[0].grad) != 4+2*n {
			return nil, fmt.Errorf("peer -check: %d lines, want one with the whole gradient", len(lines))
		}
		check = lines[0].grad
	}
	var ref *stiffSensRef
	cached := false
	if check != nil && n > stiffSensCentralMax {
		ref, cached = stiffSensCachedRef(n)
	}
	if ref == nil && check != nil && n > stiffSensCentralMax {
		ref = &stiffSensRef{N: n, G: check[0], Theta: check[1:4], U0: check[4:],
			About: fmt.Sprintf("CVODES's adjoint at rtol 1e-10, atol 1e-14 (the peer's -check): central differences take too long above N = %d", stiffSensCentralMax)}
	} else if ref == nil {
		var err error
		if ref, cached, err = stiffSensReference(ctx, n); err != nil {
			return nil, err
		}
	}
	r := stiffSensResult{States: 2 * n, RTol: stiffSensRefRTol, ATol: stiffSensRefATol, Reference: ref.About,
		Cached: &cached, G: ptr(ref.G), DGdTheta: ref.Theta, DGdU0Norm: ptr(norm2(ref.U0))}
	r.Case, r.Median, r.Min, r.Max, r.Unit, r.Allocs = fmt.Sprintf("bruss1d N=%d reference", n), ref.Seconds, ref.Seconds, ref.Seconds, "s", -1
	r.Note = "time to compute the reference (earlier, if cached, in " + stiffSensCacheDir() + ")"
	if check != nil {
		e, _, _ := stiffSensErrors(ref, check[1:4], check[4:])
		r.CheckRelErr = ptr(e)
	}
	b.emitStiffSens(r)
	return ref, nil
}

// stiffSensStructures are the Jacobian structures of the flatkit lines.
var stiffSensStructures = []string{"band", "sparse"}

// stiffSensProblem is the gradient's problem at N with the exact Jacobian
// in structure st ("band" or "sparse") and extra parameters that F reads
// (stiffprob.NewBruss1DParamsExtra).
func stiffSensProblem(n int, st string, extra int) ode.Problem[float64] {
	p := stiffprob.NewBruss1DParamsExtra[float64](n, extra)
	prob := ode.Problem[float64]{F: p.F, Jac: p.JacBand, JacStructure: ode.BandJacobian{Lower: 2, Upper: 2},
		JVP: p.JVP, VJP: p.VJP, U0: p.U0(), T0: 0, T1: 10, P: p.P()}
	if st == "sparse" {
		prob.Jac, prob.JacStructure = p.JacSparse, ode.SparseJacobian{Pattern: p.Pattern()}
	}
	return prob
}

// stiffSensLoss is G = ½ Σ u_i(10)² and its dG/du(10).
func stiffSensLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{10}, Saved: func(_ []float64, us, dl [][]float64) float64 {
		u, d := us[0], dl[0]
		for i := 0; i < len(u); i += 2 {
			d[i] = u[i]
		}
		return stiffSensG(u)
	}}
}

// stiffSensFlatkit emits the forward solve and each gradient of sens by
// one method at N, in each structure.
func (b *bencher) stiffSensFlatkit(ctx context.Context, n int, name string, method func() ode.Method,
	sens []ode.Sensitivity, ref *stiffSensRef) error {
	base := fmt.Sprintf("bruss1d N=%d ", n)
	for _, st := range stiffSensStructures {
		prob := stiffSensProblem(n, st, 0)
		solve, r, err := b.stiffSensSolve(prob, name, method, st)
		if err != nil {
			return err
		}
		r.Case = base + "forward solve " + name + " " + st
		b.emitStiffSens(r)
		for _, s := range sens {
			r := b.stiffSensGradient(ctx, prob, name, method, s, st, ref)
			r.Case = base + name + " " + st + " " + r.Sensitivity
			if r.Unit != "skipped" {
				r.VsSolve = ptr(round3(r.Median / solve.median * 1e6))
			}
			b.emitStiffSens(r)
		}
	}
	return nil
}

// stiffSensSolve times the forward solve alone and returns its line.
func (b *bencher) stiffSensSolve(prob ode.Problem[float64], name string, method func() ode.Method, st string) (stats, stiffSensResult, error) {
	it, solve, err := b.timeSolve("forward solve", prob, method(), stiffSensRTol, stiffSensATol)
	if err != nil {
		return stats{}, stiffSensResult{}, err
	}
	s := it.Stats()
	r := stiffSensResult{result: scaled(solve, "ms"), Method: name, Structure: st, States: len(prob.U0),
		RTol: stiffSensRTol, ATol: stiffSensATol, G: ptr(stiffSensG(it.U())), FwdSteps: s.Accepted,
		FwdRejected: s.Rejected, FEvals: s.FEvals, LUs: s.LUs, Covers: "G only: the forward solve, for scale"}
	r.Note = "reused Integrator, Reinit + Run"
	return solve, r, nil
}

// stiffSensGradient times gs.Gradient of the loss on prob by one method
// and sensitivity method, reused, and returns its line (unit "skipped"
// with ode's reason if ode refuses it), with its errors against ref if
// ref is not nil. The gradient is in the line's DGdTheta, Grad and DGdU0Norm.
func (b *bencher) stiffSensGradient(ctx context.Context, prob ode.Problem[float64], name string, method func() ode.Method,
	s ode.Sensitivity, st string, ref *stiffSensRef) stiffSensResult {
	sn := sensName(s)
	r := stiffSensResult{Method: name, Sensitivity: sn, Structure: st, States: len(prob.U0),
		RTol: stiffSensRTol, ATol: stiffSensATol}
	skip := func(err error) stiffSensResult {
		r.Unit, r.Skipped, r.Allocs = "skipped", err.Error(), -1
		return r
	}
	loss := stiffSensLoss()
	gs, err := ode.NewGradientSolver(prob, method(), s, ode.Tol(stiffSensRTol, stiffSensATol), ode.MaxSteps(10_000_000))
	if err != nil {
		return skip(err)
	}
	call := func() (*ode.GradientResult[float64], error) { return gs.Gradient(ctx, prob.P, loss) }
	if _, err := call(); err != nil {
		return skip(err)
	}
	first, _ := once(func() { _, _ = call() })
	calls := int(min(11, max(3, 2e9/float64(first))))
	g, sm, err := measured(func(fn func()) stats { return b.measureCalls(calls, fn) }, sn, call)
	if err != nil {
		return skip(err)
	}
	theta := []float64{g.P[0], g.P[1], 50 * g.P[2]}
	r.result = scaled(sm, "ms")
	if ref != nil {
		e, et, eu := stiffSensErrors(ref, theta, g.U0)
		r.MaxRelErr, r.RelErrTheta, r.RelErrU0 = ptr(e), ptr(et), ptr(eu)
	}
	r.Covers = "dG/dθ and dG/du0"
	r.G, r.DGdTheta, r.DGdU0Norm = ptr(g.Value), theta, ptr(norm2(g.U0))
	r.grad = append(append([]float64(nil), theta...), g.U0...)
	r.FwdSteps, r.FwdRejected, r.BwdSteps = g.Forward.Accepted, g.Forward.Rejected, g.Backward.Accepted
	r.FEvals, r.LUs = g.Forward.FEvals+g.Backward.FEvals, g.Forward.LUs+g.Backward.LUs
	r.Note = "reused GradientSolver, gs.Gradient per call; sensitivity systems in the " + st + " structure"
	return r
}

// stiffSensPeerLines runs the peer at N and emits its lines with their
// errors against ref.
func (b *bencher) stiffSensPeerLines(ctx context.Context, n int, peer *stiffSensPeer, ref *stiffSensRef) error {
	args := []string{"-rtol", fmt.Sprint(stiffSensRTol), "-atol", fmt.Sprint(stiffSensATol)}
	if b.opt.quick {
		args = append(args, "-reps", "1")
	}
	if stiffSensOpt.u0sens {
		args = append(args, "-u0sens")
	}
	lines, err := peer.run(ctx, n, args...)
	if err != nil {
		return err
	}
	var fwd float64
	for _, l := range lines {
		m := l.fields
		r := result{Scenario: b.scenario, Allocs: -1, N: 0}
		r.Case, _ = m["case"].(string)
		r.Unit, _ = m["unit"].(string)
		r.Median, _ = m["median"].(float64)
		r.Min, _ = m["min"].(float64)
		r.Max, _ = m["max"].(float64)
		m["scenario"], m["allocs"] = b.scenario, -1
		m["note"] = "CVODES, re-initialised per gradient; allocs not counted (-1)"
		if m["method"] == "forward" {
			fwd = r.Median
		} else if len(l.grad) >= 4 {
			var u0 []float64
			if len(l.grad) == 4+2*n {
				u0 = l.grad[4:]
			}
			e, et, eu := stiffSensErrors(ref, l.grad[1:4], u0)
			m["max_rel_err"], m["rel_err_theta"] = e, et
			if u0 != nil {
				m["rel_err_u0"] = eu
			}
			if fwd > 0 {
				m["x_forward_solve"] = round3(r.Median / fwd)
			}
		}
		b.emitExtra(&r, m)
	}
	return nil
}

func norm2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}
