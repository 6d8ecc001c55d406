package ode_test

import (
	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// Stiff test problems of the BDF tests and benchmarks, as the peer
// benchmark (shared/peers/cvode_stiff_bench.c) writes them.

// bruss1d is Hairer and Wanner's 1-D Brusselator (II, section IV.1) on N
// grid points, stiffprob.Bruss1D: 2N states on t ∈ [0, 10]. denseJac adds
// the row-major Jacobian.
func bruss1d(N int, denseJac bool) ode.Problem[float64] {
	b := stiffprob.NewBruss1D[float64](N)
	prob := ode.Problem[float64]{F: b.F, U0: b.U0(), T1: 10}
	if denseJac {
		prob.Jac = b.Jac
	}
	return prob
}

// pollu is the Test Set's POLLU, stiffprob.Pollu: 20 species on
// t ∈ [0, 60], without a Jacobian.
func pollu() ode.Problem[float64] {
	var p stiffprob.Pollu[float64]
	return ode.Problem[float64]{F: p.F, U0: p.U0(), T1: 60}
}

// hires is the Test Set's HIRES: 8 reactions of plant physiology,
// t ∈ [0, 321.8122].
func hires(du, y []float64, _ []float32, _ float64) {
	du[0] = -1.71*y[0] + 0.43*y[1] + 8.32*y[2] + 0.0007
	du[1] = 1.71*y[0] - 8.75*y[1]
	du[2] = -10.03*y[2] + 0.43*y[3] + 0.035*y[4]
	du[3] = 8.32*y[1] + 1.71*y[2] - 1.12*y[3]
	du[4] = -1.745*y[4] + 0.43*y[5] + 0.43*y[6]
	du[5] = -280*y[5]*y[7] + 0.69*y[3] + 1.71*y[4] - 0.43*y[5] + 0.69*y[6]
	du[6] = 280*y[5]*y[7] - 1.81*y[6]
	du[7] = -du[6]
}

var (
	hiresU0 = []float64{1, 0, 0, 0, 0, 0, 0, 0.0057}
	// hiresRef is the Test Set's reference at t = 321.8122.
	hiresRef = []float64{0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4, 0.1175651343283149e-2,
		0.2386356198831331e-2, 0.6238968252742796e-2, 0.2849998395185769e-2, 0.2850001604814231e-2}
)
