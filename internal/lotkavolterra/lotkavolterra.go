package lotkavolterra

// Float is ode.Float, repeated here so that ode may import this package.
type Float interface{ ~float32 | ~float64 }

// F writes the right-hand side into du.
func F[T Float](du, u []T, p []float32, _ float64) {
	p0, p1, p2, p3 := T(p[0]), T(p[1]), T(p[2]), T(p[3])
	du[0] = p0*u[0] - p1*u[0]*u[1]
	du[1] = -p2*u[1] + p3*u[0]*u[1]
}

// JVP writes ∂F/∂u·v + ∂F/∂p·dp into jv, or ∂F/∂u·v alone if dp is nil.
func JVP[T Float](jv, u, v []T, p []float32, dp []T, _ float64) {
	p0, p1, p2, p3 := T(p[0]), T(p[1]), T(p[2]), T(p[3])
	jv[0] = (p0-p1*u[1])*v[0] - p1*u[0]*v[1]
	jv[1] = p3*u[1]*v[0] + (-p2+p3*u[0])*v[1]
	if dp != nil {
		dp = dp[:4]
		jv[0] += u[0]*dp[0] - u[0]*u[1]*dp[1]
		jv[1] += -u[1]*dp[2] + u[0]*u[1]*dp[3]
	}
}

// VJP adds wᵀ∂F/∂u into du and, when dp is not nil, wᵀ∂F/∂p into dp.
func VJP[T Float](du, dp, w, u []T, p []float32, _ float64) {
	p0, p1, p2, p3 := T(p[0]), T(p[1]), T(p[2]), T(p[3])
	du[0] += w[0]*(p0-p1*u[1]) + w[1]*p3*u[1]
	du[1] += -w[0]*p1*u[0] + w[1]*(-p2+p3*u[0])
	if dp != nil {
		dp[0] += w[0] * u[0]
		dp[1] -= w[0] * u[0] * u[1]
		dp[2] -= w[1] * u[1]
		dp[3] += w[1] * u[0] * u[1]
	}
}

// Jac writes ∂F/∂u, row-major, into J.
func Jac[T Float](J, u []T, p []float32, _ float64) {
	p0, p1, p2, p3 := T(p[0]), T(p[1]), T(p[2]), T(p[3])
	J[0], J[1] = p0-p1*u[1], -p1*u[0]
	J[2], J[3] = p3*u[1], -p2+p3*u[0]
}

// ParamJac writes ∂F/∂p, 2×4 and row-major, into Jp.
func ParamJac[T Float](Jp, u []T, _ []float32, _ float64) {
	Jp[0], Jp[1], Jp[2], Jp[3] = u[0], -u[0]*u[1], 0, 0
	Jp[4], Jp[5], Jp[6], Jp[7] = 0, 0, -u[1], u[0]*u[1]
}

// The float64 instances as plain functions. A func value of F[float64]
// calls through an instantiation wrapper to the generic body: one call
// more in a solver's inner loop. Jac64 and ParamJac64 inline the generic
// body. F64, JVP64 and VJP64 are written out with one bounds check per
// slice. They do the same operations as F, JVP and VJP[float64], hence
// give the same bits; TestFloat64Instances pins it.

// F64 is F[float64].
func F64(du, u []float64, p []float32, _ float64) {
	p, du, u = p[:4], du[:2], u[:2] // one bounds check per slice
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] = p0*u[0] - p1*u[0]*u[1]
	du[1] = -p2*u[1] + p3*u[0]*u[1]
}

// JVP64 is JVP[float64].
func JVP64(jv, u, v []float64, p []float32, dp []float64, _ float64) {
	p, jv, u, v = p[:4], jv[:2], u[:2], v[:2] // one bounds check per slice
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	jv[0] = (p0-p1*u[1])*v[0] - p1*u[0]*v[1]
	jv[1] = p3*u[1]*v[0] + (-p2+p3*u[0])*v[1]
	if dp != nil {
		dp = dp[:4]
		jv[0] += u[0]*dp[0] - u[0]*u[1]*dp[1]
		jv[1] += -u[1]*dp[2] + u[0]*u[1]*dp[3]
	}
}

// VJP64 is VJP[float64].
func VJP64(du, dp, w, u []float64, p []float32, _ float64) {
	p = p[:4] // one bounds check per slice, not one per read
	du, w, u = du[:2], w[:2], u[:2]
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] += w[0]*(p0-p1*u[1]) + w[1]*p3*u[1]
	du[1] += -w[0]*p1*u[0] + w[1]*(-p2+p3*u[0])
	if dp != nil {
		dp = dp[:4]
		dp[0] += w[0] * u[0]
		dp[1] -= w[0] * u[0] * u[1]
		dp[2] -= w[1] * u[1]
		dp[3] += w[1] * u[0] * u[1]
	}
}

// Jac64 is Jac[float64].
func Jac64(J, u []float64, p []float32, t float64) { Jac(J, u, p, t) }

// ParamJac64 is ParamJac[float64].
func ParamJac64(Jp, u []float64, p []float32, t float64) { ParamJac(Jp, u, p, t) }
