package ode

// denseReader evaluates a stored dense output at any t of the solved span:
// an Integrator's denseT, denseH and denseC. It remembers the last step
// used, since the backward passes read it at times that move
// monotonically.
type denseReader[T Float] struct {
	it   *Integrator[T]
	last int
}

func (d *denseReader[T]) reset() { d.last = 0 }

// eval writes u(t) into dst, of length it.n.
func (d *denseReader[T]) eval(dst []T, t float64) {
	it := d.it
	if len(it.denseT) == 0 {
		copy(dst, it.u)
		return
	}
	k, θ := d.seek(t)
	if len(it.denseN) > 0 {
		nordInto(dst, it.denseC, it.denseN[k], it.n, θ)
		return
	}
	if it.n == 2 && it.deg == 4 && len(dst) >= 2 {
		quartic2(dst, it.denseC[k*10:][:10], T(θ))
		return
	}
	sz := (it.deg + 1) * it.n
	hornerInto(dst, it.denseC[k*sz:], it.deg, it.n, T(θ))
}

// seek returns the step k whose interval holds t, and t's place θ in it,
// walking from the last step used: the backward passes move through the
// steps one by one, so this is a step or two, not a search. There must be
// at least one step.
func (d *denseReader[T]) seek(t float64) (int, float64) {
	it := d.it
	ts, dir := it.denseT, it.dir
	k := min(d.last, len(ts)-1)
	for k > 0 && dir*(t-ts[k]) < 0 {
		k--
	}
	for k+1 < len(ts) && dir*(t-ts[k+1]) >= 0 {
		k++
	}
	d.last = k
	return k, (t - ts[k]) / it.denseH[k]
}

// quartic2 is hornerInto's case of two states on a quartic, as Tsit5 and
// DP5 have. It does the same operations and is small enough to inline.
func quartic2[T Float](dst, p []T, θ T) {
	p = p[:10]
	dst[0] = (((p[8]*θ+p[6])*θ+p[4])*θ+p[2])*θ + p[0]
	dst[1] = (((p[9]*θ+p[7])*θ+p[5])*θ+p[3])*θ + p[1]
}
