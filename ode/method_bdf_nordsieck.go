package ode

import "math"

// The Nordsieck array of BDF and the coefficients of the fixed-leading-
// coefficient form, after CVODE (cvode.c: cvPredict, cvRestore, cvRescale,
// cvSetBDF, cvSetTqBDF, cvIncreaseBDF, cvDecreaseBDF, cvCompleteStep).
// Every pass over the array is one loop over the components that reads
// and writes all the columns it needs, rather than one vector operation
// per column.

// predict rescales z by eta (column j by eta^j) and overwrites it with
// the prediction at t_n + h, P·z with P Pascal's upper triangle.
func (b *bdf[T]) predict(eta float64) {
	q := b.q
	var s [bdfMaxQ + 1]T
	s[0] = 1
	e := 1.0
	for j := 1; j <= q; j++ {
		e *= eta
		s[j] = T(e)
	}
	scale := eta != 1
	z0 := b.z[0][:b.n]
	switch q {
	case 1:
		z1 := b.z[1][:len(z0)]
		s1 := s[1]
		if scale {
			for i := range z0 {
				a1 := z1[i] * s1
				z1[i] = a1
				z0[i] += a1
			}
		} else {
			for i := range z0 {
				z0[i] += z1[i]
			}
		}
		return
	case 2:
		z1, z2 := b.z[1][:len(z0)], b.z[2][:len(z0)]
		s1, s2 := s[1], s[2]
		for i := range z0 {
			a1, a2 := z1[i]*s1, z2[i]*s2
			a1 += a2
			z0[i] += a1
			z1[i] = a1 + a2
			z2[i] = a2
		}
		return
	case 3:
		z1, z2, z3 := b.z[1][:len(z0)], b.z[2][:len(z0)], b.z[3][:len(z0)]
		s1, s2, s3 := s[1], s[2], s[3]
		for i := range z0 {
			a0, a1, a2, a3 := z0[i], z1[i]*s1, z2[i]*s2, z3[i]*s3
			a2 += a3
			a1 += a2
			a0 += a1
			a2 += a3
			a1 += a2
			a2 += a3
			z0[i], z1[i], z2[i], z3[i] = a0, a1, a2, a3
		}
		return
	}
	// Orders 4 and 5.
	z1, z2, z3, z4 := b.z[1][:len(z0)], b.z[2][:len(z0)], b.z[3][:len(z0)], b.z[4][:len(z0)]
	s1, s2, s3, s4, s5 := s[1], s[2], s[3], s[4], s[5]
	if q == 4 {
		for i := range z0 {
			a0, a1, a2, a3, a4 := z0[i], z1[i]*s1, z2[i]*s2, z3[i]*s3, z4[i]*s4
			a3 += a4
			a2 += a3
			a1 += a2
			a0 += a1
			a3 += a4
			a2 += a3
			a1 += a2
			a3 += a4
			a2 += a3
			a3 += a4
			z0[i], z1[i], z2[i], z3[i], z4[i] = a0, a1, a2, a3, a4
		}
		return
	}
	z5 := b.z[5][:len(z0)]
	for i := range z0 {
		a0, a1, a2, a3, a4, a5 := z0[i], z1[i]*s1, z2[i]*s2, z3[i]*s3, z4[i]*s4, z5[i]*s5
		a4 += a5
		a3 += a4
		a2 += a3
		a1 += a2
		a0 += a1
		a4 += a5
		a3 += a4
		a2 += a3
		a1 += a2
		a4 += a5
		a3 += a4
		a2 += a3
		a4 += a5
		a3 += a4
		a4 += a5
		z0[i], z1[i], z2[i], z3[i], z4[i], z5[i] = a0, a1, a2, a3, a4, a5
	}
}

// restore undoes predict's prediction (not its rescaling).
func (b *bdf[T]) restore() {
	q := b.q
	z0 := b.z[0][:b.n]
	if q == 1 {
		z1 := b.z[1][:len(z0)]
		for i := range z0 {
			z0[i] -= z1[i]
		}
		return
	}
	var a [bdfMaxQ + 1]T
	for i := range z0 {
		for j := 0; j <= q; j++ {
			a[j] = b.z[j][i]
		}
		for k := 1; k <= q; k++ {
			for j := q; j >= k; j-- {
				a[j-1] -= a[j]
			}
		}
		for j := 0; j < q; j++ {
			b.z[j][i] = a[j]
		}
	}
}

// setCoefficients sets l, the coefficients of the corrector's polynomial
//
//	Λ(x) = (1 + x/ξ*_q) · Π_{i=1}^{q−1} (1 + x/ξ_i),  ξ_i = (t_n − t_{n−i})/h,
//
// the test quantities tq (tq[2] turns ‖acor‖ into the local error
// estimate, tq[1] and tq[3] those at orders q−1 and q+1, tq[4] is Newton's
// tolerance, tq[5] serves the next order increase), and γ = h/l[1].
func (b *bdf[T]) setCoefficients(h float64) {
	q := b.q
	l := &b.l
	for i := range l {
		l[i] = 0
	}
	l[0], l[1] = 1, 1
	xiInv, xistarInv := 1.0, 1.0
	alpha0, alpha0Hat := -1.0, -1.0
	hsum := h
	if q > 1 {
		for j := 2; j < q; j++ {
			hsum += b.tau[j-1]
			xiInv = h / hsum
			alpha0 -= 1 / float64(j)
			for i := j; i >= 1; i-- {
				l[i] += l[i-1] * xiInv
			}
		}
		alpha0 -= 1 / float64(q)
		xistarInv = -l[1] - alpha0
		hsum += b.tau[q-1]
		xiInv = h / hsum
		alpha0Hat = -l[1] - xiInv
		for i := q; i >= 1; i-- {
			l[i] += l[i-1] * xistarInv
		}
	}
	// The test quantities (cvSetTqBDF).
	tq := &b.tq
	fq := float64(q)
	a1 := 1 - alpha0Hat + alpha0
	a2 := 1 + fq*a1
	tq[2] = math.Abs(a1 / (alpha0 * a2))
	tq[5] = math.Abs(a2 * xistarInv / (l[q] * xiInv))
	if b.qwait == 1 {
		if q > 1 {
			c := xistarInv / l[q]
			a3 := alpha0 + 1/fq
			a4 := alpha0Hat + xiInv
			cpInv := (1 - a4 + a3) / a3
			tq[1] = math.Abs(c * cpInv)
		} else {
			tq[1] = 1
		}
		hsum += b.tau[q]
		xiInv = h / hsum
		a5 := alpha0 - 1/(fq+1)
		a6 := alpha0Hat - xiInv
		cppInv := (1 - a6 + a5) / a2
		tq[3] = math.Abs(cppInv / (xiInv * (fq + 2) * a5))
	}
	tq[4] = bdfNlsCoef / tq[2]
	b.rl1 = 1 / l[1]
	b.gamma = h * b.rl1
	if b.nst == 0 {
		b.gammap = b.gamma
	}
	b.gamrat = 1
	if b.nst > 0 {
		b.gamrat = b.gamma / b.gammap
	}
}

// adjustOrder changes the order of z by dq = ±1 (cvAdjustOrder): the new
// or the dropped column is folded into the others along the polynomial
// x²·(x + ξ_1)···(x + ξ_j) of the past steps.
func (b *bdf[T]) adjustOrder(dq int) {
	q := b.q
	var l [bdfMaxQ + 2]float64
	switch dq {
	case 1:
		l[2] = 1
		alpha0, alpha1, prod, xiold := -1.0, 1.0, 1.0, 1.0
		hsum := b.hscale
		for j := 1; j < q; j++ {
			hsum += b.tau[j+1]
			xi := hsum / b.hscale
			prod *= xi
			alpha0 -= 1 / float64(j+1)
			alpha1 += 1 / xi
			for i := j + 2; i >= 2; i-- {
				l[i] = l[i]*xiold + l[i-1]
			}
			xiold = xi
		}
		a1 := T((-alpha0 - alpha1) / prod)
		zL := b.z[q+1][:b.n]
		old := b.acorOld[:len(zL)]
		for i := range zL {
			zL[i] = a1 * old[i]
		}
		for j := 2; j <= q; j++ {
			axpy(b.z[j], zL, T(l[j]))
		}
	case -1:
		if q == 2 {
			return
		}
		l[2] = 1
		hsum := 0.0
		for j := 1; j <= q-2; j++ {
			hsum += b.tau[j]
			xi := hsum / b.hscale
			for i := j + 2; i >= 2; i-- {
				l[i] = l[i]*xi + l[i-1]
			}
		}
		zq := b.z[q]
		for j := 2; j < q; j++ {
			axpy(b.z[j], zq, T(-l[j]))
		}
	}
}

// axpy adds a·x into y.
func axpy[T Float](y, x []T, a T) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// correct adds l[j]·acor to column j of z, sets the weights from the new
// y_n = z[0], and in the same pass saves acor for an order increase and
// computes, with the old weights, ‖z[q]‖ (ddn) and ‖acor − cquot·acorOld‖
// (dup) when the order selection wants them.
func (b *bdf[T]) correct(it *Integrator[T], saveAcor, wantDdn, wantDup bool, cquot float64) (ddn, dup float64) {
	q, n := b.q, b.n
	acor := b.acor[:n]
	ewt := b.ewt[:n]
	var lT [bdfMaxQ + 1]T
	var zs [bdfMaxQ + 1][]T
	for j := 0; j <= q; j++ {
		lT[j] = T(b.l[j])
		zs[j] = b.z[j][:n]
	}
	z0, zq, old := zs[0], zs[q], b.acorOld[:n]
	norms := wantDdn || wantDup
	cq, lq := T(cquot), lT[q]
	scalar := !it.o.perComponent()
	atol, rtol := it.o.atol, it.o.rtol
	var sq, sp float64
	for i, a := range acor {
		if norms {
			w := ewt[i]
			r := float64(zq[i]+lq*a) * w
			sq += r * r
			d := float64(a-cq*old[i]) * w
			sp += d * d
		}
		for j := 1; j <= q; j++ {
			zs[j][i] += lT[j] * a
		}
		y := z0[i] + a // l[0] = 1
		z0[i] = y
		if scalar {
			ewt[i] = 1 / (atol + rtol*math.Abs(float64(y)))
		}
	}
	if norms {
		ddn, dup = math.Sqrt(sq*b.nw), math.Sqrt(sp*b.nw)
	}
	if saveAcor {
		copy(old, acor)
	}
	if !scalar {
		b.setWeights(it, z0)
	}
	return ddn, dup
}
