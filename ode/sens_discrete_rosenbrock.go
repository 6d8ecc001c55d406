package ode

import (
	"context"
	"math"
)

// rosDiscrete is DiscreteAdjoint for Rosenbrock23 and Rodas5P: reverse
// mode through the steps of the forward solve, in rosDiscTab's form. The
// reverse pass evaluates J at each step's start again and factors W in
// the forward structure; it takes the stages from the forward solve, or
// with checkpoints recomputes them. Then, from the last stage to the
// first, with ḡ the stages' cotangents,
//
//	r̄_i = W⁻ᵀ ḡ_i,
//	ū, p̄ += (∂F/∂(u,p))ᵀ α_i h r̄_i at Y_i,   ḡ_j += a_ij·that ū part,
//	ḡ_j += β_ij r̄_i,   T̄ += δ_i h² r̄_i,
//
// and at the step's start the terms of W's and T's dependence on u and p:
//
//	ū, p̄ += hγ Σ_i ∇(r̄_iᵀ J(u, p) g_i) + ∇(T̄ᵀ T(u, p)).
//
// The first is the directional derivative of the VJP along g_i: a central
// difference of two VJPs at u ± σg_i, σ|g_ij| ≤ ε^⅓·max(|u_j|, atol_j/rtol_j)
// (fdIncrement's scale), so its relative error is about ε^⅔. With
// FiniteDiff the increment is ε^⅕·scale_j instead: the VJPs may be
// differences, whose rounding a smaller one would magnify. T is the forward difference (F(u, t+δt) − F(u, t))/δt
// the forward step took, so its term is the same difference of two VJPs:
// exact for the computed solution. J is taken as ∂F/∂u itself: with a
// difference Jacobian the gradient is that of the solution with the exact
// J, to the difference's accuracy. With a running cost, W's row of the
// quadrature q is −hγ ∂g/∂u (the forward solve's augSys), solved here
// exactly. With GMRES, W⁻ᵀ is GMRES on VJPs (gmresT).
type rosDiscrete[T Float] struct {
	discreteTape[T] // sk: the stages g_i, s·N values per step

	gs    *GradientSolver[T]
	cfg   DiscreteAdjoint
	tab   *rosDiscTab
	n, np int
	N     int
	quad  bool
	built bool
	sys   *fwdSystem[T]
	fwd   *Integrator[T]
	lit   *Integrator[T] // the inner problem's integrator: the context of ls's calls
	ls    linSys[T]      // J of F and W in the forward structure
	trans func(b []T)    // W⁻ᵀ from ls's factorisation
	gt    *gmresT[T]     // or by GMRES

	replay func(i int, u, next []T) error
	back   func(i int, u, stored []T) error
	ap     adjointPass[T]

	g, y, gb []T // stages g_i, stage inputs Y_i, cotangents ḡ_i (then r̄_i): s·N each
	f0, dT   []T // F and T at the step's start
	fp, unew []T
	gu       []T // ∂g/∂u at the step's start (running cost)
	dt       float64
	ub, end  []T // cotangents of the step's start and end
	yb, tb   []T // a stage input's cotangent, T̄
	uA, uB   []T // VJPs for the differences
	pA, pB   []T
	up       []T // a perturbed state
	pb       []T // the parameter cotangent
	u1       []T
	w        []float64 // dense-output weights of one save time
	sqrtEps  float64
	wEps     float64 // the relative increment of W's differences: ∛ε, or ε^⅕ with FiniteDiff
}

func newRosDiscrete[T Float](gs *GradientSolver[T], cfg DiscreteAdjoint, tab *rosDiscTab) (gradMethod[T], error) {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	gs.res.P = make([]T, np)
	eps := sqrtEpsOf[T]() * sqrtEpsOf[T]() // ε of T
	// With FiniteDiff, the VJPs may be differences themselves, whose
	// rounding, ε^⅔ of F, a difference at ∛ε would magnify to ε^⅓: a
	// larger increment trades that for the difference's truncation.
	wEps := math.Cbrt(eps)
	if cfg.FiniteDiff {
		wEps = math.Pow(eps, 0.2)
	}
	return &rosDiscrete[T]{gs: gs, cfg: cfg, tab: tab, n: n, np: np,
		pb: make([]T, np), pA: make([]T, np), pB: make([]T, np), u1: make([]T, n),
		w: make([]float64, tab.s), sqrtEps: sqrtEpsOf[T](), wEps: wEps}, nil
}

func (rd *rosDiscrete[T]) build(quad bool) error {
	gs := rd.gs
	n := rd.n
	rd.sys = newFwdSystem(gs, quad)
	rd.quad = quad
	N := rd.sys.dim()
	rd.N = N
	fp := Problem[T]{F: rd.sys.f, U0: make([]T, N), T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P, Jac: rd.sys.jac}
	if structured(gs.prob.JacStructure) {
		rd.sys.inStructure(&fp, quad)
	}
	hybridProblem(gs, &fp, n, N)
	var err error
	if rd.fwd, err = initWith(fp, gs.method, forwardOptions(&gs.o, rd.sys, false)); err != nil {
		return err
	}
	// The inner problem: F of u alone, with the Jacobian the forward
	// solve's W has for u's block.
	ip := Problem[T]{F: gs.prob.F, U0: make([]T, n), T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P}
	switch s := fp.JacStructure.(type) {
	case nil, DenseJacobian:
		ev, row := make([]T, n), make([]T, n)
		ip.Jac = func(J, u []T, p []float32, t float64) { jacobianOf(J, gs, u, p, t, ev, row) }
	case augJacobian:
		ip.JacStructure = s.Inner
		if fp.Jac != nil {
			ip.Jac = gs.prob.Jac
		}
		if fp.JVP != nil {
			ip.JVP = gs.prob.JVP
		}
	default:
		ip.JacStructure, ip.Jac, ip.JVP = fp.JacStructure, fp.Jac, fp.JVP
	}
	o := gs.o
	o.saveAt, o.saveAtSet = nil, true
	if rd.lit, err = initWith(ip, gs.method, o); err != nil {
		return err
	}
	switch st := rd.lit.st.(type) {
	case *rosenbrock[T]:
		rd.ls = st.lin.ls
	case *ros23[T]:
		rd.ls = st.lin.ls
	}
	rd.trans = transposedSolve(rd.ls)
	if g, ok := rd.ls.(*gmresSys[T]); ok {
		rd.gt = newGMREST(g, func(du, dp, w, u []T, p []float32, t float64) { gs.prob.VJP(du, dp, w, u, p, t) })
	} else if rd.trans == nil {
		return errorf("Gradient: DiscreteAdjoint through %s: the linear solver has no transposed solve", gs.method.Name())
	}
	s := rd.tab.s
	rd.g, rd.y, rd.gb = make([]T, s*N), make([]T, s*N), make([]T, s*N)
	buf := make([]T, 12*N)
	v := func(i int) []T { return buf[i*N : (i+1)*N : (i+1)*N] }
	rd.f0, rd.dT, rd.fp, rd.unew, rd.gu, rd.ub = v(0), v(1), v(2), v(3), v(4), v(5)
	rd.end, rd.yb, rd.tb, rd.uA, rd.uB, rd.up = v(6), v(7), v(8), v(9), v(10), v(11)
	fwd := rd.fwd
	ckpt := rd.cfg.Checkpoints > 0
	keep := func() {
		if rd.record(fwd, ckpt) {
			rd.keepStages(fwd.st, fwd.h)
		}
	}
	fwd.onAccept = func() {
		if rd.fs.kept { // recorded by onFire
			rd.fs.kept = false
			return
		}
		keep()
	}
	if len(fp.Events)+len(fp.Schedules) > 0 {
		fwd.onFire = rd.fireHook(gs, fwd, n, keep)
	}
	rd.replay = func(i int, u, next []T) error {
		if d := rd.fs.after(i); d != nil {
			copy(next, d.whole)
			return nil
		}
		if !rd.forwardStep(u, rd.ts[i], rd.hs[i], nil) {
			_, _, cause := rd.ls.failure()
			return wrapSolveErr("reverse pass", &Error{Code: Failed, T: rd.ts[i], Dt: rd.hs[i], Component: -1, Err: cause})
		}
		copy(next, rd.unew)
		return nil
	}
	rd.back = func(i int, u, stored []T) error {
		if d := rd.fs.after(i); d != nil {
			rd.jump(gs, d, rd.ub, rd.pb, n, rd.quad)
		}
		return rd.reverseStep(i, u, stored, &rd.ap)
	}
	rd.built = true
	return nil
}

func (rd *rosDiscrete[T]) stage(i int) []T   { return rd.g[i*rd.N : (i+1)*rd.N] }
func (rd *rosDiscrete[T]) stageIn(i int) []T { return rd.y[i*rd.N : (i+1)*rd.N] }
func (rd *rosDiscrete[T]) stageBar(i int) []T {
	return rd.gb[i*rd.N : (i+1)*rd.N]
}

// vjp adds wᵀ∂F/∂(u, p) of the forward system at u and t into du and dp.
func (rd *rosDiscrete[T]) vjp(du, dp, w, u []T, t float64) {
	if rd.quad {
		rd.sys.vjp(du, dp, w, u, rd.gs.prob.P, t)
	} else {
		rd.gs.prob.VJP(du, dp, w, u, rd.gs.prob.P, t)
	}
}

// forwardStep recomputes the step from u at t with size h as the forward
// solve took it: J, T and W at (t, u), the stages g_i and their inputs
// Y_i, and u_new in rd.unew. stored, if not nil, holds the forward
// solve's stages: they are taken instead of solving for them. It reports
// false when W could not be factored.
func (rd *rosDiscrete[T]) forwardStep(u []T, t, h float64, stored []T) bool {
	tab, n, N := rd.tab, rd.n, rd.N
	f, p := rd.sys.rhs(), rd.gs.prob.P
	lit := rd.lit
	f(rd.f0, u, p, t)
	lit.t = t
	copy(lit.u, u[:n])
	if !rd.ls.jacobian(lit, t, lit.u, rd.f0[:n], h) {
		return false
	}
	// δt as jacEval.timeDerivative takes it; T itself only to solve.
	tt := t + math.Copysign(min(rd.sqrtEps*max(math.Abs(t), 1), math.Abs(h)), h)
	rd.dt = tt - t
	if stored == nil {
		if rd.dt == 0 {
			clear(rd.dT)
		} else {
			f(rd.fp, u, p, tt)
			inv := T(1 / rd.dt)
			for x, v := range rd.fp {
				rd.dT[x] = (v - rd.f0[x]) * inv
			}
		}
	}
	if rd.quad {
		rd.sys.runningGrad(u[:n], p, t)
		copy(rd.gu, rd.sys.gu)
	}
	hg := h * tab.gamma
	if !rd.ls.factor(lit, hg) {
		return false
	}
	if stored != nil {
		copy(rd.g, stored)
	}
	for i := 0; i < tab.s; i++ {
		y, g := rd.stageIn(i), rd.stage(i)
		copy(y, u)
		for j, a := range tab.a[i] {
			if a != 0 {
				axpy(y, rd.stage(j), T(a))
			}
		}
		if stored != nil {
			continue
		}
		if i == 0 {
			copy(g, rd.f0)
		} else {
			f(g, y, p, t+tab.c[i]*h)
		}
		ah, dh := T(tab.alpha[i]*h), T(tab.delta[i]*h*h)
		for x := range g {
			g[x] = ah*g[x] + dh*rd.dT[x]
		}
		for j, b := range tab.beta[i] {
			if b != 0 {
				axpy(g, rd.stage(j), T(b))
			}
		}
		if !rd.ls.solve(lit, g[:n], lit.u, rd.f0[:n], rosKrylovTol) {
			return false
		}
		if rd.quad { // W's quadrature row: g_q = r_q + hγ·(∂g/∂u)·g_u
			var s T
			for x, v := range rd.gu[:n] {
				s += v * g[x]
			}
			g[n] += T(hg) * s
		}
	}
	copy(rd.unew, u)
	for j, m := range tab.m {
		if m != 0 {
			axpy(rd.unew[:N], rd.stage(j), T(m))
		}
	}
	return true
}

// keepStages appends the stages g_i of the step the forward solve just
// accepted, in rosDiscTab's form, to rd.sk.
func (rd *rosDiscrete[T]) keepStages(st stepper[T], h float64) {
	switch st := st.(type) {
	case *rosenbrock[T]:
		rd.sk = append(rd.sk, st.k...)
	case *ros23[T]:
		hT := T(h)
		for _, v := range st.k1 {
			rd.sk = append(rd.sk, hT*v)
		}
		for x, v := range st.k2 {
			rd.sk = append(rd.sk, hT*(v-st.k1[x]))
		}
	}
}

// solveT overwrites b with W⁻ᵀb for the whole system: with a running
// cost, Wᵀ = [Aᵀ −hγ∂g/∂u; 0 1], so b_u += hγ·b_q·∂g/∂u first. It
// reports false when GMRES did not converge.
func (rd *rosDiscrete[T]) solveT(b []T, hg float64) bool {
	n := rd.n
	if rd.quad {
		if bq := T(hg) * b[n]; bq != 0 {
			axpy(b[:n], rd.gu[:n], bq)
		}
	}
	if rd.gt != nil {
		return rd.gt.solve(b[:n])
	}
	rd.trans(b[:n])
	return true
}

// reverseStep turns rd.ub, the cotangent of the end of step `step`, into
// that of its start u. It takes in the cotangents of the save times at its
// end and inside it.
func (rd *rosDiscrete[T]) reverseStep(step int, u, stored []T, ap *adjointPass[T]) error {
	gs, tab, n := rd.gs, rd.tab, rd.n
	t, h, tEnd := rd.ts[step], rd.hs[step], rd.tEnd[step]
	for ap.j >= 0 {
		s, k := ap.saveIO(ap.j)
		if s != tEnd {
			break
		}
		addTo(rd.ub[:n], gs.dl[k])
		ap.j--
	}
	if !rd.forwardStep(u, t, h, stored) {
		_, _, cause := rd.ls.failure()
		return wrapSolveErr("reverse pass", &Error{Code: Failed, T: t, Dt: h, Component: -1, Err: cause})
	}
	copy(rd.end, rd.ub) // the cotangent of u_new
	clear(rd.ub)
	clear(rd.gb)
	if cut := rd.fs.endTheta(step); cut < 1 {
		// An event cut the step at θ < 1: its end is the interpolant there.
		copy(rd.yb, rd.end)
		clear(rd.end)
		rd.denseBar(rd.yb, cut)
	}
	for ap.j >= 0 { // save times inside the step: the dense output
		s, k := ap.saveIO(ap.j)
		if !(ap.dir*(s-t) > 0) {
			break
		}
		rd.denseBar(gs.dl[k], (s-t)/h)
		ap.j--
	}
	addTo(rd.ub, rd.end)
	for j, m := range tab.m {
		if m != 0 {
			axpy(rd.stageBar(j), rd.end, T(m))
		}
	}
	clear(rd.tb)
	hg := h * tab.gamma
	if rd.gt != nil {
		rd.gt.at(rd.lit.u, gs.prob.P, t, hg)
	}
	for i := tab.s - 1; i >= 0; i-- {
		rb := rd.stageBar(i) // ḡ_i, and r̄_i from here on
		if !rd.solveT(rb, hg) {
			_, _, cause := rd.gt.fail.failure()
			return wrapSolveErr("reverse pass", &Error{Code: Failed, T: t, Dt: h, Component: -1, Err: cause})
		}
		for j, b := range tab.beta[i] {
			if b != 0 {
				axpy(rd.stageBar(j), rb, T(b))
			}
		}
		if d := tab.delta[i]; d != 0 {
			axpy(rd.tb, rb, T(d*h*h))
		}
		// F̄_i = α_i h r̄_i, in yb.
		ah := T(tab.alpha[i] * h)
		for x, v := range rb {
			rd.yb[x] = ah * v
		}
		if i == 0 {
			rd.vjp(rd.ub, rd.pb, rd.yb, u, t)
			continue
		}
		clear(rd.uA)
		rd.vjp(rd.uA, rd.pb, rd.yb, rd.stageIn(i), t+tab.c[i]*h)
		addTo(rd.ub, rd.uA)
		for j, a := range tab.a[i] {
			if a != 0 {
				axpy(rd.stageBar(j), rd.uA, T(a))
			}
		}
	}
	// W's dependence: hγ ∇(r̄_iᵀ J g_i) by central differences, whose
	// increment σ moves no component j by more than ∛ε·scale_j (ε^⅕
	// with FiniteDiff),
	// scale_j = max(|u_j|, atol_j/rtol_j) (fdIncrement's scale). A scale of
	// |u| alone would, for a state far below its absolute tolerance, take
	// differences of VJPs too close to tell apart from their rounding
	// (TestDiscreteAdjointRosenbrockTinyState).
	for i := 0; i < tab.s; i++ {
		rb, g := rd.stageBar(i), rd.stage(i)
		if allZero(rb) {
			continue
		}
		s, ok := fdIncrement(rd.lit, u[:n], g[:n], sqrtEpsOf[T]())
		if !ok {
			continue
		}
		sig := float64(s) * rd.wEps / rd.sqrtEps
		rd.vjpDiff(u, g[:n], rb, t, sig, sig, T(hg/(2*sig)))
	}
	// T's dependence: (VJP(u, t+δt) − VJP(u, t))/δt, taken apart so that
	// an autonomous F gives exactly 0.
	if rd.dt != 0 && !allZero(rd.tb) {
		clear(rd.uA)
		clear(rd.uB)
		clear(rd.pA)
		clear(rd.pB)
		rd.vjp(rd.uA, rd.pA, rd.tb, u, t+rd.dt)
		rd.vjp(rd.uB, rd.pB, rd.tb, u, t)
		rd.addDiff(T(1 / rd.dt))
	}
	return nil
}

// denseBar adds c, the cotangent of the dense output at θ,
// (1−θ)u + θu_new + Σ_i w_i(θ) g_i, into rd.ub, rd.end and the stages'
// cotangents. c is the state's (n) or the whole system's (N).
func (rd *rosDiscrete[T]) denseBar(c []T, θ float64) {
	m := len(c)
	axpy(rd.ub[:m], c, T(1-θ))
	axpy(rd.end[:m], c, T(θ))
	rd.tab.denseWeights(rd.w, θ)
	for i, w := range rd.w {
		if w != 0 {
			axpy(rd.stageBar(i)[:m], c, T(w))
		}
	}
}

// vjpDiff adds k·(VJP(u + σ₊v, w) − VJP(u − σ₋v, w)) into ub and pb, at t.
func (rd *rosDiscrete[T]) vjpDiff(u, v, w []T, t, sp, sm float64, k T) {
	n := rd.n
	copy(rd.up, u)
	axpy(rd.up[:n], v, T(sp))
	clear(rd.uA)
	clear(rd.pA)
	rd.vjp(rd.uA, rd.pA, w, rd.up, t)
	copy(rd.up, u)
	axpy(rd.up[:n], v, T(-sm))
	clear(rd.uB)
	clear(rd.pB)
	rd.vjp(rd.uB, rd.pB, w, rd.up, t)
	rd.addDiff(k)
}

// addDiff adds k·(uA − uB) into ub and k·(pA − pB) into pb.
func (rd *rosDiscrete[T]) addDiff(k T) {
	for x, a := range rd.uA {
		rd.ub[x] += k * (a - rd.uB[x])
	}
	for x, a := range rd.pA {
		rd.pb[x] += k * (a - rd.pB[x])
	}
}

func (rd *rosDiscrete[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	if !rd.built || quad != rd.quad {
		if err := rd.build(quad); err != nil {
			return err
		}
	}
	n, N := rd.n, rd.N
	fwd := rd.fwd
	rd.reset()
	if gs.hyb != nil {
		syncHybrid(gs, fwd, n, N)
		rd.fs.setTimesJac(gs)
	}
	ckpt := rd.cfg.Checkpoints > 0
	var ck *checkpoints[T]
	if ckpt {
		ck = &rd.ck
	}
	// rd.end is free until the reverse pass: the initial state's buffer.
	if err := gs.forwardPass(ctx, fwd, rd.sys, rd.end, ck, rd.cfg.Checkpoints, rd.u1); err != nil {
		return err
	}
	lit := rd.lit
	lit.prob.F, lit.prob.P = gs.prob.F, gs.prob.P
	lit.stats = Stats{}
	clear(rd.ub)
	if rd.quad {
		rd.ub[n] = 1
	}
	rd.ap = adjointPass[T]{gs: gs, dir: fwd.dir, j: len(gs.at) - 1}
	ap := &rd.ap
	clear(rd.pb)
	rd.endAt(gs, rd.ub, ap)
	if err := rd.reverse(gs, N, rd.tab.s*N, ckpt, rd.replay, rd.back); err != nil {
		return err
	}
	if d := rd.fs.after(-1); d != nil { // a firing at T0, after u0 is saved
		rd.jump(gs, d, rd.ub, rd.pb, n, rd.quad)
	}
	for ap.j >= 0 { // save times at T0: u0 itself
		_, k := ap.saveIO(ap.j)
		addTo(rd.ub[:n], gs.dl[k])
		ap.j--
	}
	gs.res.Backward = lit.stats
	if rd.gt != nil {
		gs.res.Backward.LinearIters += rd.gt.iters
		rd.gt.iters = 0
	}
	copy(gs.res.U0, rd.ub[:n])
	copy(gs.res.P, rd.pb)
	gs.endDerivatives(gs.res.U0, rd.u1)
	if rd.fs.term {
		gs.res.T1 = 0 // a terminating firing ended the solve: T1 does not matter
	}
	return nil
}
