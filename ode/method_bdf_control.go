package ode

import "math"

// BDF's choice of step size and order, after CVODE (cvode.c: cvHin,
// cvHandleNFlag, cvDoErrorTest, cvCompleteStep, cvPrepareNextStep,
// cvChooseEta, cvSetEta). The integrator asks for the sizes through
// stepChooser; the orders are the stepper's own.

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
	b.nef, b.ncf, b.nflag = 0, 0, bdfFirstCall
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

// firstStep is CVODE's cvHin: the step h0 whose second-order Taylor term
// h0²·‖y⁽²⁾‖/2 is about 1, with y⁽²⁾ from a difference of F, halved, and
// bounded by 0.1·|T1 − t| and by the change of y a forward Euler step
// would make. It costs up to four evaluations of F.
//
// The Euler bound lets no component change by more than its tolerance
// plus a tenth of itself, so a component that is 0 and moving (a height
// right after an impact, an adjoint right after a save time's jump) bounds
// h0 by atol/|y'|. At tight tolerances that falls below the lower bound
// 100ε·max(|t|, |T1|); CVODE then takes the geometric mean of the two
// bounds, which can fall below the 16ε|t| under which the integrator ends
// the solve with DtUnderflow (CVODE itself has no such floor). BDF takes
// at least twice that floor there (TestBDFTightTolerances).
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
		// CVODE takes the geometric mean, which can be below the
		// smallest step the integrator takes (16ε|t|, see step).
		return dir * max(hg, bdfHMinFact*16*eps*math.Abs(t))
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
