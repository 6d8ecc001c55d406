package ode

// The second derivatives HvSolver takes by central differences when the
// problem or the loss does not give them, and the dense Jacobians of its
// augmented systems for the stiff methods.

// hvDiff is the scratch of the differences: the perturbed states, the
// gradients at them and a private copy of the parameters.
type hvDiff[T Float] struct {
	up, um, ga, gb []T // n
	pa, pb         []T // np
	pp             []float32
	w              []T // the cotangent of the VJP being differenced
	ce             float64
	pr             float64 // the relative parameter step of paramDiff
	// Saved's whole-trajectory differences, sized on first use.
	sp, sm, dp, dm []T
	usp, usm       [][]T
	dlp, dlm       [][]T
}

func (d *hvDiff[T]) init(n, np int) {
	buf := make([]T, 4*n+2*np)
	d.up, d.um, d.ga, d.gb = buf[:n:n], buf[n:2*n:2*n], buf[2*n:3*n:3*n], buf[3*n:4*n:4*n]
	d.pa, d.pb = buf[4*n:4*n+np:4*n+np], buf[4*n+np:]
	d.pp = make([]float32, np)
	d.ce = cbrtEps[T]()
	d.pr = cbrtEps32
	if d.ce < cbrtEps32/100 { // float64 states: see paramDiff
		d.pr = 0x1p-10
	}
}

// dir adds into hu and hp the derivative of g's two results along (ud, pd)
// at (u, p): one central difference along ud, with finiteDiffJVP's step,
// and one per non-zero pd_k in float32, with pStep's. g adds its results
// into its first two arguments.
func (d *hvDiff[T]) dir(hu, hp []T, g func(gu, gp, u []T, p []float32, t float64), u, ud []T, p []float32, pd []T, t float64) {
	if vn := normInf(ud); vn > 0 {
		h := d.ce * max(1, normInf(u))
		s := T(h / vn)
		for i, x := range u {
			d.up[i], d.um[i] = x+s*ud[i], x-s*ud[i]
		}
		d.eval(g, d.up, d.um, p, p, t)
		d.accumulate(hu, hp, T(vn/(2*h)))
	}
	if pd == nil {
		return
	}
	copy(d.pp, p)
	for k, x := range pd {
		if x == 0 {
			continue
		}
		hi, lo, step := pStep(p[k])
		clear(d.ga)
		clear(d.pa)
		d.pp[k] = hi
		g(d.ga, d.pa, u, d.pp, t)
		clear(d.gb)
		clear(d.pb)
		d.pp[k] = lo
		g(d.gb, d.pb, u, d.pp, t)
		d.pp[k] = p[k]
		d.accumulate(hu, hp, T(float64(x)/step))
	}
}

// eval runs g at (ua, pa) into ga, pa and at (ub, pb) into gb, pb.
func (d *hvDiff[T]) eval(g func(gu, gp, u []T, p []float32, t float64), ua, ub []T, p1, p2 []float32, t float64) {
	clear(d.ga)
	clear(d.pa)
	g(d.ga, d.pa, ua, p1, t)
	clear(d.gb)
	clear(d.pb)
	g(d.gb, d.pb, ub, p2, t)
}

// accumulate adds c·(ga − gb) into hu and c·(pa − pb) into hp.
func (d *hvDiff[T]) accumulate(hu, hp []T, c T) {
	for i := range hu {
		hu[i] += (d.ga[i] - d.gb[i]) * c
	}
	for k := range hp {
		hp[k] += (d.pa[k] - d.pb[k]) * c
	}
}

// diffVJPJVP is Problem.VJPJVP from the problem's VJP: the product at w,
// the exact wd part (the VJP is linear in w), and the derivative along
// (ud, pd) by differences.
func (hs *HvSolver[T]) diffVJPJVP(gu, gp, hu, hp, w, wd, u, ud []T, p []float32, pd []T, t float64) {
	vjp := hs.gs.prob.VJP
	vjp(gu, gp, w, u, p, t)
	if normInf(wd) > 0 {
		vjp(hu, hp, wd, u, p, t)
	}
	hs.fd.w = w
	hs.fd.dir(hu, hp, hs.vjpAtW, u, ud, p, pd, t)
	hs.fd.w = nil
}

// vjpAtW is the VJP at hs.fd.w, as a function of (u, p), for diffVJPJVP.
func (hs *HvSolver[T]) vjpAtW(gu, gp, u []T, p []float32, t float64) {
	hs.gs.prob.VJP(gu, gp, hs.fd.w, u, p, t)
}

// runningGrad is the loss's RunningGradient, for diffRunningHv.
func (hs *HvSolver[T]) runningGrad(gu, gp, u []T, p []float32, t float64) {
	hs.gs.loss.RunningGradient(gu, gp, u, p, t)
}

// diffRunningHv is HvLoss.RunningHv by differences of RunningGradient.
func (hs *HvSolver[T]) diffRunningHv(hu, hp, u, ud []T, p []float32, pd []T, t float64) {
	hs.fd.dir(hu, hp, hs.runningGrad, u, ud, p, pd, t)
}

// diffPointHv is HvLoss.PointHv by a central difference of Point's
// gradient along ud.
func (hs *HvSolver[T]) diffPointHv(i int, t float64, u, ud, hv []T) {
	hs.diffGradHv(i, t, u, ud, hv)
}

// diffEndHv is HvLoss.EndHv by a central difference of End's dL/du along
// ud.
func (hs *HvSolver[T]) diffEndHv(t float64, u, ud, hv []T) {
	hs.diffGradHv(-1, t, u, ud, hv)
}

// diffGradHv writes into hv a central difference along ud of Point i's
// gradient at t, or of End's for i < 0.
func (hs *HvSolver[T]) diffGradHv(i int, t float64, u, ud, hv []T) {
	d := &hs.fd
	vn := normInf(ud)
	if vn == 0 {
		return
	}
	h := d.ce * max(1, normInf(u))
	s := T(h / vn)
	for j, x := range u {
		d.up[j], d.um[j] = x+s*ud[j], x-s*ud[j]
	}
	hs.lossGrad(i, t, d.up, d.ga)
	hs.lossGrad(i, t, d.um, d.gb)
	c := T(vn / (2 * h))
	for j := range hv {
		hv[j] = (d.ga[j] - d.gb[j]) * c
	}
}

// lossGrad writes into g Point i's dL/du at (t, u), or End's for i < 0.
func (hs *HvSolver[T]) lossGrad(i int, t float64, u, g []T) {
	clear(g)
	if i < 0 {
		hs.gs.loss.End(t, u, g)
		return
	}
	hs.gs.loss.Point(i, t, u, g)
}

// diffSavedHv is HvLoss.SavedHv by a central difference of Saved's
// gradient along all the uds at once.
func (hs *HvSolver[T]) diffSavedHv(ts []float64, us, uds, hvs [][]T) {
	d := &hs.fd
	k, n := len(us), hs.n
	if len(d.usp) != k {
		d.sp, d.sm, d.dp, d.dm = make([]T, k*n), make([]T, k*n), make([]T, k*n), make([]T, k*n)
		d.usp, d.usm, d.dlp, d.dlm = make([][]T, k), make([][]T, k), make([][]T, k), make([][]T, k)
		for i := range k {
			r := func(b []T) []T { return b[i*n : (i+1)*n : (i+1)*n] }
			d.usp[i], d.usm[i], d.dlp[i], d.dlm[i] = r(d.sp), r(d.sm), r(d.dp), r(d.dm)
		}
	}
	var vn, un float64
	for i := range us {
		vn, un = max(vn, normInf(uds[i])), max(un, normInf(us[i]))
	}
	if vn == 0 {
		return
	}
	h := d.ce * max(1, un)
	s := T(h / vn)
	for i := range us {
		for j, x := range us[i] {
			d.usp[i][j], d.usm[i][j] = x+s*uds[i][j], x-s*uds[i][j]
		}
	}
	clear(d.dp)
	clear(d.dm)
	saved := hs.gs.loss.Saved
	saved(ts, d.usp, d.dlp)
	saved(ts, d.usm, d.dlm)
	c := T(vn / (2 * h))
	for i := range hvs {
		for j := range hvs[i] {
			hvs[i][j] = (d.dlp[i][j] - d.dlm[i][j]) * c
		}
	}
}

// u0Tangent adds ∂u0/∂θ·v_θ into dst by central differences of U0From,
// one pair of calls per non-zero v_θ,k.
func (hs *HvSolver[T]) u0Tangent(dst []T) {
	d, prob := &hs.fd, &hs.gs.prob
	copy(d.pp, prob.P)
	for k, x := range hs.vθ {
		if x == 0 {
			continue
		}
		hi, lo, step := pStep(prob.P[k])
		d.pp[k] = hi
		prob.U0From(d.up, d.pp)
		d.pp[k] = lo
		prob.U0From(d.um, d.pp)
		d.pp[k] = prob.P[k]
		c := T(float64(x) / step)
		for i := range dst {
			dst[i] += (d.up[i] - d.um[i]) * c
		}
	}
}

// u0Curvature adds the derivative of wᵀ∂u0/∂θ along v_θ into dst by
// central differences of U0FromVJP, one pair of calls per non-zero v_θ,k.
func (hs *HvSolver[T]) u0Curvature(dst, w []T) {
	d, prob := &hs.fd, &hs.gs.prob
	copy(d.pp, prob.P)
	for k, x := range hs.vθ {
		if x == 0 {
			continue
		}
		hi, lo, step := pStep(prob.P[k])
		clear(d.pa)
		clear(d.pb)
		d.pp[k] = hi
		prob.U0FromVJP(d.pa, w, d.pp)
		d.pp[k] = lo
		prob.U0FromVJP(d.pb, w, d.pp)
		d.pp[k] = prob.P[k]
		c := T(float64(x) / step)
		for i := range dst {
			dst[i] += (d.pa[i] - d.pb[i]) * c
		}
	}
}

// hvRows are the rows of F's first and second derivatives that the stiff
// methods' Jacobians need, from n VJPJVP products with unit vectors at
// (u, ṡ, p, v_θ): J = ∂F/∂u, C = ∂(J·ṡ + ∂F/∂p·v_θ)/∂u, P = ∂F/∂p and
// Q = ∂(J·ṡ + ∂F/∂p·v_θ)/∂p, row-major.
type hvRows[T Float] struct {
	j, c, p, q []T
	e, zero    []T
}

func (r *hvRows[T]) init(n, np int) {
	r.j, r.c = make([]T, n*n), make([]T, n*n)
	r.p, r.q = make([]T, n*np), make([]T, n*np)
	r.e, r.zero = make([]T, n), make([]T, n)
}

func (hs *HvSolver[T]) fillRows(u, ud []T, p []float32, t float64) {
	r := &hs.rows
	n, np := hs.n, hs.np
	clear(r.j)
	clear(r.c)
	clear(r.p)
	clear(r.q)
	for i := range n {
		r.e[i] = 1
		hs.gs.prob.VJPJVP(r.j[i*n:(i+1)*n], r.p[i*np:(i+1)*np], r.c[i*n:(i+1)*n], r.q[i*np:(i+1)*np], r.e, r.zero, u, ud, p, hs.vθ, t)
		r.e[i] = 0
	}
}

// forwardJac is the Jacobian of [u, ṡ, q]: [[J, 0], [C, J]] and the
// running cost's row ∂g/∂u.
func (hs *HvSolver[T]) forwardJac(J, y []T, p []float32, t float64) {
	n, N := hs.n, len(y)
	u := y[:n]
	hs.fillRows(u, y[n:2*n], p, t)
	r := &hs.rows
	clear(J)
	for i := range n {
		copy(J[i*N:i*N+n], r.j[i*n:(i+1)*n])
		copy(J[(n+i)*N:(n+i)*N+n], r.c[i*n:(i+1)*n])
		copy(J[(n+i)*N+n:(n+i)*N+2*n], r.j[i*n:(i+1)*n])
	}
	if hs.quad {
		clear(hs.gu)
		clear(hs.gp)
		hs.gs.loss.RunningGradient(hs.gu, hs.gp, u, p, t)
		copy(J[2*n*N:2*n*N+n], hs.gu)
	}
}

// backwardJac is the Jacobian of [λ, λ̇, μ, μ̇]'s right-hand side: −Jᵀ on
// λ, −Cᵀ and −Jᵀ on λ̇, −Pᵀ on μ, −Qᵀ and −Pᵀ on μ̇; μ and μ̇ are read by
// no row.
func (hs *HvSolver[T]) backwardJac(JB, a []T, p []float32, t float64) {
	n, np := hs.n, hs.np
	N := len(a)
	hs.forwardAt(t)
	hs.fillRows(hs.ub[:n], hs.ub[n:2*n], p, t)
	r := &hs.rows
	clear(JB)
	gn := T(1) // a Gauss–Newton product leaves the coupling C, Q out
	if hs.lossv.GaussNewton {
		gn = 0
	}
	for i := range n { // column of λ_i, λ̇_i
		for k := range n {
			jik := -r.j[i*n+k]
			JB[k*N+i] = jik
			JB[(n+k)*N+i] = -gn * r.c[i*n+k]
			JB[(n+k)*N+n+i] = jik
		}
		for l := range np {
			pil := -r.p[i*np+l]
			JB[(2*n+l)*N+i] = pil
			JB[(2*n+np+l)*N+i] = -gn * r.q[i*np+l]
			JB[(2*n+np+l)*N+n+i] = pil
		}
	}
}
