package ode

import (
	"fmt"
	"math"
	"slices"
)

// BDFMethod is the variable-order, variable-step backward differentiation
// formula of CVODE: orders 1 to 5 in fixed-leading-coefficient form on a
// Nordsieck array, Newton iterations on M = I − γJ, and CVODE's heuristics
// for the step size, the order, and the reuse of J and of M's
// factorisation. It is the choice for large stiff systems: a step costs
// one evaluation of F per Newton iteration, and the Jacobian and M are
// formed only every few tens of steps, so its cost per step grows with the
// linear solves, not with n³. BDF() gives the default settings; the
// zero value is the default, and a value (or a pointer to one) sets
// them:
//
//	m := ode.BDFMethod{MaxOrder: 3, Linear: ode.BandLU{}}
//
// A value is stateless and safe to share.
//
// The form is CVODE's rather than FBDF's or QNDF's (DifferentialEquations.jl)
// because its heuristics are published with their constants (Hindmarsh et
// al., "SUNDIALS: Suite of nonlinear and differential/algebraic equation
// solvers", ACM TOMS 31, 2005; the CVODE documentation's "Mathematical
// Considerations"), have decades of use behind them, and are what the
// peer benchmark runs, so that the counts of steps, Jacobians and
// factorisations can be compared one to one. The Nordsieck array also
// gives the dense output and rescales for any step size the integrator
// imposes (TStops, T1, events) at the cost of a vector scaling.
//
// The step size and the order are the method's own: the integrator asks
// it after every attempt instead of using its PI controller. FixedStep is
// not supported; InitialStep sets the first step. After an event that
// continues, the method restarts at order 1 with a new initial step.
//
// At a TStop BDF also restarts, as a CVODE user calls CVodeReInit at a
// discontinuity: a stop is where F may jump. As for every implicit
// method, the step that lands on a stop evaluates F at the stop, so F
// should take its value from the left there.
//
// Gradients: ForwardSensitivity, BacksolveAdjoint and InterpolatingAdjoint
// work with BDF. BDF takes no fixed steps, so a checkpointed adjoint
// solves each segment again with error control from its checkpoint
// instead of replaying the forward steps. The dense output that the
// adjoints read is stored as each step's Nordsieck array and evaluated
// where it is read.
//
// A step that fails CVODE's error test 7 times ends the solve with
// ErrorTestFailed, one whose Newton iteration fails 10 times with
// ConvergenceFailed (TestBDFGivesUp).
//
// TestBDFStepsLikeCVODE holds BDF to CVODE 6.4's steps, orders and
// counts on Robertson's problem. NewtonFails counts the steps retried
// after Newton's iteration failed; CVODE's count of convergence failures
// also includes those a fresh Jacobian recovered.
//
// The error test and Newton's convergence test use CVODE's weights
// 1/(atol + rtol·|y_n|) at the start of each step. Stats counts steps,
// evaluations of F (including those of difference-quotient Jacobians),
// Jacobians (JacEvals), factorisations (LUs), Newton iterations and
// failures, linear iterations and error test failures.
type BDFMethod struct {
	// MaxOrder is the highest order used, 1 to 5; 0 means 5.
	MaxOrder int
	// Linear is how the Newton iterations solve with M = I − γJ; nil
	// chooses from Problem.JacStructure, as LinearSolver describes.
	Linear LinearSolver
}

// BDF returns BDFMethod{}, the BDF method with its default settings:
// orders up to 5 and the linear solver of the problem's Jacobian
// structure.
func BDF() Method { return BDFMethod{} }

// Name returns "BDF".
func (m BDFMethod) Name() string { return "BDF" }

func (m BDFMethod) String() string {
	if m.MaxOrder == 0 && m.Linear == nil {
		return "BDF"
	}
	s := fmt.Sprintf("BDF(MaxOrder %d", m.maxOrder())
	if m.Linear != nil {
		s += ", " + m.Linear.String()
	}
	return s + ")"
}

func (m BDFMethod) maxOrder() int {
	if m.MaxOrder == 0 {
		return bdfMaxQ
	}
	return m.MaxOrder
}

func (m BDFMethod) info() methodInfo {
	return methodInfo{order: min(max(m.maxOrder(), 1), bdfMaxQ), adaptive: true, stiff: true}
}

// CVODE's constants (cvode_impl.h, cvode_ls.c), by their CVODE names.
const (
	bdfMaxQ     = 5     // BDF_Q_MAX
	bdfMaxCor   = 3     // NLS_MAXCOR: Newton iterations per attempt
	bdfCrDown   = 0.3   // CRDOWN: the convergence rate's memory
	bdfRDiv     = 2.0   // RDIV: divergence when a correction grows this much
	bdfNlsCoef  = 0.1   // CORTES: Newton's tolerance relative to the error test
	bdfDGMax    = 0.3   // DGMAX_LSETUP: refactor when |γ/γ̄ − 1| exceeds this
	bdfMSBP     = 20    // MSBP: steps between factorisations
	bdfMSBJ     = 51    // CVLS_MSBJ: steps between Jacobians
	bdfDGMaxJ   = 0.2   // CVLS_DGMAX: a failure with γ this close to γ̄ blames J
	bdfEpLin    = 0.05  // CVLS_EPLIN: the linear tolerance relative to Newton's
	bdfEtaCF    = 0.25  // ETA_CF: the step ratio after a convergence failure
	bdfEtaMin   = 0.1   // ETA_MIN_EF: the smallest ratio after an error test failure
	bdfEtaMaxEF = 0.2   // ETA_MAX_EF: the largest after SMALL_NEF failures
	bdfEtaMaxFS = 1e4   // ETA_MAX_FS: the largest growth after the first step
	bdfEtaMax   = 10.0  // ETA_MAX_ES, ETA_MAX_GS: after the others
	bdfEtaFix   = 1.5   // ETA_MAX_FX: a growth below this keeps h
	bdfBias1    = 6.0   // BIAS1: the error at order q−1
	bdfBias2    = 6.0   // BIAS2: at order q
	bdfBias3    = 10.0  // BIAS3: at order q+1
	bdfAddon    = 1e-6  // ADDON
	bdfMaxNef1  = 3     // MXNEF1: error test failures before the order drops
	bdfMaxNef   = 7     // MXNEF: error test failures on one step before the solve ends
	bdfMaxNcf   = 10    // MXNCF: Newton failures on one step before the solve ends
	bdfSmallNef = 2     // SMALL_NEF
	bdfLongWait = 10    // LONG_WAIT: steps at order 1 after a reload
	bdfHubFact  = 0.1   // HUB_FACTOR of the initial step
	bdfHlbFact  = 100.0 // HLB_FACTOR
	bdfHBias    = 0.5   // H_BIAS
	bdfHinIters = 4     // MAX_ITERS of the initial step
	bdfHMinFact = 2.0   // h0 ≥ this many of the integrator's smallest steps (flatkit's own)
	bdfConvFail = 1e300 // what attempt returns for a Newton failure: reject, shrink, go on
)

// Why the last attempt failed, for retryStep and failure.
const (
	bdfOK        = iota
	bdfErrTest   // the local error test
	bdfNewton    // Newton's iteration did not converge
	bdfFNaN      // F was not finite at an iterate
	bdfLinSysBad // the Jacobian, the factorisation or the linear solve failed
)

// The state of Newton's iteration across attempts, CVODE's nflag.
const (
	bdfFirstCall = iota
	bdfPrevConvFail
	bdfPrevErrFail
)

// bdf is the stepper of BDFMethod. Its Nordsieck array z holds, at the
// last accepted point t_n, z[j] = hs^j·y⁽ʲ⁾(t_n)/j! of the interpolating
// polynomial of order q, with hs = hscale. An attempt rescales it to the
// step it is given, predicts, corrects by Newton's iteration and tests the
// error; a rejected attempt restores it. Completing a step adds the
// correction and chooses the next step size and order.
type bdf[T Float] struct {
	n, qmax int
	ls      linSys[T]

	z       [bdfMaxQ + 1][]T // the Nordsieck array, columns 0…q used
	acor    []T              // the correction y − z[0] of the attempt
	acorOld []T              // a correction kept for an order increase (CVODE's zn[qmax])
	f       []T              // F at the Newton iterate
	del     []T              // Newton's residual, then its correction
	tmp     []T              // scratch (the initial step)
	ewt     []float64        // error weights 1/(atol + rtol·|y|) at t_n; 0 for a component left out
	nw      float64          // 1/(the number of weighted components)

	q, qprime, qwait int
	hscale           float64 // the step z is scaled to
	hprime           float64 // the next step size chosen
	etamax           float64 // the largest growth of h after this step
	tau              [bdfMaxQ + 3]float64
	l, tq            [bdfMaxQ + 2]float64 // the corrector's polynomial and the test quantities
	rl1, gamma       float64              // 1/l[1] and γ = h/l[1]
	gammap, gamrat   float64              // γ of the factored M, and γ/γ̄
	crate            float64              // Newton's convergence rate estimate
	acnrm, dsm       float64              // ‖acor‖ and the error estimate of the attempt
	savedTq5         float64

	nst, nstlp, nstlj int  // steps since start, and at the last factorisation and Jacobian
	jcur              bool // J was evaluated in this attempt
	jOK               bool // J has been evaluated since start
	noSetup           bool // the linear solver has nothing to set up (setupFreeSolver)
	nef               int  // error test failures of this step
	ncf               int  // Newton failures of this step
	errComp           int  // the component of the largest weighted error, after bdfMaxNef failures
	nflag             int  // bdfFirstCall, bdfPrevConvFail, bdfPrevErrFail
	pending           bool // an attempt passed and its step is not completed yet
	fail              int  // why the last attempt failed
	nanComp           int  // the first non-finite component of F, with bdfFNaN
	nanT              float64

	stg *bdfStagger[T] // the staggered corrector of forward sensitivities, else nil
}

func newBDF[T Float](m BDFMethod, prob *Problem[T], adaptive bool) (*bdf[T], error) {
	if m.MaxOrder < 0 || m.MaxOrder > bdfMaxQ {
		return nil, errorf("BDF: MaxOrder = %d, want 1 to %d (0 means %d)", m.MaxOrder, bdfMaxQ, bdfMaxQ)
	}
	if !adaptive {
		return nil, errorf("BDF chooses its own steps and orders and takes no fixed steps (FixedStep); InitialStep sets the first step")
	}
	ls, err := newLinSys(prob, m.Linear)
	if err != nil {
		return nil, err
	}
	n := len(prob.U0)
	qmax := m.maxOrder()
	b := &bdf[T]{n: n, qmax: qmax, ls: ls}
	if f, ok := ls.(setupFreeSolver); ok {
		b.noSetup = f.setupFree()
	}
	buf := padded[T]((qmax + 6) * n)
	for j := 0; j <= qmax; j++ {
		b.z[j] = buf[j*n : (j+1)*n : (j+1)*n]
	}
	vec := func(k int) []T { return buf[(qmax+1+k)*n : (qmax+2+k)*n : (qmax+2+k)*n] }
	b.acor, b.acorOld, b.f, b.del, b.tmp = vec(0), vec(1), vec(2), vec(3), vec(4)
	b.ewt = make([]float64, n)
	return b, nil
}

func (b *bdf[T]) degree() int { return b.qmax }

// start evaluates F at (it.t, it.u) into z[1] and restarts at order 1,
// with z scaled to a step of 1.
func (b *bdf[T]) start(it *Integrator[T]) []T {
	it.prob.F(b.z[1], it.u, it.prob.P, it.t)
	it.stats.FEvals++
	copy(b.z[0], it.u)
	b.setWeights(it, it.u)
	b.q, b.qprime, b.qwait = 1, 1, 2
	b.hscale, b.hprime = 1, 0
	b.etamax = bdfEtaMaxFS
	b.tau = [bdfMaxQ + 3]float64{}
	b.savedTq5 = 0
	b.gammap, b.gamrat, b.crate = 0, 1, 1
	b.nst, b.nstlp, b.nstlj = 0, 0, 0
	b.jcur, b.jOK = false, false
	b.nef, b.ncf, b.nflag, b.pending, b.fail = 0, 0, bdfFirstCall, false, bdfOK
	return b.z[1]
}

// setWeights sets the error weights from the state y.
func (b *bdf[T]) setWeights(it *Integrator[T], y []T) {
	o := &it.o
	ewt := b.ewt[:len(y)]
	if !o.perComponent() {
		atol, rtol := o.atol, o.rtol
		for i, v := range y {
			ewt[i] = 1 / (atol + rtol*math.Abs(float64(v)))
		}
		b.nw = 1 / float64(len(y))
		return
	}
	atolv, rtolv := o.atolv[:len(y)], o.rtolv[:len(y)]
	k := 0
	for i, v := range y {
		if atolv[i] <= math.MaxFloat64 {
			ewt[i] = 1 / (atolv[i] + rtolv[i]*math.Abs(float64(v)))
			k++
		} else {
			ewt[i] = 0
		}
	}
	b.nw = 1 / float64(max(k, 1))
}

// attempt takes a trial step of size h from t_n: it rescales z to h,
// predicts, solves the corrector equation by Newton's iteration and tests
// the local error. It returns the squared error estimate; bdfConvFail when
// Newton's iteration did not converge; +Inf when F, the Jacobian or the
// linear algebra failed. A rejected attempt leaves z as it was, scaled to
// h.
func (b *bdf[T]) attempt(it *Integrator[T], h float64) float64 {
	b.fail = bdfOK
	b.pending = false
	if b.qprime != b.q {
		if it.h != 0 {
			it.ensurePoly() // the last step's polynomial, before its array changes order
		}
		b.adjustOrder(b.qprime - b.q)
		b.q = b.qprime
		b.qwait = b.q + 1
	}
	b.predict(h / b.hscale)
	b.hscale = h
	b.setCoefficients(h)
	tn := it.t + h
	if !b.nls(it, tn, h) {
		b.restore()
		b.nflag = bdfPrevConvFail
		b.etamax = 1
		b.ncf++
		it.stats.NewtonFails++
		if b.fail == bdfNewton {
			return bdfConvFail
		}
		return math.Inf(1)
	}
	b.dsm = b.acnrm * b.tq[2]
	if b.dsm > 1 {
		b.restore()
		b.fail = bdfErrTest
		b.nef++
		if b.nef >= bdfMaxNef {
			b.errComp = b.largestError()
		}
		b.nflag = bdfPrevErrFail
		b.etamax = 1
		it.stats.ErrTestFails++
		return b.dsm * b.dsm
	}
	b.pending = true
	return b.dsm * b.dsm
}

// accept completes the accepted step.
func (b *bdf[T]) accept(it *Integrator[T], h float64) { b.complete(it) }

// failure reports why the attempts failed: a non-finite F, or the linear
// system's own failure.
func (b *bdf[T]) failure() (Retcode, int, error) {
	switch b.fail {
	case bdfLinSysBad:
		return b.ls.failure()
	case bdfFNaN:
		return NonFinite, b.nanComp, fmt.Errorf("F has a NaN or Inf in component %d (a Newton iterate of BDF, at t=%.17g)", b.nanComp, b.nanT)
	}
	return Unfinished, -1, nil
}

// gaveUp ends the solve after too many failures on one step, as CVODE
// does: bdfMaxNef error test failures (CV_ERR_FAILURE), or bdfMaxNcf
// failures of Newton's iteration (CV_CONV_FAILURE). By then h has shrunk
// by at least 10⁶; going on would only end in DtUnderflow, which blames
// the solution or the tolerance rather than what is more often wrong: a
// Jacobian or a structure that does not match F, or a discontinuity.
func (b *bdf[T]) gaveUp() (Retcode, int, error) {
	switch {
	case b.fail == bdfErrTest && b.nef >= bdfMaxNef:
		return ErrorTestFailed, b.errComp, fmt.Errorf("BDF's error test failed %d times on one step (the largest weighted error in component %d)", b.nef, b.errComp)
	case b.fail == bdfNewton && b.ncf >= bdfMaxNcf:
		return ConvergenceFailed, -1, fmt.Errorf("BDF's Newton iteration failed %d times on one step", b.ncf)
	}
	return Unfinished, -1, nil
}

// largestError returns the component of the largest weighted correction
// |acor_i|·w_i, the local error estimate's largest term.
func (b *bdf[T]) largestError() int {
	k, m := -1, -1.0
	for i, a := range b.acor[:b.n] {
		if e := math.Abs(float64(a)) * b.ewt[i]; e > m {
			k, m = i, e
		}
	}
	return k
}

// dense writes the step's polynomial in θ: with s = θ − 1, the Nordsieck
// array gives y(t_n + s·h) = Σ_j z_j s^j, expanded here in powers of θ. The
// constant term is then set to it.uPrev, the linear one adjusted to keep
// the value at θ = 1, so the output is continuous from step to step. A
// rejected attempt since may have rescaled z to another step size (an
// attempt that changes the order computes the polynomial first).
func (b *bdf[T]) dense(it *Integrator[T], poly []T) {
	n, q := b.n, b.q
	clear(poly[(q+1)*n : (b.qmax+1)*n])
	r := it.h / b.hscale // z_j is scaled by hscale^j; the step by it.h^j
	// c[k][j] = C(j, k)·(−1)^(j−k)·r^j, the coefficient of z_j in θ^k.
	var c [bdfMaxQ + 1][bdfMaxQ + 1]T
	rj := 1.0
	for j := 0; j <= q; j++ {
		bin := 1.0 // C(j, k)
		for k := 0; k <= j; k++ {
			v := bin * rj
			if (j-k)&1 == 1 {
				v = -v
			}
			c[k][j] = T(v)
			bin = bin * float64(j-k) / float64(k+1)
		}
		rj *= r
	}
	up := it.uPrev[:n]
	var zi [bdfMaxQ + 1]T
	for i := 0; i < n; i++ {
		for j := 0; j <= q; j++ {
			zi[j] = b.z[j][i]
		}
		for k := 0; k <= q; k++ {
			var a T
			for j := k; j <= q; j++ {
				a += c[k][j] * zi[j]
			}
			poly[k*n+i] = a
		}
		d := up[i] - poly[i]
		poly[i] = up[i]
		poly[n+i] -= d
	}
}

// appendDense appends the step's dense output to c as its Nordsieck
// array: with s = θ − 1 and σ = s·r, r = h/hscale,
//
//	u(t_n + s·h) = Σ_j z_j σ^j − d·σ/r,  d = it.uPrev − Σ_j z_j (−r)^j,
//
// the polynomial of dense, continuous from step to step, with d folded
// into the linear term. That is a copy of q+1 vectors and one evaluation
// at θ = 0, where dense's change to powers of θ costs O(q²) per
// component; the gradients' forward passes store every step this way.
func (b *bdf[T]) appendDense(it *Integrator[T], c []T) ([]T, nordStep) {
	n, q := b.n, b.q
	r := it.h / b.hscale
	off := len(c)
	c = slices.Grow(c, (q+1)*n)[:off+(q+1)*n]
	w := c[off:]
	for j := 0; j <= q; j++ {
		copy(w[j*n:(j+1)*n], b.z[j][:n])
	}
	σ0, ir := T(-r), T(1/r)
	up, w1 := it.uPrev[:n], w[n:2*n]
	for i := range up {
		a := w[q*n+i]
		for j := q - 1; j >= 0; j-- {
			a = a*σ0 + w[j*n+i]
		}
		w1[i] -= (up[i] - a) * ir
	}
	return c, nordStep{off: off, q: q, r: r}
}
