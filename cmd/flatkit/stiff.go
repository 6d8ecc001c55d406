package main

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// Scenario stiff: the large stiff systems of ../shared/peers/cvode_stiff_bench.c
// (CVODE's BDF with its dense, band, KLU and GMRES linear solvers), case by
// case under the peer's names "<problem> N=<N> <linear solver>", at rtol
// 1e-6 and atol 1e-8. The problems are those of internal/stiffprob:
//
//   - bruss1d: the 1-D Brusselator, 2N states, band 2, t ∈ [0, 10], with
//     the exact Jacobian in the solver's storage (dense, band, CSR);
//   - bruss2d: the 2-D Brusselator of the SciML tutorial, 2N² states, t ∈
//     [0, 11.5], restarted at t = 1.1 where its forcing starts; klu with
//     the exact CSR Jacobian, gmres matrix-free without preconditioner.
//     The segment [0, 1.1] is unforced to its end; the peer's is not: its
//     F takes the forcing from t ≥ 1.1 and CVODE's step onto the stop
//     time evaluates F at t = 1.1, so the peer spends extra steps there
//     and starts [1.1, 11.5] from another state (the line's note);
//   - pollu: the Test Set's POLLU, 20 states, dense with difference
//     quotients for the Jacobian, as the peer's;
//   - medakzo: the Test Set's MEDAKZO, 400 states, restarted at t = 5 where
//     φ drops, band with difference quotients, as the peer's.
//
// A solve runs a reused ode.Integrator through the problem's segments,
// Reinit + Run each from the state the last left, as the peer's
// CVodeReInit at its restarts (the peer times create + solve + free). The
// repetitions follow the peer: one untimed solve, then at least 3 and
// until 2 s or 21 have run; median, min and max are over them, allocs per
// solve over all of them.
//
// Each line carries the peer's counters (nsteps = accepted steps, nfe,
// nje, nsetups = factorisations, nni, nli) of the whole solve, and of the
// last segment alone in last_segment: the peer's CVodeReInit zeroes its
// counters, so it prints those of its last segment. nfe counts the
// evaluations of F for difference-quotient Jacobians too, which CVODE's
// nfe leaves out (its nfeLS). The final state's rms, first
// and last components as the peer prints them, and the error against a
// reference solved once per problem at rtol 1e-10, atol 1e-14:
// err_weighted = max |u − ref| / (atol + rtol |ref|) with the case's
// tolerances, err_rel_inf = ‖u − ref‖∞ / ‖ref‖∞, and err_rfl, the largest
// relative error of rms, first and last, which scores the peer's line the
// same way from its printed values against ref_rms, ref_first and
// ref_last.
//
// A case whose linear solver ode refuses is a line with unit "skipped"
// and the reason; a small one runs a stand-in (BDF with a dense LU), named
// in stand_in. Scenario stiff64 is the peer's bruss2d64: the 2-D
// Brusselator at 64×64, which the peer runs only when named, and so does
// flatkit bench.

func init() {
	register(scenario{
		name:  "stiff",
		about: "large stiff systems (1-D and 2-D Brusselator, POLLU, MEDAKZO) with dense, band, sparse and GMRES linear solvers, as the CVODE peer",
		run:   func(b *bencher) error { return runStiff(b, stiffCases) },
	})
	register(scenario{
		name:      "stiff64",
		about:     "the 2-D Brusselator at 64×64 (8192 states) with a sparse LU, as the CVODE peer's bruss2d64; only when named",
		run:       func(b *bencher) error { return runStiff(b, stiff64Cases) },
		onlyNamed: true,
	})
}

// The tolerances of the scenario (and of the peer), and of its references.
const (
	stiffRTol, stiffATol       = 1e-6, 1e-8
	stiffRefRTol, stiffRefATol = 1e-10, 1e-14
)

// stiffCase is one line of the scenario: a problem of the peer at its N,
// and the kind of linear solver, the last word of the peer's case name.
type stiffCase struct {
	problem string // bruss1d, bruss2d, pollu, medakzo
	N       int
	kind    string // dense, band, klu (sparse LU), gmres
}

func (c stiffCase) name() string { return fmt.Sprintf("%s N=%d %s", c.problem, c.N, c.kind) }

// stiffCases are the peer's default cases, in its order.
var stiffCases = []stiffCase{
	{"bruss1d", 100, "dense"}, {"bruss1d", 100, "band"}, {"bruss1d", 100, "klu"},
	{"bruss1d", 250, "band"}, {"bruss1d", 500, "band"}, {"bruss1d", 500, "klu"},
	{"bruss1d", 1000, "band"}, {"bruss1d", 2000, "band"},
	{"bruss2d", 32, "klu"}, {"bruss2d", 32, "gmres"},
	{"pollu", 20, "dense"}, {"medakzo", 200, "band"},
}

// stiffQuickCases are the cases of -quick mode, which checks that the
// scenario runs: each problem small.
var stiffQuickCases = []stiffCase{
	{"bruss1d", 10, "dense"}, {"bruss1d", 10, "band"}, {"bruss1d", 10, "klu"},
	{"bruss2d", 6, "klu"}, {"bruss2d", 6, "gmres"}, {"pollu", 20, "dense"}, {"medakzo", 10, "band"},
}

// stiff64Cases is the peer's bruss2d64.
var stiff64Cases = []stiffCase{{"bruss2d", 64, "klu"}}

// stiffGrowthN are the grid sizes of the cost-growth line (band solver).
var stiffGrowthN = []int{250, 500, 1000, 2000}

// jacFunc is the signature of ode.Problem.Jac.
type jacFunc = func(J, u []float64, p []float32, t float64)

// stiffDef is a problem with its Jacobians in each storage; a nil Jacobian
// means difference quotients, as the peer uses for POLLU and MEDAKZO.
type stiffDef struct {
	n            int // states
	u0           []float64
	segs         []stiffprob.Segment
	f            func(du, u []float64, p []float32, t float64)
	jac          jacFunc // dense
	jacBand      jacFunc
	lower, upper int // bandwidths, for band
	pattern      *linalg.Pattern
	jacSparse    jacFunc
	refJac       jacFunc                   // exact and dense, for the reference
	refBand      jacFunc                   // exact band, for the reference, or nil
	check        func(ref []float64) error // checks the reference, or nil
	note         string                    // how the peer's set-up differs, or ""
}

// newStiffDef builds the problem of case c.
func newStiffDef(c stiffCase) *stiffDef {
	switch c.problem {
	case "bruss1d":
		p := stiffprob.NewBruss1D[float64](c.N)
		return &stiffDef{n: p.Dim(), u0: p.U0(), segs: p.Segments(), f: p.F, jac: p.Jac, jacBand: p.JacBand,
			lower: 2, upper: 2, pattern: p.Pattern(), jacSparse: p.JacSparse, refJac: p.Jac, refBand: p.JacBand}
	case "bruss2d":
		p := stiffprob.NewBruss2D[float64](c.N)
		return &stiffDef{n: p.Dim(), u0: p.U0(), segs: p.Segments(), f: p.F, pattern: p.Pattern(), jacSparse: p.JacSparse,
			refJac: p.Jac, note: bruss2DPeerNote}
	case "pollu":
		var p stiffprob.Pollu[float64]
		return &stiffDef{n: p.Dim(), u0: p.U0(), segs: p.Segments(), f: p.F, refJac: p.Jac, check: checkPolluRef}
	case "medakzo":
		p := stiffprob.Medakzo[float64]{N: c.N}
		return &stiffDef{n: p.Dim(), u0: p.U0(), segs: p.Segments(), f: p.F, lower: 2, upper: 2, refJac: p.Jac,
			refBand: p.JacBand, note: segmentsPeerNote}
	}
	panic("flatkit: stiff: unknown problem " + c.problem)
}

// The notes of the cases whose set-up or counters differ from the peer's.
const (
	segmentsPeerNote = "the peer prints the counters of its last segment alone (CVodeReInit zeroes them): compare last_segment"
	bruss2DPeerNote  = "the peer's F is forced at t = 1.1 in its segment [0, 1.1] (CVODE's step onto the stop time " +
		"evaluates F there), this one's is not, so the peer's counts and final state differ; CVODE unforced there " +
		"takes BDF's steps (TestBDFSegmentsLikeCVODE); " + segmentsPeerNote
)

// checkPolluRef checks a POLLU reference against the Test Set's y(60).
func checkPolluRef(ref []float64) error {
	for i, w := range stiffprob.PolluRef {
		if math.Abs(ref[i]-w) > 1e-7*math.Abs(w)+1e-14 {
			return fmt.Errorf("the POLLU reference's y%d(60) = %.10g, want the Test Set's %.10g", i+1, ref[i], w)
		}
	}
	return nil
}

// stiffSolver is how a case solves: the method, and the problem's Jacobian
// in the structure of the linear solver.
type stiffSolver struct {
	method    ode.Method
	structure ode.Structure
	jac       jacFunc
	linsolver string // as the JSON line names it
	standIn   string // why a stand-in runs, if one does
}

// stiffStandInMax is the largest system a dense stand-in solves.
const stiffStandInMax = 400

// stiffSolvers returns the solvers of a case's kind for d, best first:
// BDF with the kind's linear solver, then, on up to stiffStandInMax
// states, BDF with a dense LU standing in for a linear solver ode does
// not have yet. The scenario runs the first that ode accepts, and skips
// the case with the reasons when it accepts none.
func stiffSolvers(d *stiffDef, kind string) []stiffSolver {
	var s []stiffSolver
	switch kind {
	case "dense":
		return []stiffSolver{{method: ode.BDF(), structure: ode.DenseJacobian{}, jac: d.jac, linsolver: "dense LU"}}
	case "band":
		s = append(s, stiffSolver{method: ode.BDF(), structure: d.band(), jac: d.jacBand, linsolver: "band LU"})
	case "klu":
		s = append(s, stiffSolver{method: ode.BDF(), structure: ode.SparseJacobian{Pattern: d.pattern}, jac: d.jacSparse,
			linsolver: "sparse LU"})
	case "gmres":
		// CVODE's SPGMR as the peer sets it up: 5 Krylov vectors, no
		// restart, no preconditioner, J·v by difference quotients.
		return []stiffSolver{{method: &ode.BDFMethod{Linear: ode.GMRES{}}, structure: ode.MatrixFreeJacobian{}, linsolver: "GMRES"}}
	}
	if d.n <= stiffStandInMax {
		s = append(s, stiffSolver{method: ode.BDF(), structure: ode.DenseJacobian{}, jac: d.jac, linsolver: "dense LU",
			standIn: fmt.Sprintf("BDF with a dense LU: ode refuses BDF with a %s", s[0].linsolver)})
	}
	return s
}

// band is d's band structure.
func (d *stiffDef) band() ode.Structure { return ode.BandJacobian{Lower: d.lower, Upper: d.upper} }

// stiffRefSolvers are the solvers of the reference, best first: Rodas5P
// with the exact Jacobian in a band, in d's pattern, or dense on up to
// stiffStandInMax states.
func stiffRefSolvers(d *stiffDef) []stiffSolver {
	var s []stiffSolver
	if d.refBand != nil {
		s = append(s, stiffSolver{method: ode.Rodas5P(), structure: d.band(), jac: d.refBand, linsolver: "band LU"})
	}
	if d.pattern != nil {
		s = append(s, stiffSolver{method: ode.Rodas5P(), structure: ode.SparseJacobian{Pattern: d.pattern}, jac: d.jacSparse,
			linsolver: "sparse LU"})
	}
	if d.n <= stiffStandInMax {
		s = append(s, stiffSolver{method: ode.Rodas5P(), structure: ode.DenseJacobian{}, jac: d.refJac, linsolver: "dense LU"})
	}
	return s
}

// firstRun returns a run of the first of solvers that ode accepts at the
// tolerances, or the reasons it accepts none.
func firstRun(d *stiffDef, solvers []stiffSolver, rtol, atol float64) (*stiffRun, stiffSolver, string) {
	var why []string
	for _, s := range solvers {
		r, err := newStiffRun(d, s, rtol, atol)
		if err == nil {
			return r, s, ""
		}
		why = append(why, fmt.Sprintf("%s with a %s: %v", s.method.Name(), s.linsolver, err))
	}
	if len(why) == 0 {
		return nil, stiffSolver{}, "no solver"
	}
	return nil, stiffSolver{}, strings.Join(why, "; ")
}

// stiffReference solves d at rtol 1e-10, atol 1e-14 with the best solver
// built, or returns why there is none.
func stiffReference(ctx context.Context, d *stiffDef) ([]float64, string, error) {
	r, s, why := firstRun(d, stiffRefSolvers(d), stiffRefRTol, stiffRefATol)
	if r == nil {
		return nil, "no reference: " + why, nil
	}
	if err := r.solve(ctx); err != nil {
		return nil, "", fmt.Errorf("reference: %w", err)
	}
	ref := slices.Clone(r.it.U())
	if d.check != nil {
		if err := d.check(ref); err != nil {
			return nil, "", err
		}
	}
	return ref, fmt.Sprintf("%s, %s, exact Jacobian, rtol %g, atol %g", s.method.Name(), s.linsolver, stiffRefRTol, stiffRefATol), nil
}

// stiffRun is a reused integrator that solves a problem's segments.
type stiffRun struct {
	it    *ode.Integrator[float64]
	d     *stiffDef
	stats ode.Stats // of the whole solve
	last  ode.Stats // of the last segment
}

func newStiffRun(d *stiffDef, s stiffSolver, rtol, atol float64) (*stiffRun, error) {
	seg := d.segs[0]
	prob := ode.Problem[float64]{F: d.f, Jac: s.jac, JacStructure: s.structure, U0: d.u0, T0: seg.T0, T1: seg.T1, P: seg.P}
	it, err := ode.NewIntegrator(prob, s.method, ode.Tol(rtol, atol), ode.MaxSteps(10_000_000))
	if err != nil {
		return nil, err
	}
	return &stiffRun{it: it, d: d}, nil
}

// solve runs the segments one after the other and sums their counters.
func (r *stiffRun) solve(ctx context.Context) error {
	r.stats = ode.Stats{}
	u := r.d.u0
	for _, s := range r.d.segs {
		if err := r.it.Reinit(u, s.T0, s.T1, s.P); err != nil {
			return err
		}
		if err := r.it.Run(ctx); err != nil {
			return fmt.Errorf("segment [%g, %g]: %w", s.T0, s.T1, err)
		}
		st := r.it.Stats()
		r.last = st
		r.stats.Add(st)
		u = r.it.U()
	}
	return nil
}

// stiffResult is a figure with the scenario's extra fields.
type stiffResult struct {
	result
	Skipped   string   `json:"skipped,omitempty"`
	StandIn   string   `json:"stand_in,omitempty"`
	Method    string   `json:"method,omitempty"`
	LinSolver string   `json:"linsolver,omitempty"`
	Jacobian  string   `json:"jacobian,omitempty"`
	States    int      `json:"states,omitempty"`
	RTol      float64  `json:"rtol,omitempty"`
	ATol      float64  `json:"atol,omitempty"`
	Reps      int      `json:"reps,omitempty"`
	NSteps    int      `json:"nsteps,omitempty"`
	Rejected  *int     `json:"rejected,omitempty"`
	NFE       int      `json:"nfe,omitempty"`
	NJE       *int     `json:"nje,omitempty"`
	NSetups   *int     `json:"nsetups,omitempty"`
	NNI       *int     `json:"nni,omitempty"`
	NLI       *int     `json:"nli,omitempty"`
	RMS       *float64 `json:"rms,omitempty"`
	First     *float64 `json:"first,omitempty"`
	Last      *float64 `json:"last,omitempty"`
	Reference string   `json:"reference,omitempty"`
	ErrW      *float64 `json:"err_weighted,omitempty"`
	ErrRelInf *float64 `json:"err_rel_inf,omitempty"`
	ErrRFL    *float64 `json:"err_rfl,omitempty"`
	RefRMS    *float64 `json:"ref_rms,omitempty"`
	RefFirst  *float64 `json:"ref_first,omitempty"`
	RefLast   *float64 `json:"ref_last,omitempty"`
	// The counters of the last segment alone: those the peer prints, as
	// CVodeReInit zeroes its counters at each restart.
	LastSegment *stiffCounters `json:"last_segment,omitempty"`
	// the cost-growth line: time per state at each N, in µs
	PerState    map[string]float64 `json:"us_per_state,omitempty"`
	PerStateMin map[string]float64 `json:"us_per_state_min,omitempty"`
	SpreadPc    *float64           `json:"spread_pc,omitempty"`
	SpreadMinPc *float64           `json:"spread_min_pc,omitempty"`
}

func iptr(x int) *int { return &x }

// stiffCounters are the peer's counters.
type stiffCounters struct {
	NSteps  int `json:"nsteps"`
	NFE     int `json:"nfe"`
	NJE     int `json:"nje"`
	NSetups int `json:"nsetups"`
	NNI     int `json:"nni"`
	NLI     int `json:"nli"`
}

// runStiff runs cases, then the cost-growth line when the band cases at
// stiffGrowthN are among them.
func runStiff(b *bencher, cases []stiffCase) error {
	ctx := context.Background()
	defs := map[string]*stiffDef{}
	type refEntry struct {
		u     []float64
		about string
	}
	refs := map[string]refEntry{}
	perState := map[int][2]float64{} // median and min time per state, µs
	growthSkip := ""
	if b.opt.quick {
		cases = stiffQuickCases
	}
	for _, c := range cases {
		key := fmt.Sprintf("%s N=%d", c.problem, c.N)
		d := defs[key]
		if d == nil {
			d = newStiffDef(c)
			defs[key] = d
		}
		r := stiffResult{States: d.n, RTol: stiffRTol, ATol: stiffATol}
		r.Case = c.name()
		run, s, skip := firstRun(d, stiffSolvers(d, c.kind), stiffRTol, stiffATol)
		if run == nil {
			r.Unit, r.Skipped = "skipped", skip
			b.emitStiff(r)
			if c.problem == "bruss1d" && c.kind == "band" {
				growthSkip = fmt.Sprintf("N=%d: %s", c.N, skip)
			}
			continue
		}
		ref, ok := refs[key]
		if !ok {
			u, about, err := stiffReference(ctx, d)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			ref = refEntry{u, about}
			refs[key] = ref
		}
		if err := b.stiffCase(ctx, &r, run, s, ref.u, ref.about); err != nil {
			return fmt.Errorf("%s: %w", c.name(), err)
		}
		if c.problem == "bruss1d" && c.kind == "band" {
			perState[c.N] = [2]float64{r.Median * 1e3 / float64(d.n), r.Min * 1e3 / float64(d.n)}
		}
	}
	if slices.ContainsFunc(cases, func(c stiffCase) bool { return c.problem == "bruss1d" && c.kind == "band" && c.N == stiffGrowthN[0] }) {
		b.stiffGrowth(perState, growthSkip)
	}
	return nil
}

// stiffCase times run's solves by s and emits its line, r.
func (b *bencher) stiffCase(ctx context.Context, r *stiffResult, run *stiffRun, s stiffSolver, ref []float64, refAbout string) error {
	ts, allocs, err := b.timeStiff(ctx, run)
	if err != nil {
		return err
	}
	sort := slices.Clone(ts)
	slices.Sort(sort)
	r.Median, r.Min, r.Max, r.Unit = median(sort)/1e6, sort[0]/1e6, sort[len(sort)-1]/1e6, "ms"
	r.Allocs, r.Reps = allocs, len(ts)
	r.StandIn, r.Method, r.LinSolver = s.standIn, s.method.Name(), s.linsolver
	r.Jacobian = "exact"
	if s.jac == nil {
		r.Jacobian = "difference quotients"
	}
	st := run.stats
	r.NSteps, r.Rejected, r.NFE = st.Accepted, iptr(st.Rejected), st.FEvals
	r.NJE, r.NSetups, r.NNI, r.NLI = iptr(st.JacEvals), iptr(st.LUs), iptr(st.NewtonIters), iptr(st.LinearIters)
	r.Note = run.d.note
	if len(run.d.segs) > 1 {
		l := run.last
		r.LastSegment = &stiffCounters{NSteps: l.Accepted, NFE: l.FEvals, NJE: l.JacEvals, NSetups: l.LUs, NNI: l.NewtonIters, NLI: l.LinearIters}
	}
	u := run.it.U()
	rms, first, last := rmsFirstLast(u)
	r.RMS, r.First, r.Last = ptr(rms), ptr(first), ptr(last)
	if ref == nil {
		r.Reference = refAbout
	} else {
		r.Reference = refAbout
		var w, e, nr float64
		for i := range u {
			di := math.Abs(u[i] - ref[i])
			w = max(w, di/(stiffATol+stiffRTol*math.Abs(ref[i])))
			e, nr = max(e, di), max(nr, math.Abs(ref[i]))
		}
		rr, rf, rl := rmsFirstLast(ref)
		r.ErrW, r.ErrRelInf = ptr(w), ptr(e/nr)
		r.ErrRFL = ptr(max(relErr1(rms, rr), relErr1(first, rf), relErr1(last, rl)))
		r.RefRMS, r.RefFirst, r.RefLast = ptr(rr), ptr(rf), ptr(rl)
	}
	b.emitStiff(*r)
	return nil
}

// timeStiff solves once untimed, then as the peer repeats: at least 3
// solves, more until 2 s or 21 solves (one in -quick mode). It returns the
// time of each in ns and the allocations per solve over them all.
func (b *bencher) timeStiff(ctx context.Context, run *stiffRun) ([]float64, float64, error) {
	if err := run.solve(ctx); err != nil {
		return nil, 0, err
	}
	minReps, maxReps, budget := 3, 21, 2*time.Second
	if b.opt.quick {
		minReps, maxReps = 1, 1
	}
	ts := make([]float64, 0, maxReps) // before the count: appends allocate nothing
	var total time.Duration
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for len(ts) < minReps || (total < budget && len(ts) < maxReps) {
		start := time.Now()
		err := run.solve(ctx)
		el := time.Since(start)
		if err != nil {
			return nil, 0, err
		}
		ts = append(ts, float64(el))
		total += el
	}
	runtime.ReadMemStats(&m1)
	return ts, float64(m1.Mallocs-m0.Mallocs) / float64(len(ts)), nil
}

// rmsFirstLast is the root mean square of u and its first and last
// components, as the peer prints them.
func rmsFirstLast(u []float64) (rms, first, last float64) {
	for _, v := range u {
		rms += v * v
	}
	return math.Sqrt(rms / float64(len(u))), u[0], u[len(u)-1]
}

func relErr1(x, ref float64) float64 { return math.Abs(x-ref) / math.Abs(ref) }

// stiffGrowth emits the cost-growth line: the median time per state of
// the band cases at stiffGrowthN, their mean, smallest and largest, and
// the largest deviation from the mean in %; and the same deviation of the
// fastest solves' times, less disturbed by a loaded machine.
func (b *bencher) stiffGrowth(perState map[int][2]float64, skip string) {
	r := stiffResult{}
	r.Case = "bruss1d band cost growth N=250..2000"
	if len(perState) < len(stiffGrowthN) {
		r.Unit = "skipped"
		r.Skipped = "needs the band cases at N = 250, 500, 1000, 2000"
		if skip != "" {
			r.Skipped += "; " + skip
		}
		b.emitStiff(r)
		return
	}
	r.PerState, r.PerStateMin = map[string]float64{}, map[string]float64{}
	var med, fast []float64
	for _, n := range stiffGrowthN {
		v := perState[n]
		r.PerState[fmt.Sprintf("N=%d", n)] = round3(v[0])
		r.PerStateMin[fmt.Sprintf("N=%d", n)] = round3(v[1])
		med, fast = append(med, v[0]), append(fast, v[1])
	}
	mean, spread := meanSpread(med)
	_, spreadMin := meanSpread(fast)
	r.Median, r.Min, r.Max, r.Unit = mean, slices.Min(med), slices.Max(med), "us/state"
	r.SpreadPc, r.SpreadMinPc = ptr(round3(spread)), ptr(round3(spreadMin))
	r.Note = "time per state of the band cases (median of each; mean, min and max over the four); spread_pc = largest deviation from the mean, in %; spread_min_pc the same of the fastest solves"
	b.emitStiff(r)
}

// meanSpread returns the mean of xs and the largest deviation from it, in
// % of it.
func meanSpread(xs []float64) (mean, pc float64) {
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	for _, x := range xs {
		pc = max(pc, 100*math.Abs(x-mean)/mean)
	}
	return mean, pc
}

// emitStiff is bencher.emit for a figure with extra fields.
func (b *bencher) emitStiff(r stiffResult) { b.emitExtra(&r.result, &r) }
