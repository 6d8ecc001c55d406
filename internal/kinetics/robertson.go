package kinetics

import "github.com/flatkit/flatkit/internal/stiffprob"

// Float is ode.Float, repeated here so that this package need not import
// ode.
type Float = stiffprob.Float

// Robertson is Robertson's chemical kinetics as CVODES's
// cvsRoberts_ASAi_dns writes it, by hand:
//
//	y1' = −p1 y1 + p2 y2 y3
//	y2' =  p1 y1 − p2 y2 y3 − p3 y2²
//	y3' =  p3 y2²
//
// with the rates p = (0.04, 1e4, 3e7) of RobertsonRates, read from p[0:3].
// Its methods have the signatures of ode.Problem's fields; JVP and VJP are
// written out, and form no Jacobian.
type Robertson[T Float] struct{}

// RobertsonRates returns a new slice of the rates p1, p2, p3 = 0.04, 1e4,
// 3e7.
func RobertsonRates() []float32 { return []float32{0.04, 1e4, 3e7} }

// Dim is the number of states, 3.
func (Robertson[T]) Dim() int { return 3 }

// U0 returns a new initial state, (1, 0, 0).
func (Robertson[T]) U0() []T { return []T{1, 0, 0} }

// F writes the right-hand side into du.
func (Robertson[T]) F(du, u []T, p []float32, _ float64) {
	p1, p2, p3 := T(p[0]), T(p[1]), T(p[2])
	r1, r2, r3 := p1*u[0], p2*u[1]*u[2], p3*u[1]*u[1]
	du[0] = r2 - r1
	du[1] = r1 - r2 - r3
	du[2] = r3
}

// Jac writes the Jacobian, dense and row-major, into J (len ≥ 9).
func (Robertson[T]) Jac(J, u []T, p []float32, _ float64) {
	p1, p2, p3 := T(p[0]), T(p[1]), T(p[2])
	J = J[:9]
	J[0], J[1], J[2] = -p1, p2*u[2], p2*u[1]
	J[3], J[4], J[5] = p1, -p2*u[2]-2*p3*u[1], -p2*u[1]
	J[6], J[7], J[8] = 0, 2*p3*u[1], 0
}

// JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp, or ∂F/∂u·v alone when dp is nil:
// the tangents of the three rates, combined as F combines the rates.
func (Robertson[T]) JVP(jv, u, v []T, p []float32, dp []T, _ float64) {
	p1, p2, p3 := T(p[0]), T(p[1]), T(p[2])
	t1, t2, t3 := p1*v[0], p2*(v[1]*u[2]+u[1]*v[2]), 2*p3*u[1]*v[1]
	if dp != nil {
		t1 += dp[0] * u[0]
		t2 += dp[1] * u[1] * u[2]
		t3 += dp[2] * u[1] * u[1]
	}
	jv[0] = t2 - t1
	jv[1] = t1 - t2 - t3
	jv[2] = t3
}

// VJP adds wᵀ·∂F/∂u into du and, when dp is not nil, wᵀ·∂F/∂p into dp:
// the cotangents of the three rates, spread to their reactants.
func (Robertson[T]) VJP(du, dp, w, u []T, p []float32, _ float64) {
	p1, p2, p3 := T(p[0]), T(p[1]), T(p[2])
	g1, g2, g3 := w[1]-w[0], w[0]-w[1], w[2]-w[1] // ∂(wᵀF)/∂r_k
	du[0] += p1 * g1
	du[1] += p2*u[2]*g2 + 2*p3*u[1]*g3
	du[2] += p2 * u[1] * g2
	if dp != nil {
		dp[0] += u[0] * g1
		dp[1] += u[1] * u[2] * g2
		dp[2] += u[1] * u[1] * g3
	}
}

// ParamJac writes ∂F/∂p, row-major 3×3, into Jp.
func (Robertson[T]) ParamJac(Jp, u []T, _ []float32, _ float64) {
	r1, r2, r3 := u[0], u[1]*u[2], u[1]*u[1]
	Jp = Jp[:9]
	Jp[0], Jp[1], Jp[2] = -r1, r2, 0
	Jp[3], Jp[4], Jp[5] = r1, -r2, -r3
	Jp[6], Jp[7], Jp[8] = 0, 0, r3
}
