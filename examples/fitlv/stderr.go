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
// 2·L/(observations − parameters). The Hessian of L with respect to θ is
// the θ block of ode.FullHessian's, which takes the initial state through
// Problem.U0From. L's second derivative at a save time is the identity.
func standardErrors(ctx context.Context, prob ode.Problem[float64], θ []float32, lay *layout.Layout, loss ode.Loss[float64], nobs int) (*optimisers.Laplace, error) {
	prob.P, prob.VJPJVP = θ, lvVJPJVP
	hloss := ode.HvLoss[float64]{Loss: loss, PointHv: func(_ int, _ float64, _, ud, hv []float64) { copy(hv, ud) }}
	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-8, 1e-10))
	if err != nil {
		return nil, err
	}
	n := len(θ)
	h := mat.NewSymDense(n, nil)
	v := make([]float64, n+len(prob.U0))
	var l float64
	for k := range n {
		v[k] = 1
		r, err := hs.HvFor(ctx, prob, hloss, v)
		if err != nil {
			return nil, err
		}
		v[k] = 0
		l = r.Value
		for j := k; j < n; j++ {
			h.SetSym(k, j, r.HvP[j]) // the upper triangle
		}
	}
	h.ScaleSym(float64(nobs-n)/(2*l), h) // ÷ σ²
	return optimisers.NewLaplace(h, lay, 0)
}
