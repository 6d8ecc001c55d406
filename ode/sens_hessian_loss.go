package ode

// The loss's second derivatives at the save times, for HvSolver: the jumps
// of λ̇ by ∂²L/∂u²·ṡ, from HvLoss's SavedHv, PointHv and EndHv or by
// differences of the loss's gradient.

// lossHv fills hs.hdl with the saved loss's second derivative along ṡ at
// the save times, End's at its save at T1 included.
func (hs *HvSolver[T]) lossHv() error {
	gs, l := hs.gs, &hs.lossv
	n, k, nAt := hs.n, len(gs.at), gs.nAt
	if len(hs.hdl) != k {
		hs.hdlFlat = make([]T, k*n)
		hs.hdl = make([][]T, k)
		hs.udsIn, hs.hdlIn = make([][]T, k), make([][]T, k)
		for i := range hs.hdl {
			hs.hdl[i] = hs.hdlFlat[i*n : (i+1)*n : (i+1)*n]
		}
	}
	clear(hs.hdlFlat)
	switch {
	case l.Saved != nil:
		for j, i := range gs.order {
			if i < nAt {
				gs.usIn[i], hs.udsIn[i], hs.hdlIn[i] = gs.us[j], gs.ys[j][n:2*n], hs.hdl[j]
			}
		}
		f := l.SavedHv
		if f == nil {
			f = hs.fdSaved
		}
		f(gs.atIn[:nAt], gs.usIn[:nAt], hs.udsIn[:nAt], hs.hdlIn[:nAt])
	case l.Point != nil:
		f := l.PointHv
		if f == nil {
			f = hs.fdPoint
		}
		for j, i := range gs.order {
			if i < nAt {
				f(i, gs.at[j], gs.us[j], gs.ys[j][n:2*n], hs.hdl[j])
			}
		}
	}
	if l.End != nil && !gs.endT { // End where a firing ended the solve: terminalDir
		f := l.EndHv
		if f == nil {
			f = hs.fdEnd
		}
		j := gs.endK
		f(gs.prob.T1, gs.us[j], gs.ys[j][n:2*n], hs.hdl[j])
	}
	if l.Err != nil {
		if err := l.Err(); err != nil {
			return errorf("HessianVector: the loss: %w", err)
		}
	}
	if c := firstNonFinite(hs.hdlFlat); c >= 0 {
		if c/n == gs.endK {
			return errorf("HessianVector: Loss.End's second derivative at T1=%g has %g in component %d, want finite values", gs.prob.T1, float64(hs.hdlFlat[c]), c%n)
		}
		return errorf("HessianVector: the loss's second derivative at t=%g (At[%d]) has %g in component %d, want finite values", gs.at[c/n], gs.order[c/n], float64(hs.hdlFlat[c]), c%n)
	}
	return nil
}

// jumpHv adds the loss's second derivative at save time k to λ̇, after
// the adjoint pass has added its gradient to λ.
func (hs *HvSolver[T]) jumpHv(k int) {
	n := hs.n
	ld := hs.pass.a[n : 2*n]
	for i, v := range hs.hdl[k] {
		ld[i] += v
	}
}
