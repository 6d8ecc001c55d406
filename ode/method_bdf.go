package ode

import (
	"fmt"
	"math"
)

// BDFMethod is the variable-order, variable-step backward differentiation
// formula of CVODE: orders 1 to 5 in fixed-leading-coefficient form on a
// Nordsieck array, Newton iterations on M = I − γJ, and CVODE's heuristics
// for the step size, the order, and the reuse of J and of M's
// factorisation. It is the choice for large stiff systems: a step costs
// one evaluation of F per Newton iteration, and the Jacobian and M are
// formed only every few tens of steps, so its cost per step grows with the
// linear solves, not with n³. BDF() gives the default settings.
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
// without checkpoints work with BDF. With checkpoints the adjoint replays
// the forward steps as fixed steps, which BDF does not take.
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

// BDF returns the BDF method with its default settings: orders up to 5
// and the linear solver of the problem's Jacobian structure.
func BDF() *BDFMethod { return &BDFMethod{} }

// Name returns "BDF".
func (m *BDFMethod) Name() string { return "BDF" }

func (m *BDFMethod) String() string {
	if m == nil || (m.MaxOrder == 0 && m.Linear == nil) {
		return "BDF"
	}
	s := fmt.Sprintf("BDF(MaxOrder %d", m.maxOrder())
	if m.Linear != nil {
		s += ", " + m.Linear.String()
	}
	return s + ")"
}

func (m *BDFMethod) maxOrder() int {
	if m == nil || m.MaxOrder == 0 {
		return bdfMaxQ
	}
	return m.MaxOrder
}

func (m *BDFMethod) info() methodInfo {
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
	bdfSmallNef = 2     // SMALL_NEF
	bdfLongWait = 10    // LONG_WAIT: steps at order 1 after a reload
	bdfHubFact  = 0.1   // HUB_FACTOR of the initial step
	bdfHlbFact  = 100.0 // HLB_FACTOR
	bdfHBias    = 0.5   // H_BIAS
	bdfHinIters = 4     // MAX_ITERS of the initial step
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
// last accepted point t_n, z[j] = hˢʲ·y⁽ʲ⁾(t_n)/j! of the interpolating
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
	nef               int  // error test failures of this step
	nflag             int  // bdfFirstCall, bdfPrevConvFail, bdfPrevErrFail
	pending           bool // an attempt passed and its step is not completed yet
	fail              int  // why the last attempt failed
	nanComp           int  // the first non-finite component of F, with bdfFNaN
	nanT              float64
}

func newBDF[T Float](m *BDFMethod, prob *Problem[T], adaptive bool) (*bdf[T], error) {
	if m.MaxOrder < 0 || m.MaxOrder > bdfMaxQ {
		return nil, errorf("BDF: MaxOrder = %d, want 1 to %d (0 means %d)", m.MaxOrder, bdfMaxQ, bdfMaxQ)
	}
	if !adaptive {
		return nil, errorf("BDF chooses its own steps and orders: FixedStep is not supported (InitialStep sets the first step)")
	}
	ls, err := newLinSys(prob, m.Linear)
	if err != nil {
		return nil, err
	}
	n := len(prob.U0)
	qmax := m.maxOrder()
	b := &bdf[T]{n: n, qmax: qmax, ls: ls}
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
	b.nef, b.nflag, b.pending, b.fail = 0, bdfFirstCall, false, bdfOK
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

// norm is the weighted RMS norm of v.
func (b *bdf[T]) norm(v []T) float64 {
	ewt := b.ewt[:len(v)]
	var s float64
	for i, x := range v {
		r := float64(x) * ewt[i]
		s += r * r
	}
	return math.Sqrt(s * b.nw)
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

// nextStep returns the size of the step after the accepted one.
func (b *bdf[T]) nextStep(it *Integrator[T], h float64) float64 {
	b.complete(it)
	return b.hprime
}

// retryStep returns the size to retry after a rejected attempt of size h,
// as CVODE's cvHandleNFlag and cvDoErrorTest choose it. After more than
// three error test failures the order drops, and at order 1 the array is
// reloaded from F.
func (b *bdf[T]) retryStep(it *Integrator[T], h, e2 float64) float64 {
	if b.fail != bdfErrTest {
		return h * bdfEtaCF
	}
	if b.nef <= bdfMaxNef1 {
		eta := 1 / (math.Pow(bdfBias2*b.dsm, 1/float64(b.q+1)) + bdfAddon)
		eta = max(eta, bdfEtaMin)
		if b.nef >= bdfSmallNef {
			eta = min(eta, bdfEtaMaxEF)
		}
		return h * eta
	}
	hn := h * bdfEtaMin
	if b.q > 1 {
		b.qprime = b.q - 1
		return hn
	}
	// At order 1: reload z[1] = hn·F(t_n, y_n).
	if it.h != 0 {
		it.ensurePoly()
	}
	z1 := b.z[1]
	it.prob.F(z1, it.u, it.prob.P, it.t)
	it.stats.FEvals++
	copy(b.z[0], it.u)
	hT := T(hn)
	for i := range z1 {
		z1[i] *= hT
	}
	b.hscale = hn
	b.qwait = bdfLongWait
	return hn
}

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

// complete is CVODE's cvCompleteStep and cvPrepareNextStep: it adds the
// correction to z, updates the weights and chooses the next step size and
// order. It runs once per accepted step, from nextStep or accept,
// whichever comes first.
func (b *bdf[T]) complete(it *Integrator[T]) {
	if !b.pending {
		return
	}
	b.pending = false
	h, q := b.hscale, b.q
	b.nst++
	for i := q; i >= 2; i-- {
		b.tau[i] = b.tau[i-1]
	}
	if q == 1 && b.nst > 1 {
		b.tau[2] = b.tau[1]
	}
	b.tau[1] = h
	b.qwait--
	saveAcor := b.qwait == 1 && q != b.qmax
	consider := b.etamax != 1 && b.qwait == 0
	needQm1 := consider && q > 1
	needQp1 := consider && q != b.qmax && b.savedTq5 != 0
	cquot := 0.0
	if needQp1 {
		cquot = (b.tq[5] / b.savedTq5) * math.Pow(h/b.tau[2], float64(q+1))
	}
	ddn, dup := b.correct(it, saveAcor, needQm1, needQp1, cquot)
	if saveAcor {
		b.savedTq5 = b.tq[5]
	}
	b.prepareNext(h, ddn*b.tq[1], dup*b.tq[3], needQm1, needQp1)
	b.etamax = bdfEtaMax
	b.nef, b.nflag = 0, bdfFirstCall
}

// prepareNext chooses hprime and qprime from the error estimates at orders
// q−1, q and q+1 (ddn and dup are their weighted norms).
func (b *bdf[T]) prepareNext(h, ddn, dup float64, qm1, qp1 bool) {
	q := b.q
	if b.etamax == 1 {
		b.qwait = max(b.qwait, 2)
		b.qprime, b.hprime = q, h
		return
	}
	etaq := 1 / (math.Pow(bdfBias2*b.dsm, 1/float64(q+1)) + bdfAddon)
	eta, qn := etaq, q
	if b.qwait == 0 {
		b.qwait = 2
		etaqm1, etaqp1 := 0.0, 0.0
		if qm1 {
			etaqm1 = 1 / (math.Pow(bdfBias1*ddn, 1/float64(q)) + bdfAddon)
		}
		if qp1 {
			etaqp1 = 1 / (math.Pow(bdfBias3*dup, 1/float64(q+2)) + bdfAddon)
		}
		etam := max(etaqm1, etaq, etaqp1)
		switch {
		case etam < bdfEtaFix:
			eta, qn = 1, q
		case etam == etaq:
		case etam == etaqm1:
			eta, qn = etaqm1, q-1
		default:
			eta, qn = etaqp1, q+1
			copy(b.acorOld, b.acor) // Δ_n for the order increase
		}
	}
	if eta < bdfEtaFix {
		eta = 1
	} else {
		eta = min(eta, b.etamax)
	}
	b.qprime, b.hprime = qn, h*eta
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

// firstStep is CVODE's cvHin: the step h0 with ‖h0²·y”/2‖ ≈ 1, y” from
// a difference of F, halved, and bounded by 0.1·|T1 − t| and by the
// change of y a forward Euler step would make. It costs up to four
// evaluations of F.
func (b *bdf[T]) firstStep(it *Integrator[T], f0 []T) float64 {
	t, dir := it.t, it.dir
	tdist := math.Abs(it.t1 - t)
	tround := eps * max(math.Abs(t), math.Abs(it.t1))
	if tdist < 2*tround {
		return dir * tdist
	}
	hlb := bdfHlbFact * tround
	// The bound from |y0|/|y0'|: no component may change by more than
	// 10 % of itself plus its tolerance.
	var hubInv float64
	y := it.u
	for i, v := range f0 {
		w := b.ewt[i]
		if w == 0 {
			continue
		}
		r := math.Abs(float64(v)) / (bdfHubFact*math.Abs(float64(y[i])) + 1/w)
		hubInv = max(hubInv, r)
	}
	hub := bdfHubFact * tdist
	if hub*hubInv > 1 {
		hub = 1 / hubInv
	}
	hg := math.Sqrt(hlb * hub)
	if hub < hlb {
		return dir * hg
	}
	hnew, hs := hg, hg
	for count1 := 1; count1 <= bdfHinIters; count1++ {
		ok := false
		var ydd float64
		for count2 := 1; count2 <= bdfHinIters; count2++ {
			ydd = b.yddNorm(it, f0, dir*hg)
			if ydd <= math.MaxFloat64 {
				ok = true
				break
			}
			hg *= 0.2
		}
		if !ok {
			// F is not finite along the Euler steps tried: fall back on
			// the last size that passed, or the last one cut.
			hnew = hg
			if count1 > 2 {
				hnew = hs
			}
			break
		}
		hs = hg
		if ydd*hub*hub > 2 {
			hnew = math.Sqrt(2 / ydd)
		} else {
			hnew = math.Sqrt(hg * hub)
		}
		if count1 == bdfHinIters {
			break
		}
		hrat := hnew / hg
		if hrat > 0.5 && hrat < 2 {
			break // within a factor of 2 of the last: accepted
		}
		if count1 > 1 && hrat > 2 {
			hnew = hg // y'' seems bad: keep the last size
			break
		}
		hg = hnew
	}
	h0 := min(max(bdfHBias*hnew, hlb), hub)
	return dir * h0
}

// yddNorm is the weighted norm of (F(t+h, y + h·f0) − f0)/h.
func (b *bdf[T]) yddNorm(it *Integrator[T], f0 []T, h float64) float64 {
	y, fy := b.tmp, b.f
	hT := T(h)
	for i, v := range it.u {
		y[i] = v + hT*f0[i]
	}
	it.prob.F(fy, y, it.prob.P, it.t+h)
	it.stats.FEvals++
	inv := 1 / h
	ewt := b.ewt[:len(fy)]
	var s float64
	for i, v := range fy {
		r := float64(v-f0[i]) * inv * ewt[i]
		s += r * r
	}
	return math.Sqrt(s * b.nw)
}
