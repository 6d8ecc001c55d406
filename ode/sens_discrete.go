package ode

import (
	"context"
)

// discreteAdjoint is DiscreteAdjoint for the explicit Runge–Kutta methods:
// reverse mode through the steps of the forward solve. A step from u with
// size h is, in the tableau's FSAL form with s stages, where row s−1 of a
// is b,
//
//	y_0 = u,  y_i = u + h Σ_{j<i} a_ij k_j,  k_i = F(y_i, t + c_i h),
//	u_new = y_{s−1},
//
// and a save time inside it is u + h Σ_i b_i(θ) k_i over the stages and the
// extra interpolation stages. With ȳ and k̄ the cotangents, the reverse
// step is, from the last stage to the first,
//
//	ȳ_i += (∂F/∂u)ᵀ k̄_i,  p̄ += (∂F/∂p)ᵀ k̄_i,  ū += ȳ_i,  k̄_j += h a_ij ȳ_i.
//
// The step sizes are constants of the discrete solution; its derivatives
// with respect to T0 and T1 are the continuous ones, λ·F at the ends.
type discreteAdjoint[T Float] struct {
	discreteTape[T] // sk: the stages 0…s−2 from the forward solve

	gs     *GradientSolver[T]
	cfg    DiscreteAdjoint
	n, np  int
	quad   bool
	built  bool
	sys    *fwdSystem[T]
	fwd    *Integrator[T]
	tab    *tableau
	e      *erk[T] // rows and stage buffer k (dimension N)
	dimN   int
	bi     [][]float64 // the tableau's dense-output coefficients
	replay func(i int, u, next []T) error
	back   func(i int, u, stored []T) error
	ys     []T // stage inputs of the step being reversed, (s+ne)·N
	kb     []T // stage cotangents, (s+ne)·N
	ub     []T // cotangent of the current state
	yb     []T
	end    []T // the cotangent of a step's end
	pb     []T // the parameter cotangent
	u1     []T
	wsave  []float64 // b_i(θ) of one save time
	ap     adjointPass[T]
}

func newDiscreteAdjoint[T Float](gs *GradientSolver[T], cfg DiscreteAdjoint) (gradMethod[T], error) {
	if tab := rosDiscOf(gs.method); tab != nil {
		return newRosDiscrete(gs, cfg, tab)
	}
	em, ok := gs.method.(*erkMethod)
	if !ok {
		return nil, errorf("Gradient: DiscreteAdjoint supports the explicit Runge–Kutta methods (Tsit5, DP5, BS3, Vern7, RK4), Rosenbrock23 and Rodas5P, not %s yet", gs.method.Name())
	}
	n, np := len(gs.prob.U0), len(gs.prob.P)
	gs.res.P = make([]T, np)
	return &discreteAdjoint[T]{gs: gs, cfg: cfg, n: n, np: np, tab: em.tab, bi: em.tab.bi,
		pb: make([]T, np), u1: make([]T, n)}, nil
}

func (da *discreteAdjoint[T]) build(quad bool) error {
	gs := da.gs
	da.sys = newFwdSystem(gs, quad)
	da.quad = quad
	N := da.sys.dim()
	da.dimN = N
	fp := Problem[T]{F: da.sys.f, U0: make([]T, N), T0: gs.prob.T0, T1: gs.prob.T1, P: gs.prob.P}
	hybridProblem(gs, &fp, da.n, N)
	var err error
	if da.fwd, err = initWith(fp, gs.method, forwardOptions(&gs.o, da.sys, false)); err != nil {
		return err
	}
	da.e = newERK[T](da.tab, N, false)
	S := da.e.s + da.e.ne
	da.ys, da.kb = make([]T, S*N), make([]T, S*N)
	da.ub, da.yb, da.end = make([]T, N), make([]T, N), make([]T, N)
	da.wsave = make([]float64, S)
	fwd := da.fwd
	fwdERK := fwd.st.(*erk[T])
	ckpt := da.cfg.Checkpoints > 0
	keep := func() {
		if da.record(fwd, ckpt) {
			// The main stages but the last, always those of the accepted
			// attempt: the reverse pass need not evaluate F again.
			da.sk = append(da.sk, fwdERK.k[:(fwdERK.s-1)*N]...)
		}
	}
	fwd.onAccept = func() {
		if da.fs.kept { // recorded by onFire, before the restart overwrote stage 0
			da.fs.kept = false
			return
		}
		keep()
	}
	if len(fp.Events)+len(fp.Schedules) > 0 {
		fwd.onFire = da.fireHook(gs, fwd, da.n, keep)
	}
	da.replay = func(i int, u, next []T) error {
		if d := da.fs.after(i); d != nil {
			copy(next, d.whole)
			return nil
		}
		da.forwardStep(u, da.ts[i], da.hs[i], false, nil)
		copy(next, da.stageIn(da.e.s-1))
		return nil
	}
	da.back = func(i int, u, stored []T) error {
		if d := da.fs.after(i); d != nil {
			da.jump(gs, d, da.ub, da.pb, da.n, da.quad)
		}
		da.reverseStep(i, u, stored, &da.ap)
		return nil
	}
	da.built = true
	return nil
}

func (da *discreteAdjoint[T]) stageIn(i int) []T  { return da.ys[i*da.dimN : (i+1)*da.dimN] }
func (da *discreteAdjoint[T]) stageBar(i int) []T { return da.kb[i*da.dimN : (i+1)*da.dimN] }

// forwardStep recomputes the main stages of the step from u at t with size
// h, and with all the last stage and the extra ones. It leaves the stage
// inputs in ys, the stages in e.k and u_new in ys's stage s−1. stored holds
// the forward solve's stages 0…s−2, or is nil. With them it evaluates F
// only for the last and the extra stages, if all.
func (da *discreteAdjoint[T]) forwardStep(u []T, t, h float64, all bool, stored []T) {
	e, f, p := da.e, da.sys.rhs(), da.gs.prob.P
	s := e.s
	hT := T(h)
	copy(da.stageIn(0), u)
	if stored != nil {
		copy(e.k, stored)
	} else {
		f(e.stage(0), u, p, t)
	}
	for i := 1; i < s; i++ {
		y := da.stageIn(i)
		e.combine(y, u, hT, &e.rows[i])
		if (i < s-1 && stored == nil) || (i == s-1 && all) {
			f(e.stage(i), y, p, t+e.c[i]*h)
		}
	}
	if all {
		for x := s; x < s+e.ne; x++ {
			y := da.stageIn(x)
			e.combine(y, u, hT, &e.rows[x])
			f(e.stage(x), y, p, t+e.c[x]*h)
		}
	}
}

// reverseStage propagates stage i's cotangent:
//
//	ȳ_i = extra + (∂F/∂u)ᵀk̄_i,  p̄ += (∂F/∂p)ᵀk̄_i,  ū += ȳ_i,  k̄_j += h a_ij ȳ_i.
func (da *discreteAdjoint[T]) reverseStage(i int, extra []T, t, h float64) {
	e := da.e
	N := da.dimN
	yb := da.yb
	if extra != nil {
		copy(yb, extra)
	} else {
		for x := 0; x < len(yb); x++ { // a short vector: no memclr call
			yb[x] = 0
		}
	}
	kb := da.stageBar(i)
	if !allZero(kb) {
		if da.quad {
			da.sys.vjp(yb, da.pb, kb, da.stageIn(i), da.gs.prob.P, t+e.c[i]*h)
		} else {
			da.gs.prob.VJP(yb, da.pb, kb, da.stageIn(i), da.gs.prob.P, t+e.c[i]*h)
		}
	}
	for x, v := range yb {
		da.ub[x] += v
	}
	if i == 0 {
		return
	}
	row := &e.rows[i]
	hT := T(h)
	val := row.val[:len(row.off)]
	if N == 2 { // two components: the same sums without the inner loop
		y0, y1 := yb[0], yb[1]
		for m, off := range row.off {
			a := hT * val[m]
			dst := da.kb[off : off+2 : off+2]
			dst[0] += a * y0
			dst[1] += a * y1
		}
		return
	}
	for m, off := range row.off {
		a := hT * val[m]
		dst := da.kb[off : off+N]
		for x, v := range yb {
			dst[x] += a * v
		}
	}
}

func allZero[T Float](x []T) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

// reverseStep turns da.ub, the cotangent of the end of step `step`, into
// that of its start u. It takes in the cotangents of the save times at its
// end and inside it.
func (da *discreteAdjoint[T]) reverseStep(step int, u, stored []T, ap *adjointPass[T]) {
	gs, e, n := da.gs, da.e, da.n
	t, h, tEnd := da.ts[step], da.hs[step], da.tEnd[step]
	for ap.j >= 0 {
		s, k := ap.saveIO(ap.j)
		if s != tEnd {
			break
		}
		addTo(da.ub[:n], gs.dl[k])
		ap.j--
	}
	// An event cut the step at θ < 1: its end is the interpolant there.
	cut := da.fs.endTheta(step)
	interior := cut < 1
	if ap.j >= 0 {
		s, _ := ap.saveIO(ap.j)
		interior = interior || ap.dir*(s-t) > 0
	}
	da.forwardStep(u, t, h, interior, stored)
	clear(da.kb)
	copy(da.end, da.ub) // the cotangent of y_{s−1} = u_new
	clear(da.ub)
	if cut < 1 {
		da.denseBar(da.end, cut, h)
		clear(da.end)
	}
	for ap.j >= 0 {
		s, k := ap.saveIO(ap.j)
		if !(ap.dir*(s-t) > 0) {
			break
		}
		da.denseBar(gs.dl[k], (s-t)/h, h)
		ap.j--
	}
	for i := e.s + e.ne - 1; i >= 0; i-- {
		var extra []T
		if i == e.s-1 {
			extra = da.end
		}
		da.reverseStage(i, extra, t, h)
	}
}

// denseBar adds c, the cotangent of the dense output at θ of a step of
// size h, u + h Σ_i b_i(θ) k_i, into da.ub and the stages' cotangents. c
// is the state's (n) or the whole system's (N).
func (da *discreteAdjoint[T]) denseBar(c []T, θ, h float64) {
	addTo(da.ub[:len(c)], c)
	for i, row := range da.bi {
		var w float64
		pw := θ
		for _, b := range row {
			w += b * pw
			pw *= θ
		}
		if w == 0 {
			continue
		}
		wT := T(h * w)
		dst := da.stageBar(i)
		for x, v := range c {
			dst[x] += wT * v
		}
	}
}

func addTo[T Float](dst, src []T) {
	for i, v := range src[:len(dst)] {
		dst[i] += v
	}
}

func (da *discreteAdjoint[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	if !da.built || quad != da.quad {
		if err := da.build(quad); err != nil {
			return err
		}
	}
	n, N := da.n, da.dimN
	fwd := da.fwd
	da.reset()
	if gs.hyb != nil {
		syncHybrid(gs, fwd, n, N)
		da.fs.setTimesJac(gs)
	}
	ckpt := da.cfg.Checkpoints > 0
	var ck *checkpoints[T]
	if ckpt {
		ck = &da.ck
	}
	// da.end is free until the reverse pass: the initial state's buffer.
	if err := gs.forwardPass(ctx, fwd, da.sys, da.end, ck, da.cfg.Checkpoints, da.u1); err != nil {
		return err
	}
	clear(da.ub)
	if da.quad {
		da.ub[n] = 1
	}

	da.ap = adjointPass[T]{gs: gs, dir: fwd.dir, j: len(gs.at) - 1}
	ap := &da.ap
	clear(da.pb)
	da.endAt(gs, da.ub, ap)
	if err := da.reverse(gs, N, (da.e.s-1)*N, ckpt, da.replay, da.back); err != nil {
		return err
	}
	if d := da.fs.after(-1); d != nil { // a firing at T0, after u0 is saved
		da.jump(gs, d, da.ub, da.pb, n, da.quad)
	}
	for ap.j >= 0 { // save times at T0: u0 itself
		_, k := ap.saveIO(ap.j)
		addTo(da.ub[:n], gs.dl[k])
		ap.j--
	}
	copy(gs.res.U0, da.ub[:n])
	copy(gs.res.P, da.pb)
	gs.endDerivatives(gs.res.U0, da.u1)
	if da.fs.term {
		gs.res.T1 = 0 // a terminating firing ended the solve: T1 does not matter
	}
	return nil
}
