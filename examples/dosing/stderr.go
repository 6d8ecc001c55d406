package main

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// standardErrors is the Laplace approximation at the fit θ: the loss is
// the negative log-likelihood of the samples (σ known), so its Hessian in
// θ is the observed Fisher information. ode.FullHessian takes it through
// the scheduled doses and the extra dose's event, whose time moves with θ;
// odead gave the problem its second derivatives. The loss's second
// derivative at a sample is 1/σ² on C.
func standardErrors(ctx context.Context, prob ode.Problem[float64], θ []float32, lay *layout.Layout, loss ode.Loss[float64], tol float64) (*optimisers.Laplace, error) {
	prob.P = θ
	hloss := ode.HvLoss[float64]{Loss: loss, PointHv: func(_ int, _ float64, _, ud, hv []float64) {
		hv[1] = ud[1] / (sigma * sigma)
	}}
	full, err := ode.FullHessian(ctx, prob, ode.Tsit5(), hloss, ode.InterpolatingAdjoint{}, ode.Tol(tol, tol/100))
	if err != nil {
		return nil, err
	}
	n, N := len(θ), len(θ)+len(prob.U0)
	h := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			h.SetSym(i, j, (full[i*N+j]+full[j*N+i])/2)
		}
	}
	return optimisers.NewLaplace(h, lay, 0)
}
