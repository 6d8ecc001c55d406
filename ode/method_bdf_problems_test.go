package ode_test

import (
	"math"

	"github.com/flatkit/flatkit/ode"
)

// Stiff test problems of the BDF tests and benchmarks, as the peer
// benchmark (shared/peers/cvode_stiff_bench.c) writes them.

// bruss1d is Hairer and Wanner's 1-D Brusselator (II, section IV.1) on N
// grid points: 2N states, u_i and v_i interleaved, α = (N+1)²/50, u = 1
// and v = 3 at the boundary, u(x, 0) = 1 + sin(2πx), v(x, 0) = 3 with
// x_i = i/(N+1), on t ∈ [0, 10]. denseJac adds the row-major Jacobian.
func bruss1d(N int, denseJac bool) ode.Problem[float64] {
	n := 2 * N
	c := float64((N+1)*(N+1)) / 50
	f := func(du, y []float64, _ []float32, _ float64) {
		for i := 0; i < N; i++ {
			u, v := y[2*i], y[2*i+1]
			ul, vl, ur, vr := 1.0, 3.0, 1.0, 3.0
			if i > 0 {
				ul, vl = y[2*i-2], y[2*i-1]
			}
			if i < N-1 {
				ur, vr = y[2*i+2], y[2*i+3]
			}
			du[2*i] = 1 + u*u*v - 4*u + c*(ul-2*u+ur)
			du[2*i+1] = 3*u - u*u*v + c*(vl-2*v+vr)
		}
	}
	u0 := make([]float64, n)
	for i := 0; i < N; i++ {
		x := float64(i+1) / float64(N+1)
		u0[2*i] = 1 + math.Sin(2*math.Pi*x)
		u0[2*i+1] = 3
	}
	prob := ode.Problem[float64]{F: f, U0: u0, T1: 10}
	if denseJac {
		prob.Jac = func(J, y []float64, _ []float32, _ float64) {
			clear(J)
			for i := 0; i < N; i++ {
				u, v := y[2*i], y[2*i+1]
				r, s := 2*i, 2*i+1
				J[r*n+r] = 2*u*v - 4 - 2*c
				J[r*n+s] = u * u
				J[s*n+r] = 3 - 2*u*v
				J[s*n+s] = -u*u - 2*c
				if i > 0 {
					J[r*n+r-2] = c
					J[s*n+s-2] = c
				}
				if i < N-1 {
					J[r*n+r+2] = c
					J[s*n+s+2] = c
				}
			}
		}
	}
	return prob
}

// polluK are POLLU's rate constants, k[1] to k[25].
var polluK = [26]float64{0, .35, 26.6, 1.23e4, 8.6e-4, 8.2e-4, 1.5e4, 1.3e-4, 2.4e4, 1.65e4, 9e3, 2.2e-2, 1.2e4, 1.88, 1.63e4,
	4.8e6, 3.5e-4, 1.75e-2, 1e8, 4.44e11, 1.24e3, 2.1, 5.78, 4.74e-2, 1.78e3, 3.12}

// pollu is the Test Set's POLLU, the air pollution model of the Dutch
// National Institute of Public Health: 20 species, 25 reactions, t ∈ [0, 60].
func pollu() ode.Problem[float64] {
	f := func(dy, yv []float64, _ []float32, _ float64) {
		k := &polluK
		var y [21]float64
		copy(y[1:], yv)
		var r [26]float64
		r[1] = k[1] * y[1]
		r[2] = k[2] * y[2] * y[4]
		r[3] = k[3] * y[5] * y[2]
		r[4] = k[4] * y[7]
		r[5] = k[5] * y[7]
		r[6] = k[6] * y[7] * y[6]
		r[7] = k[7] * y[9]
		r[8] = k[8] * y[9] * y[6]
		r[9] = k[9] * y[11] * y[2]
		r[10] = k[10] * y[11] * y[1]
		r[11] = k[11] * y[13]
		r[12] = k[12] * y[10] * y[2]
		r[13] = k[13] * y[14]
		r[14] = k[14] * y[1] * y[6]
		r[15] = k[15] * y[3]
		r[16] = k[16] * y[4]
		r[17] = k[17] * y[4]
		r[18] = k[18] * y[16]
		r[19] = k[19] * y[16]
		r[20] = k[20] * y[17] * y[6]
		r[21] = k[21] * y[19]
		r[22] = k[22] * y[19]
		r[23] = k[23] * y[1] * y[4]
		r[24] = k[24] * y[19] * y[1]
		r[25] = k[25] * y[20]
		f := dy[:20]
		f[0] = -r[1] - r[10] - r[14] - r[23] - r[24] + r[2] + r[3] + r[9] + r[11] + r[12] + r[22] + r[25]
		f[1] = -r[2] - r[3] - r[9] - r[12] + r[1] + r[21]
		f[2] = -r[15] + r[1] + r[17] + r[19] + r[22]
		f[3] = -r[2] - r[16] - r[17] - r[23] + r[15]
		f[4] = -r[3] + 2*r[4] + r[6] + r[7] + r[13] + r[20]
		f[5] = -r[6] - r[8] - r[14] - r[20] + r[3] + 2*r[18]
		f[6] = -r[4] - r[5] - r[6] + r[13]
		f[7] = r[4] + r[5] + r[6] + r[7]
		f[8] = -r[7] - r[8]
		f[9] = -r[12] + r[7] + r[9]
		f[10] = -r[9] - r[10] + r[8] + r[11]
		f[11] = r[9]
		f[12] = -r[11] + r[10]
		f[13] = -r[13] + r[12]
		f[14] = r[14]
		f[15] = -r[18] - r[19] + r[16]
		f[16] = -r[20]
		f[17] = r[20]
		f[18] = -r[21] - r[22] - r[24] + r[23] + r[25]
		f[19] = -r[25] + r[24]
	}
	u0 := make([]float64, 20)
	u0[1], u0[3], u0[6], u0[7], u0[8], u0[16] = 0.2, 0.04, 0.1, 0.3, 0.01, 0.007
	return ode.Problem[float64]{F: f, U0: u0, T1: 60}
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
