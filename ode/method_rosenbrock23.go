package ode

import (
	"math"
)

// Rosenbrock23 is the L-stable Rosenbrock W-method of order 2 of Shampine
// and Reichelt, with a third-order error estimate and a free second-order
// interpolant. It is MATLAB's ode23s and OrdinaryDiffEq's Rosenbrock23.
// Each step takes one Jacobian, one LU factorisation, 2 evaluations of F
// and 3 solves, plus one evaluation for ∂F/∂t. The last evaluation is the
// next step's first. The solution stays second order with an inexact
// Jacobian. It is the choice for stiff problems at loose tolerances,
// rtol ≥ 1e-4, and for float32 states.
//
// L. F. Shampine, M. W. Reichelt, "The MATLAB ODE Suite", SIAM J. Sci.
// Comput. 18 (1997) 1–22, section 3.
//
// Rosenbrock23 returns Rosenbrock23Method{}, the method with its default
// settings.
func Rosenbrock23() Method { return Rosenbrock23Method{} }

// Rosenbrock23Method is Rosenbrock23 with its settings; the zero value is
// the default. A value is stateless and safe to share. The Jacobian and
// the solves with W follow Problem.JacStructure, as for Rodas5PMethod.
type Rosenbrock23Method struct {
	// Linear is the linear solver for W = I − h·d·J. nil chooses from
	// Problem.JacStructure (see LinearSolver).
	Linear LinearSolver
}

func (Rosenbrock23Method) Name() string { return "Rosenbrock23" }

func (m Rosenbrock23Method) String() string { return withLinear("Rosenbrock23", m.Linear) }

func (Rosenbrock23Method) info() methodInfo { return methodInfo{order: 2, adaptive: true, stiff: true} }

// The coefficients: W = I − h·d·J with d = 1/(2+√2), and e32 = 6+√2.
var (
	r23D   = 1 / (2 + math.Sqrt2)
	r23E32 = 6 + math.Sqrt2
)

// ros23 is the Rosenbrock23 stepper. With W = I − hdJ and T = ∂F/∂t:
//
//	k1 = W⁻¹(F0 + hd·T)
//	F1 = F(t + h/2, u + h/2·k1)
//	k2 = W⁻¹(F1 − k1) + k1
//	u_new = u + h·k2
//	F2 = F(t + h, u_new)
//	k3 = W⁻¹(F2 − e32(k2 − F1) − 2(k1 − F0) + hd·T)
//	err = h/6·(k1 − 2k2 + k3)
//
// Its interpolant is
//
//	u(t + θh) ≈ u + h(θ(1−θ)k1 + θ(θ−2d)k2)/(1−2d).
type ros23[T Float] struct {
	n          int
	lin        rosLin[T]
	f0, f1, f2 []T
	k1, k2, k3 []T
	tmp        []T
	adaptive   bool
	f0OK       bool // f0 is F(it.t, it.u)
	f2OK       bool // f2 is F(t+h, u_new) of the last attempt
	h          float64
	nf         nonFiniteTrace
}

func newRos23[T Float](n int, adaptive bool, lin rosLin[T]) *ros23[T] {
	buf := padded[T](7 * n) // written every stage (see padded)
	v := func(i int) []T { return buf[i*n : (i+1)*n : (i+1)*n] }
	return &ros23[T]{n: n, lin: lin, f0: v(0), f1: v(1), f2: v(2), k1: v(3), k2: v(4), k3: v(5), tmp: v(6), adaptive: adaptive}
}

func (r *ros23[T]) degree() int { return 2 }

func (r *ros23[T]) failure() (Retcode, int, error) { return r.nf.failure(r.lin.ls.failure) }

func (r *ros23[T]) start(it *Integrator[T]) []T {
	it.prob.F(r.f0, it.u, it.prob.P, it.t)
	it.stats.FEvals++
	r.f0OK, r.f2OK = true, false
	r.lin.invalidate()
	return r.f0
}

func (r *ros23[T]) attempt(it *Integrator[T], hf float64) float64 {
	u, t := it.u, it.t
	f, p := it.prob.F, it.prob.P
	if !r.f0OK {
		f(r.f0, u, p, t)
		it.stats.FEvals++
		r.f0OK = true
	}
	r.f2OK = false
	r.nf.comp = -1
	if noteNonFinite(&r.nf, r.f0, 0, t) {
		return math.Inf(1)
	}
	if !r.lin.prepare(it, r.f0, hf, r23D) {
		return math.Inf(1)
	}
	h := T(hf)
	hd := T(hf * r23D)
	dT := r.lin.dT
	if noteNonFinite(&r.nf, dT[:len(r.f0)], -1, t) {
		return math.Inf(1)
	}
	f0, f1, k1, k2, tmp := r.f0, r.f1, r.k1, r.k2, r.tmp
	u = u[:len(f0)]
	for i := range k1 {
		k1[i] = f0[i] + hd*dT[i]
	}
	if d := r.lin.dense; d != nil {
		d.w.solve(k1)
	} else if !r.lin.solve(it, k1, f0) {
		return math.Inf(1)
	}
	h2 := h / 2
	for i := range tmp {
		tmp[i] = u[i] + h2*k1[i]
	}
	f(f1, tmp, p, t+hf/2)
	if noteNonFinite(&r.nf, f1, 1, t+hf/2) {
		it.stats.FEvals++
		return math.Inf(1)
	}
	for i := range k2 {
		k2[i] = f1[i] - k1[i]
	}
	if d := r.lin.dense; d != nil {
		d.w.solve(k2)
	} else if !r.lin.solve(it, k2, f0) {
		it.stats.FEvals++
		return math.Inf(1)
	}
	un := it.uNew
	for i := range k2 {
		k2[i] += k1[i]
		un[i] = u[i] + h*k2[i]
	}
	it.stats.FEvals++
	if !r.adaptive {
		return finiteCheck(un)
	}
	f2, k3 := r.f2, r.k3
	f(f2, un, p, t+hf)
	it.stats.FEvals++
	if noteNonFinite(&r.nf, f2, 2, t+hf) {
		return math.Inf(1)
	}
	r.f2OK = true
	e32 := T(r23E32)
	for i := range k3 {
		k3[i] = f2[i] - e32*(k2[i]-f1[i]) - 2*(k1[i]-f0[i]) + hd*dT[i]
	}
	if d := r.lin.dense; d != nil {
		d.w.solve(k3)
	} else if !r.lin.solve(it, k3, f0) {
		return math.Inf(1)
	}
	h6 := h / 6
	for i := range tmp {
		tmp[i] = h6 * (k1[i] - 2*k2[i] + k3[i])
	}
	return wrmsSquare(tmp, u, un, &it.o)
}

func (r *ros23[T]) accept(it *Integrator[T], h float64) {
	r.h = h
	if r.f2OK { // FSAL: F(t+h, u_new) starts the next step
		r.f0, r.f2 = r.f2, r.f0
		r.f0OK = true
	} else {
		r.f0OK = false
	}
	r.f2OK = false
	r.lin.invalidate()
}

func (r *ros23[T]) dense(it *Integrator[T], poly []T) {
	n := r.n
	copy(poly[:n], it.uPrev)
	p1, p2 := poly[n:2*n], poly[2*n:3*n]
	s := T(r.h / (1 - 2*r23D))
	d2 := T(2 * r23D)
	for i := range p1 {
		k1, k2 := r.k1[i], r.k2[i]
		p1[i] = s * (k1 - d2*k2)
		p2[i] = s * (k2 - k1)
	}
}
