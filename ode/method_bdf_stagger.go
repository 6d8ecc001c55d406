package ode

import "math"

// BDF's staggered corrector for forward sensitivities, CVODES's
// CV_STAGGERED (cvodes.c: cvStep, cvStgrNls; cvodes_nls_stg.c). The
// system is Y = [u | rest]: n state components, then components whose
// right-hand side is affine in themselves once u is fixed — the
// sensitivities s_k' = J(u)·s_k + ∂F/∂θ_k and the running cost's
// quadratures. Each attempt first converges Newton's iteration on u
// alone, with F alone, the state's linear system and the state's norm in
// the convergence test. Then it solves the rest at the converged u:
//
//	(I − γJ)·Δs_k = γ·s_k' − (z_1/l_1 + acor_k),
//
// block by block with the state's factorisation (or its GMRES and
// preconditioner, at a tenth of the state's linear tolerance: see
// bdfSensLinTol), the quadrature rows by W = I, for up to bdfMaxCor
// iterations with their own convergence rate (CVODES's crateS) and
// CVODES's test on the largest block norm. A J or an M that is not
// current when that iteration fails is set up again at the converged u
// and the iteration retried, as CVODES's Newton solver does; a second
// failure is a convergence failure of the step: it is retried with
// h/4, as for the state's.
//
// The error test is the simultaneous corrector's: one weighted RMS norm
// over all the components (the sensitivities enter it unless
// ForwardSensitivity.NoErrorControl gives them an infinite tolerance),
// and the order and step-size choice that follow are unchanged. One
// thing differs: when the state's part of that norm already fails the
// test, the attempt is rejected before the sensitivities are solved (the
// same decision, as the whole norm is at least the state's part), and
// the retried step is sized from the state's part.

// staggeredSys is a system BDF can solve with the staggered corrector.
type staggeredSys[T Float] interface {
	// stateRHS writes F of the state: du = F(u), both of length n.
	stateRHS(du, u []T, p []float32, t float64)
	// sensRHS writes the derivatives of the rest, dY[n:], at Y.
	sensRHS(dY, Y []T, p []float32, t float64)
	// sensWeights writes the rest's weights 1/(atol + rtol·|Y_i|) for
	// the convergence test into w (w[i] for Y[n+i]), with the tolerances
	// the rest would have under error control. Used only when some are
	// left out of the error test.
	sensWeights(w []float64, Y []T)
}

// weightedSolver is a linSys whose solves can weigh the residual by the
// right-hand side's own error weights, as CVODES's lsolve takes ewtS for
// a sensitivity: GMRES, whose stopping test is a weighted norm. Without
// them a sensitivity block would be weighed on the state's scale, which
// may differ from its own by orders of magnitude.
type weightedSolver[T Float] interface {
	solveWeighted(it *Integrator[T], b, u, fu []T, w []float64, tol float64) bool
}

// bdfSensLinTol scales the linear tolerance of a sensitivity block's
// GMRES solve, in its own weights, from the state's (CVODES takes the
// same for both). A correction of the sensitivities is their local error
// estimate itself, and GMRES stops on the residual, which on a badly
// scaled, non-normal I − γJ bounds the correction's error poorly: at the
// state's tolerance Robertson's problem (rtol 1e-8, no preconditioner)
// took 9547 steps for an error of 1.1e-4 in dG/dp, at a tenth of it 1490
// steps for 6.6e-7 (TestRobertsonGradientReference), while the
// Brusselator's steps did not move.
const bdfSensLinTol = 0.1

// bdfStagger is the staggered corrector's state in a bdf.
type bdfStagger[T Float] struct {
	sys    staggeredSys[T]
	in     linSys[T]         // the state's n×n system
	n, nb  int               // the state's size; the number of blocks of n after it
	crate  float64           // the sensitivities' convergence rate, CVODES's crateS
	nwU    float64           // 1/(the number of weighted state components)
	nwQ    float64           // 1/(the number of weighted quadratures), 0 for none
	saU    float64           // Σ (acor_i·w_i)² over the state at its convergence
	weighs bool              // any weighted component past the state
	ws     weightedSolver[T] // in, when its solves take weights and every block component has one
	cw     []float64         // the rest's weights in the convergence test: b.ewt[n:] or own
	own    []float64         // cw's storage when some of the rest are left out of the error test
}

// stagger makes b solve sys, a system of 1 + nb blocks of n components
// and then quadratures whose linear system is an augSys, with the
// staggered corrector. It reports false, and leaves b as it was, when
// b's linear system is not one.
func (b *bdf[T]) stagger(sys staggeredSys[T], n, nb int) bool {
	a, ok := b.ls.(*augSys[T])
	if !ok || a.n != n || a.coupled() || n*(1+nb) > b.n {
		return false
	}
	b.stg = &bdfStagger[T]{sys: sys, in: a.in, n: n, nb: nb, crate: 1}
	return true
}

// begin starts an attempt: at the first step of a solve it counts the
// weighted components (the tolerances are fixed within a solve).
func (s *bdfStagger[T]) begin(b *bdf[T]) {
	if b.noSetup {
		s.crate = 1 // CVODES without lsetup
	}
	n, N := s.n, b.n
	if b.nst != 0 {
		if s.own != nil {
			s.sys.sensWeights(s.cw, b.z[0][:N]) // at y_n, as the error weights
		}
		return
	}
	// The first attempt of a solve: the tolerances are fixed from here to
	// its end (or to a restart, which comes back here).
	s.crate = 1
	s.cw = b.ewt[n:N]
	if countWeighted(s.cw) != N-n {
		// Left out of the error test (NoErrorControl) but not of the
		// convergence test, as in CVODES with errconS = false.
		if len(s.own) != N-n {
			s.own = make([]float64, N-n)
		}
		s.cw = s.own
		s.sys.sensWeights(s.cw, b.z[0][:N])
	} else {
		s.own = nil
	}
	s.nwU = 1 / float64(max(countWeighted(b.ewt[:n]), 1))
	s.nwQ = 0
	if k := countWeighted(s.cw[n*s.nb:]); k > 0 {
		s.nwQ = 1 / float64(k)
	}
	s.weighs = countWeighted(s.cw) > 0
	s.ws = nil
	if ws, ok := s.in.(weightedSolver[T]); ok && countWeighted(s.cw[:n*s.nb]) == n*s.nb {
		s.ws = ws
	}
}

func countWeighted(w []float64) int {
	k := 0
	for _, v := range w {
		if v != 0 {
			k++
		}
	}
	return k
}

// correct solves the rest of the system after the state's iteration
// converged, with it.uNew[:n] the converged state. It reports whether it
// converged (b.fail says why not), with b.acnrm the whole system's norm
// of the correction, or only the state's part when that alone fails the
// error test.
func (s *bdfStagger[T]) correct(b *bdf[T], it *Integrator[T], tn, h float64) bool {
	s.saU = b.acnrm * b.acnrm / b.nw
	n, N := s.n, b.n
	if b.acnrm*b.tq[2] > 1 {
		clear(b.acor[n:N]) // for largestError
		return true        // rejected by attempt's error test
	}
	y, z0 := it.uNew[:N], b.z[0][:N]
	for {
		copy(y[n:], z0[n:])
		if !s.rhs(b, it, y, tn) {
			return false
		}
		switch s.iterate(b, it, tn) {
		case bdfNlsOK:
			return true
		case bdfNlsFail:
			return false
		}
		// J or M was not current: set up at the converged state.
		if c := firstNonFinite(b.stateF(it, b.f, y, tn)); c >= 0 {
			b.fail, b.nanComp, b.nanT = bdfFNaN, c, tn
			return false
		}
		if !b.setup(it, tn, h, bdfFailBadJ, y) {
			b.fail = bdfLinSysBad
			return false
		}
	}
}

// rhs evaluates the rest's derivatives at y into b.f[n:], counting one
// FEval; it reports false, with b.fail set, when they are not finite.
func (s *bdfStagger[T]) rhs(b *bdf[T], it *Integrator[T], y []T, tn float64) bool {
	n := s.n
	s.sys.sensRHS(b.f[:b.n], y, it.prob.P, tn)
	it.stats.FEvals++
	if c := firstNonFinite(b.f[n:b.n]); c >= 0 {
		b.fail, b.nanComp, b.nanT = bdfFNaN, n+c, tn
		return false
	}
	return true
}

// iterate runs up to bdfMaxCor iterations on the rest from acor = 0. b.f
// holds their derivatives at the prediction.
func (s *bdfStagger[T]) iterate(b *bdf[T], it *Integrator[T], tn float64) int {
	n, N := s.n, b.n
	nbEnd := n * (1 + s.nb)
	z0, z1 := b.z[0][:N], b.z[1][:N]
	acor, del, f, y := b.acor[:N], b.del[:N], b.f[:N], it.uNew[:N]
	ewt, cw := b.ewt[:N], s.cw[:N-n]
	u, fu := y[:n], f[:n]
	gam, rl1 := T(b.gamma), T(b.rl1)
	scale := T(1)
	iterative := b.ls.shift(b.gamma)
	if !iterative && b.gamrat != 1 {
		scale = T(2 / (1 + b.gamrat))
	}
	tol := bdfEpLin * b.tq[4]
	if s.ws != nil {
		tol *= bdfSensLinTol
	}
	red, _ := s.in.(reducedSolver)
	clear(acor[n:])
	var delp float64
	for m := 0; ; m++ {
		for i := n; i < N; i++ {
			del[i] = gam*f[i] - (rl1*z1[i] + acor[i])
		}
		for lo := n; lo < nbEnd; lo += n {
			blk, w := del[lo:lo+n:lo+n], cw[lo-n:lo-n+n]
			var ok bool
			switch {
			case m == 0 && iterative && s.ws != nil && weightedRMS64(blk, w) <= tol:
				// As for the state (and CVODE's cvLsSolve at the first
				// iteration): a residual below the linear tolerance is
				// its own solution.
				ok = true
			case s.ws != nil:
				ok = s.ws.solveWeighted(it, blk, u, fu, w, tol)
			default:
				ok = s.in.solve(it, blk, u, fu, tol)
			}
			if !ok && !(m == 0 && red != nil && red.reduced()) {
				if b.stale() {
					return bdfNlsTryAgain
				}
				b.fail = bdfLinSysBad
				return bdfNlsFail
			}
		}
		it.stats.NewtonIters++
		// acor += scale·del, y = z0 + acor; the largest block norm of
		// scale·del (CVODES's cvSensNorm) and Σ (acor·w)².
		var dn, sa float64
		for lo := n; lo < N; lo += n {
			hi, nw := lo+n, s.nwU
			if lo >= nbEnd {
				hi, nw = N, s.nwQ
			}
			var sd float64
			for i := lo; i < hi; i++ {
				d := del[i] * scale
				a := acor[i] + d
				acor[i] = a
				y[i] = z0[i] + a
				r, q := float64(d)*cw[i-n], float64(a)*ewt[i]
				sd += r * r
				sa += q * q
			}
			dn = max(dn, math.Sqrt(sd*nw))
			if hi == N {
				break
			}
		}
		if m > 0 {
			s.crate = max(bdfCrDown*s.crate, dn/delp)
		}
		if dcon := dn * min(1, s.crate) / b.tq[4]; dcon <= 1 || !s.weighs {
			b.acnrm = math.Sqrt((s.saU + sa) * b.nw)
			b.jcur = false
			return bdfNlsOK
		}
		if m+1 == bdfMaxCor || (m >= 1 && dn > bdfRDiv*delp) || !(dn <= math.MaxFloat64) {
			if b.stale() {
				return bdfNlsTryAgain
			}
			b.fail = bdfNewton
			return bdfNlsFail
		}
		delp = dn
		if !s.rhs(b, it, y, tn) {
			if b.stale() && b.fail == bdfFNaN {
				return bdfNlsTryAgain
			}
			return bdfNlsFail
		}
	}
}

// weightedRMS64 is weightedRMS with float64 weights.
func weightedRMS64[T Float](v []T, w []float64) float64 {
	var acc float64
	w = w[:len(v)]
	for i, x := range v {
		y := float64(x) * w[i]
		acc += y * y
	}
	return math.Sqrt(acc / float64(len(v)))
}
