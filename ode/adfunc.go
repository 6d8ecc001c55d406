package ode

import (
	"fmt"
	"math"
	"sync"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// ADFunc adapts a right-hand side written with ad ops to the in-place form
// of Problem[float32], with its exact Jacobian from automatic
// differentiation for the stiff methods:
//
//	robertson := func(u, p ad.Var, t float64) ad.Var {
//		y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
//		r1, r2, r3 := ad.Scale(y1, 0.04), ad.Scale(ad.Mul(y2, y3), 1e4), ad.Scale(ad.Square(y2), 3e7)
//		return ad.Concat0(ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
//	}
//	F, Jac := ode.ADFunc(robertson, 3)
//	prob := ode.Problem[float32]{F: F, Jac: Jac, U0: []float32{1, 0, 0}, T1: 1e5}
//
// f receives the state u (shape [n]) and the parameters p (shape [len(p)])
// and returns du/dt as a Var of n elements. For F and Jac, p is a constant:
// the Jacobian is with respect to u only. ADDerivs adds the products that
// sensitivities and adjoints need, for which p is differentiable too.
// f is recorded on a tape taken from a pool (one per goroutine in use,
// reset after every call), so F and Jac are safe for concurrent use, as an
// ensemble needs, and allocate nothing once warm if f's ops do not.
//
// The Jacobian is one recording of f and n reverse sweeps (row i of J is the
// gradient of du_i): J[i*n+j] = ∂du_i/∂u_j.
//
// F and Jac cannot return errors: if f fails (an error recorded on the tape:
// a shape mismatch, a missing derivative rule, a result of the wrong size),
// they fill du or J with NaN, and the solve ends with NonFinite. ADProblem
// builds the Problem and reports such an error up front.
//
// n < 1 or a nil f is a bug, and panics.
func ADFunc(f func(u, p ad.Var, t float64) ad.Var, n int) (F func(du, u, p []float32, t float64), Jac func(J, u, p []float32, t float64)) {
	if n < 1 || f == nil {
		panic(fmt.Sprintf("ode: ADFunc(f, %d): want a non-nil f and n ≥ 1", n))
	}
	return newADRHS(f, n).funcs()
}

// ADDerivs is ADFunc with the derivative products of Problem.JVP and
// Problem.VJP, which Gradient's sensitivity methods need. For them p is
// differentiable (a Param on the tape, of shape [len(p)], like u):
//
//   - JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp by forward mode: one recording of
//     f and one forward sweep seeded with v at u and dp at p (a nil dp
//     seeds nothing at p, so what depends on p alone is not swept).
//   - VJP adds wᵀ·∂F/∂u into du and wᵀ·∂F/∂p into dp by reverse mode: one
//     recording and one reverse sweep seeded with w, towards u and p at
//     once (towards u only when dp is nil).
//
// Both are exact to float32 rounding (ad is float32), safe for concurrent
// use and allocation-free once warm, as F and Jac are. If f fails they fill
// jv, or du and dp, with NaN; ADProblem reports the error up front. F and
// Jac are those of ADFunc.
//
// n < 1 or a nil f is a bug, and panics.
func ADDerivs(f func(u, p ad.Var, t float64) ad.Var, n int) (
	F func(du, u, p []float32, t float64),
	Jac func(J, u, p []float32, t float64),
	JVP func(jv, u, v, p, dp []float32, t float64),
	VJP func(du, dp, w, u, p []float32, t float64),
) {
	if n < 1 || f == nil {
		panic(fmt.Sprintf("ode: ADDerivs(f, %d): want a non-nil f and n ≥ 1", n))
	}
	a := newADRHS(f, n)
	F, Jac = a.funcs()
	JVP, VJP = a.derivs()
	return F, Jac, JVP, VJP
}

func newADRHS(f func(u, p ad.Var, t float64) ad.Var, n int) *adRHS {
	a := &adRHS{f: f, n: n}
	a.pool.New = func() any { return &adWork{tape: ad.NewTape(), rows: make([]ad.Var, n)} }
	return a
}

func (a *adRHS) funcs() (F func(du, u, p []float32, t float64), Jac func(J, u, p []float32, t float64)) {
	return func(du, u, p []float32, t float64) {
			if a.evalF(du, u, p, t) != nil {
				fillNaN(du)
			}
		}, func(J, u, p []float32, t float64) {
			if a.evalJac(J, u, p, t) != nil {
				fillNaN(J)
			}
		}
}

func (a *adRHS) derivs() (JVP func(jv, u, v, p, dp []float32, t float64), VJP func(du, dp, w, u, p []float32, t float64)) {
	return func(jv, u, v, p, dp []float32, t float64) {
			if a.evalJVP(jv, u, v, p, dp, t) != nil {
				fillNaN(jv)
			}
		}, func(du, dp, w, u, p []float32, t float64) {
			if a.evalVJP(du, dp, w, u, p, t) != nil {
				fillNaN(du)
				fillNaN(dp) // nil: nothing
			}
		}
}

// ADProblem is ADDerivs with a check: it evaluates f, its Jacobian and the
// JVP and VJP once at (u0, p, t0) and returns the error recorded on the
// tape, if any, naming the call. The Problem it returns has F, Jac, JVP and
// VJP from ADDerivs: p is a constant for F and Jac, and differentiable
// (forward mode for JVP, reverse mode for VJP) for the sensitivities.
func ADProblem(f func(u, p ad.Var, t float64) ad.Var, u0 []float32, t0, t1 float64, p []float32) (Problem[float32], error) {
	n := len(u0)
	if n == 0 {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: u0 is empty, want at least one component")
	}
	if f == nil {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: f is nil")
	}
	a := newADRHS(f, n)
	du := make([]float32, n)
	if err := a.evalF(du, u0, p, t0); err != nil {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: the right-hand side at t=%g: %w", t0, err)
	}
	if err := a.evalJac(make([]float32, n*n), u0, p, t0); err != nil {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: the Jacobian at t=%g: %w", t0, err)
	}
	// Directions of ones, so that every rule on a path from u or p runs.
	ones := make([]float32, n+len(p))
	for i := range ones {
		ones[i] = 1
	}
	v, dp := ones[:n], ones[n:]
	if err := a.evalJVP(du, u0, v, p, dp, t0); err != nil {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: the JVP at t=%g: %w", t0, err)
	}
	if err := a.evalVJP(make([]float32, n), make([]float32, len(p)), v, u0, p, t0); err != nil {
		return Problem[float32]{}, fmt.Errorf("ode: ADProblem: the VJP at t=%g: %w", t0, err)
	}
	F, Jac := a.funcs()
	JVP, VJP := a.derivs()
	return Problem[float32]{F: F, Jac: Jac, JVP: JVP, VJP: VJP, U0: u0, T0: t0, T1: t1, P: p}, nil
}

type adRHS struct {
	f    func(u, p ad.Var, t float64) ad.Var
	n    int
	pool sync.Pool // *adWork
}

// adWork is one goroutine's tape and scratch.
type adWork struct {
	tape *ad.Tape
	shU  [1]int
	shP  [1]int
	rows []ad.Var
	wrt  [2]ad.Var    // u and p, for JVP and VJP
	dirs [2][]float32 // their directions or destinations
}

func fillNaN(x []float32) {
	nan := float32(math.NaN())
	for i := range x {
		x[i] = nan
	}
}

// How record puts u and p on the tape.
const (
	recConst = iota // both constants (F)
	recU            // u a Param, p a constant (Jac)
	recUAndP        // both Params, u first (JVP, VJP)
)

// record runs f on w's tape with u and p as Params or constants (mode) and
// returns them and f's result, checked for size.
func (a *adRHS) record(w *adWork, u, p []float32, t float64, mode int) (uv, pv, y ad.Var, err error) {
	tp := w.tape
	w.shU[0], w.shP[0] = len(u), len(p)
	if mode == recConst {
		uv = tp.Const(flat.Tensor{Shape: w.shU[:], Data: u})
	} else {
		uv = tp.Param(u)
	}
	if mode == recUAndP {
		pv = tp.Param(p)
	} else {
		pv = tp.Const(flat.Tensor{Shape: w.shP[:], Data: p})
	}
	y = a.f(uv, pv, t)
	if err := tp.Err(); err != nil {
		return uv, pv, y, err
	}
	if y.IsZero() || y.Tape() != tp {
		return uv, pv, y, fmt.Errorf("ad: the function returned the zero Var or a Var of another tape")
	}
	if y.Size() != a.n {
		return uv, pv, y, fmt.Errorf("the function returned %d values (shape %v), want %d", y.Size(), y.Shape(), a.n)
	}
	return uv, pv, y, nil
}

func (a *adRHS) evalF(du, u, p []float32, t float64) error {
	w := a.pool.Get().(*adWork)
	defer a.put(w)
	_, _, y, err := a.record(w, u, p, t, recConst)
	if err != nil {
		return err
	}
	copy(du, y.Data())
	return nil
}

func (a *adRHS) evalJac(J, u, p []float32, t float64) error {
	w := a.pool.Get().(*adWork)
	defer a.put(w)
	uv, _, y, err := a.record(w, u, p, t, recU)
	if err != nil {
		return err
	}
	n := a.n
	if len(y.Shape()) != 1 {
		y = ad.Reshape(y, n)
	}
	// Every row's seed is recorded before the first sweep, so each reverse
	// sweep covers f's nodes only, not the previous sweeps'.
	for i := range w.rows {
		w.rows[i] = ad.Slice(y, i, i+1)
	}
	tp := w.tape
	for i, r := range w.rows {
		if err := tp.Backward(r); err != nil {
			return err
		}
		g := tp.GradOf(uv)
		row := J[i*n : (i+1)*n]
		if g == nil {
			clear(row)
			continue
		}
		copy(row, g)
	}
	return nil
}

// evalJVP writes jv = ∂F/∂u·v + ∂F/∂p·dp: one forward sweep seeded at u
// and p at once (nothing at p when dp is nil).
func (a *adRHS) evalJVP(jv, u, v, p, dp []float32, t float64) error {
	w := a.pool.Get().(*adWork)
	defer a.put(w)
	uv, pv, y, err := a.record(w, u, p, t, recUAndP)
	if err != nil {
		return err
	}
	w.wrt[0], w.wrt[1] = uv, pv
	w.dirs[0], w.dirs[1] = v, dp
	tan, err := w.tape.Tangent(y, w.wrt[:], w.dirs[:])
	w.dirs = [2][]float32{} // the caller's slices are not kept in the pool
	if err != nil {
		return err
	}
	copy(jv, tan)
	return nil
}

// evalVJP adds wᵀ·∂F/∂u into du and wᵀ·∂F/∂p into dp (unless dp is nil):
// one reverse sweep seeded with wt.
func (a *adRHS) evalVJP(du, dp, wt, u, p []float32, t float64) error {
	w := a.pool.Get().(*adWork)
	defer a.put(w)
	uv, pv, y, err := a.record(w, u, p, t, recUAndP)
	if err != nil {
		return err
	}
	w.wrt[0], w.wrt[1] = uv, pv
	w.dirs[0], w.dirs[1] = du, dp
	err = w.tape.AddVJP(y, wt, w.wrt[:], w.dirs[:])
	w.dirs = [2][]float32{}
	return err
}

func (a *adRHS) put(w *adWork) {
	w.tape.Reset()
	a.pool.Put(w)
}
