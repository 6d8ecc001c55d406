package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// Scenario sens: the Lotka-Volterra gradient of SUNDIALS'
// cvsLotkaVolterra_ASA problem, the case of ../shared/peers/cvodes_sens_bench.c
// (CVODES forward sensitivities, staggered and simultaneous, and adjoint):
//
//	u1' = p1 u1 − p2 u1 u2, u2' = −p3 u2 + p4 u1 u2,
//	p = (1.5, 1, 3, 1) (float32), u0 = (1, 1), t ∈ [0, 10],
//	G = ‖1 − u(10)‖²/2,
//
// at rtol 1e-6, atol 1e-8, by each sensitivity method with Tsit5 and with
// Vern7. Which solver pays depends on the method. ForwardSensitivity's 14
// states, with the sensitivities in the error control, take fewer steps
// with the 7th-order pair. Each method runs in one reused
// ode.GradientSolver, with gs.Gradient per call; the peer re-inits its
// CVODES memory between repetitions. The derivative products are exact
// callbacks, F, JVP, VJP, Jac and ParamJac, as the peer's f, fS, fB and
// fQB are. ForwardSensitivity forms S' = J·S + [Jp 0] from Jac and
// ParamJac, as the peer's fS does; the adjoints call the VJP.
//
// Each line carries max_rel_err: the largest relative error over the 6
// gradient components dG/dp and dG/du0, against the CVODES reference, as
// the peer reports its own. It also carries the error of G, the step
// counts of the forward and backward solves and the gradient itself. One
// more line times the plain forward solve per solver, by Integrator
// Reinit + Run at the same tolerances, for scale.

func init() {
	register(scenario{
		name:  "sens",
		about: "Lotka-Volterra gradient dG/d(p, u0), Tsit5 rtol 1e-6: ForwardSensitivity, InterpolatingAdjoint (and with checkpoints), BacksolveAdjoint, DiscreteAdjoint; the forward solve alone",
		run:   runSens,
	})
}

// The reference gradient: CVODES forward sensitivities at rtol 1e-12, good
// to about 1e-9. ode/sens_lv_test.go holds the same values.
var (
	sensRefG  = 0.00442487407340801
	sensRefP  = []float64{0.621961585551281, 0.0680014041508743, 0.169176463995893, 0.272560693950007}
	sensRefU0 = []float64{0.299599508303682, -0.0141518163448535}
)

// sensParams are p of cvsLotkaVolterra_ASA.
var sensParams = []float32{1.5, 1, 3, 1}

// sensProblem is the problem with its exact products (internal/lotkavolterra).
func sensProblem() ode.Problem[float64] {
	return ode.Problem[float64]{F: lotkavolterra.F64, JVP: lotkavolterra.JVP64,
		VJP: lotkavolterra.VJP64, Jac: lotkavolterra.Jac64, ParamJac: lotkavolterra.ParamJac64,
		U0: []float64{1, 1}, T0: 0, T1: 10, P: sensParams}
}

// sensLossSaved is G = ‖1 − u(10)‖²/2 and its dG/du(10).
func sensLossSaved(_ []float64, us, dl [][]float64) float64 {
	a, b := 1-us[0][0], 1-us[0][1]
	dl[0][0], dl[0][1] = -a, -b
	return (a*a + b*b) / 2
}

// sensMethods are the sensitivity methods that the sens scenario and the
// adaptive case of node time, in order; the last, DiscreteAdjoint, is the
// reference of node's agreement check (rel_diff_vs_discrete).
var sensMethods = []ode.Sensitivity{
	ode.ForwardSensitivity{},
	ode.InterpolatingAdjoint{},
	ode.InterpolatingAdjoint{Checkpoints: 10},
	ode.BacksolveAdjoint{},
	ode.DiscreteAdjoint{},
}

// sensName is a method's name with its non-default fields.
func sensName(s ode.Sensitivity) string {
	switch s := s.(type) {
	case ode.InterpolatingAdjoint:
		if s.Checkpoints > 0 {
			return fmt.Sprintf("InterpolatingAdjoint{Checkpoints: %d}", s.Checkpoints)
		}
	case ode.DiscreteAdjoint:
		if s.Checkpoints > 0 {
			return fmt.Sprintf("DiscreteAdjoint{Checkpoints: %d}", s.Checkpoints)
		}
	}
	return s.Name()
}

// sensResult is a figure with the scenario's extra fields.
type sensResult struct {
	result
	Method      string    `json:"method"`
	Sensitivity string    `json:"sensitivity,omitempty"`
	RTol        float64   `json:"rtol"`
	ATol        float64   `json:"atol"`
	MaxRelErr   *float64  `json:"max_rel_err,omitempty"`   // over dG/dp and dG/du0
	ValueRelErr *float64  `json:"value_rel_err,omitempty"` // of G
	ErrMaxAbs   *float64  `json:"err_max_abs,omitempty"`   // of u(10), the forward solve's line
	FwdSteps    int       `json:"fwd_steps"`
	FwdRejected int       `json:"fwd_rejected"`
	BwdSteps    int       `json:"bwd_steps"`
	BwdRejected int       `json:"bwd_rejected"`
	FEvals      int       `json:"fevals"` // F evaluations, forward + backward counters
	Value       *float64  `json:"G,omitempty"`
	Grad        []float64 `json:"grad,omitempty"` // dG/dp (4), dG/du0 (2)
	// time per gradient ÷ time per forward solve alone
	VsSolve *float64 `json:"x_forward_solve,omitempty"`
}

// emitSens is bencher.emit for a figure with extra fields.
func (b *bencher) emitSens(r sensResult) {
	r.Scenario = b.scenario
	r.Median, r.Min, r.Max = round3(r.Median), round3(r.Min), round3(r.Max)
	r.Allocs = round3(r.Allocs)
	b.rows = append(b.rows, r.result)
	enc := json.NewEncoder(b.out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil && b.err == nil {
		b.err = err
	}
}

// sensErrors returns the largest relative error over the 6 gradient
// components and the relative error of G.
func sensErrors(g *ode.GradientResult[float64]) (grad, value float64) {
	for i, w := range sensRefP {
		grad = max(grad, math.Abs(g.P[i]-w)/math.Abs(w))
	}
	for i, w := range sensRefU0 {
		grad = max(grad, math.Abs(g.U0[i]-w)/math.Abs(w))
	}
	return grad, math.Abs(g.Value-sensRefG) / sensRefG
}

// The tolerances of the scenario (and of the peer).
const sensRTol, sensATol = 1e-6, 1e-8

// sensLoss is the scenario's loss: G of u(10).
func sensLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{10}, Saved: sensLossSaved}
}

// sensSolvers are the scenario's explicit solvers, by name.
var sensSolvers = []struct {
	name   string
	method ode.Method
}{{"Tsit5", ode.Tsit5()}, {"Vern7", ode.Vern7()}}

// newSensSolver is the reusable gradient solver of the scenario for s.
func newSensSolver(m ode.Method, s ode.Sensitivity) (*ode.GradientSolver[float64], error) {
	return ode.NewGradientSolver(sensProblem(), m, s, ode.Tol(sensRTol, sensATol))
}

func runSens(b *bencher) error {
	for _, sv := range sensSolvers {
		if err := runSensSolver(b, sv.name, sv.method); err != nil {
			return fmt.Errorf("%s: %w", sv.name, err)
		}
	}
	return nil
}

// runSensSolver emits the forward solve's figure and every method's
// gradient with one solver.
func runSensSolver(b *bencher, solver string, method ode.Method) error {
	ctx := context.Background()
	const rtol, atol = sensRTol, sensATol
	prob := sensProblem()
	loss := sensLoss()

	// The forward solve alone, for scale.
	it, solve, err := b.timeSolve("forward solve", prob, method, rtol, atol)
	if err != nil {
		return err
	}
	st := it.Stats()
	abs, _ := maxAbsErr(it.U(), lvRef)
	r := sensResult{result: scaled(solve, "us"), Method: solver, RTol: rtol, ATol: atol, ErrMaxAbs: ptr(abs),
		FwdSteps: st.Accepted, FwdRejected: st.Rejected, FEvals: st.FEvals}
	r.Case = "Lotka-Volterra forward solve " + solver + ", reused Integrator"
	r.Note = "Reinit + Run, no sensitivities: the scale of the gradients; err vs the issue's u(10)"
	b.emitSens(r)

	for _, s := range sensMethods {
		name := sensName(s)
		gs, err := newSensSolver(method, s)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		g, sm, err := measured(b.measure, name, func() (*ode.GradientResult[float64], error) { return gs.Gradient(ctx, sensParams, loss) })
		if err != nil {
			return err
		}
		ge, ve := sensErrors(g)
		r := sensResult{result: scaled(sm, "us"), Method: solver, Sensitivity: name, RTol: rtol, ATol: atol,
			MaxRelErr: ptr(ge), ValueRelErr: ptr(ve),
			FwdSteps: g.Forward.Accepted, FwdRejected: g.Forward.Rejected,
			BwdSteps: g.Backward.Accepted, BwdRejected: g.Backward.Rejected,
			FEvals: g.Forward.FEvals + g.Backward.FEvals, Value: ptr(g.Value),
			Grad:    append(append([]float64(nil), g.P...), g.U0...),
			VsSolve: ptr(round3(sm.median / solve.median))}
		r.Case = "Lotka-Volterra gradient " + solver + ", " + name
		r.Note = "reused GradientSolver, gs.Gradient per call (peer: CVODES re-initialised); max_rel_err over dG/dp, dG/du0 vs the issue's reference (as the peer's)"
		b.emitSens(r)
	}
	return nil
}
