package lotkavolterra

// VJPJVP is ode.Problem.VJPJVP: VJP at w into gu and gp, and into hu and
// hp its derivative along (wd, ud, pd) in (w, u, p); pd nil is a zero
// parameter direction.
func VJPJVP[T Float](gu, gp, hu, hp, w, wd, u, ud []T, p []float32, pd []T, t float64) {
	VJP(gu, gp, w, u, p, t)
	VJP(hu, hp, wd, u, p, t)
	p1, p3 := T(p[1]), T(p[3])
	var d [4]T
	if pd != nil {
		copy(d[:], pd)
	}
	hu, hp, w, u, ud = hu[:2], hp[:4], w[:2], u[:2], ud[:2]
	hu[0] += w[0]*(d[0]-d[1]*u[1]-p1*ud[1]) + w[1]*(d[3]*u[1]+p3*ud[1])
	hu[1] += -w[0]*(d[1]*u[0]+p1*ud[0]) + w[1]*(-d[2]+d[3]*u[0]+p3*ud[0])
	hp[0] += w[0] * ud[0]
	hp[1] -= w[0] * (ud[0]*u[1] + u[0]*ud[1])
	hp[2] -= w[1] * ud[1]
	hp[3] += w[1] * (ud[0]*u[1] + u[0]*ud[1])
}
