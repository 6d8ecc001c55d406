package main

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// lvVJPJVP is lvVJP at w and its derivative along (wd, ud, pd), for the
// Hessian.
func lvVJPJVP(gu, gp, hu, hp, w, wd, u, ud []float64, p []float32, pd []float64, t float64) {
	lvVJP(gu, gp, w, u, p, t)
	lvVJP(hu, hp, wd, u, p, t)
	b, g := float64(p[1]), float64(p[3])
	var d [4]float64
	if pd != nil {
		copy(d[:], pd)
	}
	hu[0] += w[0]*(d[0]-d[1]*u[1]-b*ud[1]) + w[1]*(d[3]*u[1]+g*ud[1])
	hu[1] += -w[0]*(d[1]*u[0]+b*ud[0]) + w[1]*(-d[2]+d[3]*u[0]+g*ud[0])
	hp[0] += w[0] * ud[0]
	hp[1] -= w[0] * (ud[0]*u[1] + u[0]*ud[1])
	hp[2] -= w[1] * ud[1]
	hp[3] += w[1] * (ud[0]*u[1] + u[0]*ud[1])
}

// standardErrors is the Laplace approximation at the fit θ of the
// Gaussian likelihood of the observations, with σ² estimated as
// 2·L/(observations − parameters). The Hessian of L comes from
// ode.FullHessian with respect to the parameters and the initial state:
// the solve of the Hessian takes u0 = θ[lo:lo+2] as its own U0 (HvSolver
// does not take U0From), so θ's Hessian is assembled from the rates' rows
// and the initial state's. L's second derivative at a save time is the
// identity.
func standardErrors(ctx context.Context, θ []float32, lay *layout.Layout, lo int, loss ode.Loss[float64], nobs int) (*optimisers.Laplace, error) {
	prob := ode.Problem[float64]{F: lv, JVP: lvJVP, VJP: lvVJP, VJPJVP: lvVJPJVP,
		U0: []float64{float64(θ[lo]), float64(θ[lo+1])}, T1: 10, P: θ}
	hloss := ode.HvLoss[float64]{Loss: loss, PointHv: func(_ int, _ float64, _, ud, hv []float64) { copy(hv, ud) }}
	h, err := ode.FullHessian(ctx, prob, ode.Tsit5(), hloss, ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
	if err != nil {
		return nil, err
	}
	r, err := ode.Solve(ctx, ode.Problem[float64]{F: lv, U0: prob.U0, T1: 10, P: θ}, ode.Tsit5(), ode.Tol(1e-8, 1e-10), ode.SaveAt(loss.At...))
	if err != nil {
		return nil, err
	}
	var l float64
	for i, u := range r.U {
		l += loss.Point(i, loss.At[i], u, make([]float64, 2))
	}
	n, N := len(θ), len(θ)+2 // h is over (P, u0): P is θ, whose Init part F does not read
	row := func(i int) int {
		if i >= lo && i < lo+2 {
			return n + i - lo
		}
		return i
	}
	σ2 := 2 * l / float64(nobs-n)
	hθ := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			a, b := h[row(i)*N+row(j)], h[row(j)*N+row(i)]
			hθ.SetSym(i, j, (a+b)/2/σ2)
		}
	}
	return optimisers.NewLaplace(hθ, lay, 0)
}
