package odead

import (
	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
)

// NeuralRHS is the right-hand side u' = NN(u; θ) of a neural ODE. The
// network layer maps a batch of one state, of shape 1×n, to shape 1×n.
// The result is an ad-written function for Problem and Derivs,
// or a term of a universal ODE, known terms plus a network on a view of
// θ:
//
//	nn := model.Chain(model.Dense(2, 32), model.Tanh(), model.Dense(32, 2))
//	prob, err := odead.Problem(odead.NeuralRHS(nn), u0, 0, 1.5, θ, odead.Replayable())   // θ from model.Init(nn, rng)
//
//	// known terms plus a network whose parameters follow four rates in θ
//	ude := func(u, p ad.Var, t float64) ad.Var {
//		known := …                                   // ad ops on u and ad.Slice(p, 0, 4)
//		return ad.Add(known, odead.NeuralRHS(nn)(u, ad.View(p, 4, len(p)-4), t))
//	}
//
// The layer reads its parameters as views of p, so no copy of θ is made
// per solve or per step. p must be the layer's own parameter range, as
// long as model.Layout(layer) says. The network sees no time: put t in
// a universal ODE's known terms if it must. A layer of package model in
// inference mode records the same ops at every call, so pass Replayable
// to Func, Derivs or Problem with the function, or with a universal
// ODE that wraps it, unless that reads t; NeuralProblem does.
func NeuralRHS(layer model.Layer) func(u, p ad.Var, t float64) ad.Var {
	if layer == nil {
		panic("odead: NeuralRHS(nil)")
	}
	return func(u, p ad.Var, _ float64) ad.Var {
		n := u.Size()
		y := layer.Apply(nil, p, ad.Reshape(u, 1, n))
		if y.Size() != n && u.Tape().Err() == nil {
			return u.Tape().Fail(errorf("NeuralRHS: the network maps (1, %d) to shape %v, want (1, %d)", n, y.Shape(), n))
		}
		return ad.Reshape(y, n)
	}
}

// NeuralProblem is the neural ODE u' = layer(u; θ) with u(t0) = u0, on
// [t0, t1], as an ode.Problem with F, Jac, JVP, VJP and Err from ad, in
// u0's precision: for float64 the network's weights are read from the
// float32 θ and the network computes in float64. It checks that θ has the
// layer's parameter count. Then it returns the Problem of
// NeuralRHS(layer), declared Replayable.
func NeuralProblem[F ode.Float](layer model.Layer, u0 []F, t0, t1 float64, θ []float32) (ode.Problem[F], error) {
	if layer == nil {
		return ode.Problem[F]{}, errorf("NeuralProblem: layer is nil")
	}
	lay, err := model.Layout(layer)
	if err != nil {
		return ode.Problem[F]{}, errorf("NeuralProblem: %w", err)
	}
	if lay.Len() != len(θ) {
		return ode.Problem[F]{}, errorf("NeuralProblem: len(θ) = %d, want %d (the network's parameters)", len(θ), lay.Len())
	}
	return Problem(NeuralRHS(layer), u0, t0, t1, θ, Replayable())
}
