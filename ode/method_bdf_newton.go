package ode

import "math"

// BDF's corrector: Newton's iteration on
//
//	G(acor) = acor − γ·F(t_n, z[0] + acor) + z[1]/l[1] = 0,
//
// with M = I − γ̄J factored for some earlier γ̄ and J, as CVODE's cvNls,
// cvNewtonIteration and cvLsSetup do it. M is refactored when γ has moved
// by more than 30 % since, after 20 steps, and after any failure; J is
// evaluated anew after 51 steps, after a convergence failure, and when
// Newton's iteration fails with a J that is not current and γ has not
// moved (otherwise the old J is refactored with the new γ). A correction
// from an M of a stale γ̄ is scaled by 2/(1 + γ/γ̄) for a direct solver;
// an iterative one (GMRES) solves with the current γ instead, through
// linSys.shift, and keeps the preconditioner of γ̄. GMRES without a
// preconditioner has nothing to set up (setupFreeSolver).

// reducedSolver is implemented by an iterative linSys (GMRES) whose solve,
// when it stops short of tol, can still leave in b a solution that
// reduced the residual. BDF accepts such a solution at the first Newton
// iteration of an attempt, as CVODE's cvLsSolve accepts SUNLS_RES_REDUCED
// there; later iterations treat it as a failed solve.
type reducedSolver interface {
	// reduced reports whether the last solve that returned false left
	// in b a solution that reduced the residual.
	reduced() bool
}

// setupFreeSolver is implemented by a linSys that may have nothing to set
// up: GMRES without a preconditioner, whose products J·v are always taken
// at the current iterate. BDF then never calls jacobian or factor, starts
// each attempt's Newton iteration from a convergence rate of 1, and fails
// an attempt whose iteration fails without retrying it, as CVODE does
// when it has neither a matrix nor a preconditioner setup (cvLsInitialize
// sets no lsetup, and cvNls then sets crate = 1).
type setupFreeSolver interface {
	// setupFree reports whether there is nothing to set up.
	setupFree() bool
}

// Outcomes of one Newton iteration sequence.
const (
	bdfNlsOK = iota
	bdfNlsFail
	bdfNlsTryAgain // failed with a stale J or M: set up again and retry
)

// CVODE's convfail: why the linear system is set up.
const (
	bdfNoFailures = iota
	bdfFailBadJ
	bdfFailOther
)

// nls solves the corrector equation at tn. It reports whether it
// converged; b.fail says why not.
func (b *bdf[T]) nls(it *Integrator[T], tn, h float64) bool {
	callSetup := b.nflag != bdfFirstCall || b.nst == 0 || !b.jOK ||
		b.nst >= b.nstlp+bdfMSBP || math.Abs(b.gamrat-1) > bdfDGMax
	if b.noSetup {
		// Nothing to set up: CVODE then has no lsetup, and it starts
		// every attempt from crate = 1.
		callSetup, b.crate = false, 1
	}
	convfail := bdfNoFailures
	if b.nflag == bdfPrevConvFail {
		convfail = bdfFailOther
	}
	z0 := b.z[0]
	if b.stg != nil {
		b.stg.begin(b)
	}
	for {
		f := b.stateF(it, b.f, z0, tn)
		if c := firstNonFinite(f); c >= 0 {
			b.fail, b.nanComp, b.nanT = bdfFNaN, c, tn
			return false
		}
		if callSetup {
			callSetup = false
			if !b.setup(it, tn, h, convfail, z0) {
				b.fail = bdfLinSysBad
				return false
			}
		}
		switch b.iterate(it, tn) {
		case bdfNlsOK:
			if b.stg != nil {
				return b.stg.correct(b, it, tn, h)
			}
			return true
		case bdfNlsFail:
			return false
		}
		callSetup, convfail = true, bdfFailBadJ
	}
}

// stateF evaluates F of the state at u into f, counting one FEval, and
// returns the part of f it wrote: all of it, or with the staggered
// corrector the state's components alone.
func (b *bdf[T]) stateF(it *Integrator[T], f, u []T, t float64) []T {
	it.stats.FEvals++
	if b.stg != nil {
		n := b.stg.n
		b.stg.sys.stateRHS(f[:n], u[:n], it.prob.P, t)
		return f[:n]
	}
	it.prob.F(f, u, it.prob.P, t)
	return f
}

// setup evaluates J at u (the prediction, or with the staggered corrector
// the converged state) when it is due, and factors M = I − γJ. b.f is F
// at u.
func (b *bdf[T]) setup(it *Integrator[T], tn, h float64, convfail int, u []T) bool {
	dgamma := math.Abs(b.gamma/b.gammap - 1)
	jbad := !b.jOK || b.nst == 0 || b.nst >= b.nstlj+bdfMSBJ ||
		(convfail == bdfFailBadJ && dgamma < bdfDGMaxJ) || convfail == bdfFailOther
	b.jcur = false
	if jbad {
		b.jOK = false
		if !b.ls.jacobian(it, tn, u, b.f, h) {
			return false
		}
		b.jOK, b.jcur = true, true
		b.nstlj = b.nst
	}
	b.gamrat, b.crate, b.gammap, b.nstlp = 1, 1, b.gamma, b.nst
	if b.stg != nil {
		b.stg.crate = 1 // CVODES resets crateS at every setup
	}
	return b.ls.factor(it, b.gamma)
}

// iterate runs up to bdfMaxCor Newton iterations from acor = 0. b.f is F
// at the prediction. The iterate y = z[0] + acor is kept in it.uNew.
//
// With the staggered corrector it runs on the state's components alone,
// with the state's linear system and the state's norm in the convergence
// test; b.acnrm is then the state's part of the whole system's norm.
func (b *bdf[T]) iterate(it *Integrator[T], tn float64) int {
	n, ls, nwConv := b.n, b.ls, b.nw
	if b.stg != nil {
		n, ls, nwConv = b.stg.n, b.stg.in, b.stg.nwU
	}
	z0, z1 := b.z[0][:n], b.z[1][:n]
	acor, del, f, y := b.acor[:n], b.del[:n], b.f[:n], it.uNew[:n]
	ewt := b.ewt[:n]
	gam, rl1 := T(b.gamma), T(b.rl1)
	// An iterative solver takes the current γ in its products (CVODE's
	// cvLsATimes); a direct one keeps M of γ̄, and its correction is
	// scaled by 2/(1 + γ/γ̄) (CVODE's scalesol).
	scale := T(1)
	iterative := b.ls.shift(b.gamma)
	if !iterative && b.gamrat != 1 {
		scale = T(2 / (1 + b.gamrat))
	}
	tol := bdfEpLin * b.tq[4]
	var delp float64
	for m := 0; ; m++ {
		// The residual's negative, γF − (z[1]/l[1] + acor).
		small := false
		if m == 0 {
			var s float64
			for i := range del {
				d := gam*f[i] - rl1*z1[i]
				del[i] = d
				r := float64(d) * ewt[i]
				s += r * r
			}
			// At the first iteration, CVODE's cvLsSolve takes a
			// residual already below an iterative solver's tolerance
			// as the correction itself (W·b ≈ b to within it); at
			// later ones the solver returns 0 then.
			small = iterative && math.Sqrt(s*nwConv) <= tol
		} else {
			for i := range del {
				del[i] = gam*f[i] - (rl1*z1[i] + acor[i])
			}
		}
		u := y
		if m == 0 {
			u = z0
		}
		ok := small || ls.solve(it, del, u, f, tol)
		it.stats.NewtonIters++
		if !ok && m == 0 {
			if r, isR := ls.(reducedSolver); isR && r.reduced() {
				ok = true
			}
		}
		if !ok {
			if b.stale() {
				return bdfNlsTryAgain
			}
			b.fail = bdfLinSysBad
			return bdfNlsFail
		}
		// acor += scale·del and y = z[0] + acor, with ‖scale·del‖ and ‖acor‖.
		var sd, sa float64
		if m == 0 {
			for i, d := range del {
				d *= scale
				acor[i] = d
				y[i] = z0[i] + d
				r := float64(d) * ewt[i]
				sd += r * r
			}
			sa = sd
		} else {
			for i, d := range del {
				d *= scale
				a := acor[i] + d
				acor[i] = a
				y[i] = z0[i] + a
				w := ewt[i]
				r, s := float64(d)*w, float64(a)*w
				sd += r * r
				sa += s * s
			}
		}
		dn := math.Sqrt(sd * nwConv)
		if m > 0 {
			b.crate = max(bdfCrDown*b.crate, dn/delp)
		}
		if dcon := dn * min(1, b.crate) / b.tq[4]; dcon <= 1 {
			b.acnrm = math.Sqrt(sa * b.nw)
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
		if c := firstNonFinite(b.stateF(it, f, y, tn)); c >= 0 {
			if b.stale() {
				return bdfNlsTryAgain
			}
			b.fail, b.nanComp, b.nanT = bdfFNaN, c, tn
			return bdfNlsFail
		}
	}
}

// stale reports whether a failed Newton iteration may be retried after a
// new setup: J or the preconditioner was not evaluated in this attempt,
// and there is something to set up. Without a setup (GMRES without a
// preconditioner) a retry would repeat the same iteration; CVODE's Newton
// solver has no lsetup to call then and fails at once.
func (b *bdf[T]) stale() bool { return !b.jcur && !b.noSetup }
