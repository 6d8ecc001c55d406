package ode

import (
	"context"
	"math"
	"unsafe"
)

// forwardSens integrates the state and its sensitivities as one system
//
//	Y = [u | s_0 … s_{m−1} | q | q_0 … q_{m−1}],  m = len(p) + n,
//
// where s_k = ∂u/∂θ_k, with θ the parameters and then u0. With a running
// cost, q = ∫g and q_k = ∂q/∂θ_k. Each column takes one JVP, with v = s_k
// and dp = e_k or 0:
//
//	s_k' = ∂F/∂u·s_k + ∂F/∂θ_k
//	q_k' = ∂g/∂u·s_k + ∂g/∂θ_k
//
// When useRows says so, S' = J_u·S + [J_p 0] comes instead from the n rows
// of [J_u J_p] = [∂F/∂u ∂F/∂p] and small dense products. Each row is one
// VJP with a unit vector. With jacs, Problem.Jac and Problem.ParamJac give
// the rows.
type forwardSens[T Float] struct {
	gs         *GradientSolver[T]
	cfg        ForwardSensitivity
	n, np, m   int
	quad       bool
	built      bool
	dimN       int
	it         *Integrator[T]
	y0         []T
	dp         []T // e_k for the JVPs
	gu, gp     []T
	jn, ev     []T // J of F; a unit vector
	col        []T
	f0, fp, yp []T // the Jacobian's differences
	sqrtEps    float64
	rows       bool              // S' from the rows of [J_u J_p], not m JVPs
	jacs       bool              // those rows from Problem.Jac and ParamJac, not n VJPs
	ju, jp, er []T               // J_u (n×n), J_p (n×np), a unit vector (n)
	hf         *hybridForward[T] // the events and schedules, if any (sens_forward_hybrid.go)
}

// useRows is the cost rule between the two ways of evaluating the
// sensitivities' right-hand side. One takes m = np+n JVPs. The other takes
// n VJPs, the rows of [∂F/∂u ∂F/∂p], and n·n·m multiply-adds. A VJP is
// taken to cost at most twice a JVP. So the rows win when the problem has
// a VJP and 2n ≤ m, that is n ≤ np. Lotka-Volterra then takes 2 VJPs
// instead of 6 JVPs, and a neural ODE 2 instead of 254.
func useRows(n, m int, hasVJP bool) bool { return hasVJP && 2*n <= m }

func newForwardSens[T Float](gs *GradientSolver[T], cfg ForwardSensitivity) (gradMethod[T], error) {
	n, np := len(gs.prob.U0), len(gs.prob.P)
	fs := &forwardSens[T]{gs: gs, cfg: cfg, n: n, np: np, m: np + n,
		dp: make([]T, np), gu: make([]T, n), gp: make([]T, np)}
	fs.sqrtEps = math.Sqrt(0x1p-52)
	if T(1)+T(0x1p-30) == T(1) {
		fs.sqrtEps = math.Sqrt(0x1p-23)
	}
	gs.res.P = make([]T, np)
	return fs, nil
}

// build makes the integrator of the augmented system. It runs again when
// the loss gains or loses its running cost.
func (fs *forwardSens[T]) build(quad bool) error {
	n, m := fs.n, fs.m
	N := n * (1 + m)
	if quad {
		N += 1 + m
	}
	fs.quad, fs.dimN = quad, N
	fs.y0 = make([]T, N)
	aug := Problem[T]{F: fs.rhs, U0: fs.y0, T0: fs.gs.prob.T0, T1: fs.gs.prob.T1, P: fs.gs.prob.P}
	if n == 2 && !quad {
		aug.F = fs.rhs2 // one call level fewer per stage on the common small case
	}
	fs.hybridAug(&aug)
	stagger := fs.staggered()
	switch prob := &fs.gs.prob; {
	case !fs.gs.method.info().stiff:
	case stagger || structured(prob.JacStructure) && fs.innerJac():
		// The problem's structure on every block (sens_forward_struct.go).
		aug.JacStructure = fs.augStructure(quad)
		if usesJac(prob) {
			aug.Jac = fs.jacU
		}
		if prob.JVP != nil {
			aug.JVP = fs.jvpU
		}
	default:
		aug.Jac = fs.jac
		fs.jn, fs.ev, fs.col = make([]T, n*n), make([]T, n), make([]T, n)
		fs.f0, fs.fp, fs.yp = make([]T, N), make([]T, N), make([]T, N)
	}
	o := fs.gs.o
	o.saveAt, o.saveAtSet = nil, true
	o.atolv, o.rtolv = make([]float64, N), make([]float64, N)
	it, err := initWith(aug, fs.gs.method, o)
	if err != nil {
		return err
	}
	if quad {
		it.quadratures(1 + m) // q and its sensitivities
	}
	if stagger {
		if b, ok := it.st.(*bdf[T]); !ok || !b.stagger(fs, n, m) {
			return errorf("ForwardSensitivity: the staggered corrector needs BDF's block system; got %v", aug.JacStructure)
		}
	}
	fs.it, fs.built = it, true
	fs.gs.res.Sens = make([][]T, 0, len(fs.gs.at))
	return nil
}

// setTolerances fills the per-component tolerances for the current θ.
func (fs *forwardSens[T]) setTolerances() {
	o, g := &fs.it.o, &fs.gs.o
	n, m, np := fs.n, fs.m, fs.np
	qr, qa := g.quadTols()
	for i := 0; i < n; i++ {
		o.atolv[i], o.rtolv[i] = g.tolAt(i)
	}
	for k := 0; k < m; k++ {
		bar := 1.0 // ∂u/∂u0 is on the scale of 1
		if k < np {
			bar = thetaBar(float64(fs.gs.prob.P[k]))
		}
		for i := 0; i < n; i++ {
			a, r := g.tolAt(i)
			if fs.cfg.NoErrorControl {
				a = math.Inf(1)
			}
			o.atolv[n+k*n+i], o.rtolv[n+k*n+i] = a/bar, r
		}
		if fs.quad {
			o.atolv[n*(1+m)+1+k], o.rtolv[n*(1+m)+1+k] = qa/bar, qr
		}
	}
	if fs.quad {
		o.atolv[n*(1+m)], o.rtolv[n*(1+m)] = qa, qr
	}
	o.atol = math.Inf(1)
	for _, a := range o.atolv {
		o.atol = min(o.atol, a)
	}
}

// rhs is the augmented right-hand side.
func (fs *forwardSens[T]) rhs(dY, Y []T, p []float32, t float64) {
	n, m := fs.n, fs.m
	fs.gs.prob.F(dY[:n], Y[:n], p, t)
	switch {
	case fs.rows && n == 2 && len(Y) >= 2*(1+m) && len(dY) >= 2*(1+m):
		fs.rows2(dY[2:2*(1+m)], Y[:2*(1+m)], p, t)
	case fs.rows:
		fs.rowsRHS(dY, Y, p, t)
	default:
		fs.jvpRHS(dY, Y, p, t)
	}
	if fs.quad {
		fs.quadRHS(dY, Y, p, t)
	}
}

// rhs2 is rhs for two states without a running cost: F and rows2 in one
// call. It is rhs when the rows are off, for a problem without a VJP.
func (fs *forwardSens[T]) rhs2(dY, Y []T, p []float32, t float64) {
	m := fs.m
	if !fs.rows || fs.quad || len(Y) < 2*(1+m) || len(dY) < 2*(1+m) {
		fs.rhs(dY, Y, p, t)
		return
	}
	fs.gs.prob.F(dY[:2], Y[:2], p, t)
	fs.rows2(dY[2:2*(1+m)], Y[:2*(1+m)], p, t)
}

// jvpRHS writes the sensitivities' derivatives by one JVP per column.
func (fs *forwardSens[T]) jvpRHS(dY, Y []T, p []float32, t float64) {
	n, m, np := fs.n, fs.m, fs.np
	u := Y[:n]
	jvp, dp := fs.gs.prob.JVP, fs.dp
	for k, lo := 0, n; k < m; k, lo = k+1, lo+n {
		s, ds := Y[lo:lo+n:lo+n], dY[lo:lo+n:lo+n]
		if k < np {
			dp[k] = 1
			jvp(ds, u, s, p, dp, t)
			dp[k] = 0
		} else {
			jvp(ds, u, s, p, nil, t)
		}
	}
}

// rowsRHS writes the sensitivities' derivatives S' = J_u·S + [J_p 0] from
// the Jacobian's rows, one VJP each.
func (fs *forwardSens[T]) rowsRHS(dY, Y []T, p []float32, t float64) {
	n, m, np := fs.n, fs.m, fs.np
	u := Y[:n]
	ju, jp := fs.ju, fs.jp
	if fs.jacs {
		fs.gs.jac.eval(ju, u, p, t)
		fs.gs.prob.ParamJac(jp, u, p, t)
	} else {
		vjp, er := fs.gs.prob.VJP, fs.er
		// Index loops, not range: short rows, cheaper than memclr calls.
		for x := 0; x < len(ju); x++ {
			ju[x] = 0
		}
		for x := 0; x < len(jp); x++ {
			jp[x] = 0
		}
		for i, ri, rpi := 0, 0, 0; i < n; i, ri, rpi = i+1, ri+n, rpi+np {
			er[i] = 1
			vjp(ju[ri:ri+n:ri+n], jp[rpi:rpi+np:rpi+np], er, u, p, t)
			er[i] = 0
		}
	}
	for k, lo := 0, n; k < m; k, lo = k+1, lo+n {
		s, ds := Y[lo:lo+n:lo+n], dY[lo:lo+n:lo+n]
		for i := 0; i < n; i++ {
			r := ju[i*n : (i+1)*n]
			var d T
			for j, v := range r {
				d += v * s[j]
			}
			if k < np {
				d += jp[i*np+k]
			}
			ds[i] = d
		}
	}
}

// rows2 is rowsRHS for two states, the common small case of
// Lotka-Volterra, in one pass. It takes the two rows of [J_u J_p] by one
// VJP each, or from Jac and ParamJac with jacs. Then ds_k = J_u·s_k plus
// column k of J_p, with J_u in registers. dS is the sensitivities' part of
// dY, 2m components; Y is the state and the sensitivities. The sums are
// those of rowsRHS's general loop.
func (fs *forwardSens[T]) rows2(dS, Y []T, p []float32, t float64) {
	np := fs.np
	ju := fs.ju[:4:4]
	jp := fs.jp[: 2*np : 2*np]
	u := Y[:2:2]
	if fs.jacs {
		fs.gs.jac.eval(ju, u, p, t)
		fs.gs.prob.ParamJac(jp, u, p, t)
	} else {
		ju[0], ju[1], ju[2], ju[3] = 0, 0, 0, 0
		for x := 0; x < len(jp); x++ { // short: cheaper than a memclr call
			jp[x] = 0
		}
		vjp, er := fs.gs.prob.VJP, fs.er[:2:2]
		er[0], er[1] = 1, 0
		vjp(ju[0:2:2], jp[:np:np], er, u, p, t)
		er[0], er[1] = 0, 1
		vjp(ju[2:4:4], jp[np:], er, u, p, t)
		er[1] = 0
	}
	rowsProduct2(dS, Y[2:], ju, jp, np)
}

// rowsProduct2 writes dS = J_u·S + [J_p 0] for two states. S and dS hold
// len(dS)/2 column pairs s_k0, s_k1. ju is J_u and jp is the 2×np J_p,
// both row-major. float64 goes in vector lanes with the same bits: see
// rows2AVX.
func rowsProduct2[T Float](dS, S, ju, jp []T, np int) {
	S = S[:len(dS)]
	ju = ju[:4]
	if haveRows2AVX && unsafe.Sizeof(ju[0]) == 8 && np > 0 && 2*np <= len(dS) && len(jp) >= 2*np {
		rows2AVX((*float64)(unsafe.Pointer(&dS[0])), (*float64)(unsafe.Pointer(&S[0])), len(dS)/2,
			(*float64)(unsafe.Pointer(&ju[0])), (*float64)(unsafe.Pointer(&jp[0])), np)
		return
	}
	a, b, c, d := ju[0], ju[1], ju[2], ju[3]
	jp0, jp1 := jp[:np:np], jp[np:]
	// S and dS as pairs s_k0, s_k1; the first np columns add J_p's.
	i := 0
	for k := 0; k < len(jp0) && i+1 < len(S); k, i = k+1, i+2 {
		s0, s1 := S[i], S[i+1]
		dS[i] = a*s0 + b*s1 + jp0[k]
		dS[i+1] = c*s0 + d*s1 + jp1[k]
	}
	for ; i+1 < len(S); i += 2 {
		s0, s1 := S[i], S[i+1]
		dS[i] = a*s0 + b*s1
		dS[i+1] = c*s0 + d*s1
	}
}

// quadRHS writes the running cost and its sensitivities' derivatives.
func (fs *forwardSens[T]) quadRHS(dY, Y []T, p []float32, t float64) {
	n, m, np := fs.n, fs.m, fs.np
	u := Y[:n]
	q := n * (1 + m)
	l := fs.gs.loss
	dY[q] = T(l.Running(u, p, t))
	clear(fs.gu)
	clear(fs.gp)
	l.RunningGradient(fs.gu, fs.gp, u, p, t)
	for k := 0; k < m; k++ {
		s := Y[n+k*n : n+(k+1)*n]
		var d T
		for i, v := range fs.gu {
			d += v * s[i]
		}
		if k < np {
			d += fs.gp[k]
		}
		dY[q+1+k] = d
	}
}

// jac is the augmented Jacobian for the stiff methods: J on the diagonal
// blocks, the coupling columns ∂/∂u by forward differences of rhs, and
// ∂g/∂u against each s_k in the quadrature rows.
func (fs *forwardSens[T]) jac(JA, Y []T, p []float32, t float64) {
	n, m, N := fs.n, fs.m, fs.dimN
	u := Y[:n]
	jacobianOf(fs.jn, fs.gs, u, p, t, fs.ev, fs.col)
	clear(JA)
	for b := 0; b <= m; b++ {
		off := b * n
		for i := 0; i < n; i++ {
			copy(JA[(off+i)*N+off:(off+i)*N+off+n], fs.jn[i*n:(i+1)*n])
		}
	}
	fs.rhs(fs.f0, Y, p, t)
	copy(fs.yp, Y)
	o := &fs.it.o
	// The coupling columns are forward differences of the sensitivities'
	// right-hand side, whose JVPs may be central differences themselves
	// (FiniteDiff), with an error of about ε^⅔: divided by a √ε step that
	// leaves ε^⅙ of noise, and Rodas5P, which needs J for its order, took
	// 15–200× more steps. ∛ε balances the two errors at ε^⅓.
	step := fs.sqrtEps
	if fs.gs.fdProducts {
		step = cbrtEps[T]()
	}
	for j := 0; j < n; j++ {
		uj := Y[j]
		a, r := o.tolAt(j)
		scale := math.Max(math.Abs(float64(uj)), a/math.Max(r, fs.sqrtEps))
		if !(scale > 0) || math.IsInf(scale, 0) {
			scale = 1
		}
		fs.yp[j] = uj + T(step*scale)
		d := fs.yp[j] - uj
		if d == 0 {
			fs.yp[j] = uj + T(step*math.Max(math.Abs(float64(uj)), 1))
			d = fs.yp[j] - uj
		}
		fs.rhs(fs.fp, fs.yp, p, t)
		inv := 1 / d
		for r := n; r < N; r++ {
			JA[r*N+j] = (fs.fp[r] - fs.f0[r]) * inv
		}
		fs.yp[j] = uj
	}
	if fs.quad {
		q := n * (1 + m)
		clear(fs.gu)
		clear(fs.gp)
		fs.gs.loss.RunningGradient(fs.gu, fs.gp, u, p, t)
		copy(JA[q*N:q*N+n], fs.gu)
		for k := 0; k < m; k++ {
			row := (q + 1 + k) * N
			copy(JA[row+n+k*n:row+n+(k+1)*n], fs.gu)
		}
	}
}

func (fs *forwardSens[T]) run(ctx context.Context, gs *GradientSolver[T]) error {
	quad := gs.loss.Running != nil
	// GradientFor's problem may lack the products or the Jacobians; the
	// choice is made before build, whose integrator evaluates the system.
	fs.jacs = gs.jac.ok() && gs.prob.ParamJac != nil
	fs.rows = fs.jacs || useRows(fs.n, fs.m, gs.prob.VJP != nil)
	if !fs.rows && gs.prob.JVP == nil {
		return errorf("Gradient: ForwardSensitivity needs Problem.JVP, or Jac and ParamJac, for the sensitivities' right-hand side; this problem has neither")
	}
	if fs.rows && fs.ju == nil {
		fs.ju, fs.jp, fs.er = make([]T, fs.n*fs.n), make([]T, fs.n*fs.np), make([]T, fs.n)
	}
	if !fs.built || quad != fs.quad {
		if err := fs.build(quad); err != nil {
			return err
		}
	}
	n, m, np := fs.n, fs.m, fs.np
	it := fs.it
	it.o.saveAt = gs.at
	it.prob.Err = gs.hook()
	u0 := gs.initialState()
	clear(fs.y0)
	copy(fs.y0, u0)
	for j := 0; j < n; j++ {
		fs.y0[n+(np+j)*n+j] = 1
	}
	fs.setTolerances()
	fs.hybridSync()
	if err := it.Reinit(fs.y0, gs.prob.T0, gs.prob.T1, gs.prob.P); err != nil {
		return wrapSolveErr("forward solve", err)
	}
	err := it.Run(ctx)
	gs.res.Forward = it.Stats()
	if err != nil {
		return wrapSolveErr("forward solve (state and sensitivities)", err)
	}
	if err := fs.hybridEnd(); err != nil {
		return err
	}
	ys := gs.takeSaved(it, n)
	gs.res.Sens = gs.res.Sens[:0]
	for range gs.nAt {
		gs.res.Sens = append(gs.res.Sens, nil)
	}
	for k, y := range ys { // in the order of Loss.At
		if i := gs.order[k]; i < gs.nAt {
			gs.res.Sens[i] = y[n : n*(1+m)]
		}
	}
	v, err := gs.evalLoss()
	if err != nil {
		return err
	}
	gp, gu := gs.res.P, gs.res.U0
	for c := 0; c < m; c++ {
		var d float64
		for k, y := range ys {
			s := y[n+c*n : n+(c+1)*n]
			for i, w := range gs.dl[k] {
				d += float64(w) * float64(s[i])
			}
		}
		if fs.quad {
			d += float64(it.u[n*(1+m)+1+c])
		}
		if gs.endK >= 0 && gs.endT {
			// Loss.End at the terminating firing: the sensitivities after
			// its effect and its time's.
			s := it.u[n+c*n : n+(c+1)*n]
			for i, w := range gs.endDu {
				d += float64(w) * float64(s[i])
			}
			d += gs.endDt * fs.hf.dtau[c]
		}
		if c < np {
			gp[c] = T(d)
		} else {
			gu[c-np] = T(d)
		}
	}
	if fs.quad {
		v += float64(it.u[n*(1+m)])
	}
	gs.res.Value = v
	gs.endDerivatives(gu, it.u[:n])
	if fs.hf != nil && fs.hf.terminated {
		gs.res.T1 = 0 // the solve ended at the firing, wherever T1 is
	}
	return nil
}

// thetaBar is the scale of parameter θ_k for the sensitivities'
// tolerances, as CVODES's pbar: |θ_k|, or 1 where θ_k = 0.
func thetaBar(v float64) float64 {
	v = math.Abs(v)
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 1
	}
	return v
}
