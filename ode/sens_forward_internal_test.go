package ode

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
)

// A nonlinear test system with hand-written derivative products (n = 3,
// len(p) = 4).
func fsTestF(du, u []float64, p []float32, _ float64) {
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] = p0*u[0]*u[1] + math.Sin(u[2])
	du[1] = p1*u[1]*u[1] - p2*u[0]
	du[2] = p3*u[0]*u[2] + p0*u[1]
}

func fsTestJVP(jv, u, v []float64, p []float32, dp []float64, _ float64) {
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	jv[0] = p0*u[1]*v[0] + p0*u[0]*v[1] + math.Cos(u[2])*v[2]
	jv[1] = -p2*v[0] + 2*p1*u[1]*v[1]
	jv[2] = p3*u[2]*v[0] + p0*v[1] + p3*u[0]*v[2]
	if dp != nil {
		jv[0] += u[0] * u[1] * dp[0]
		jv[1] += u[1]*u[1]*dp[1] - u[0]*dp[2]
		jv[2] += u[0]*u[2]*dp[3] + u[1]*dp[0]
	}
}

func fsTestVJP(du, dp, w, u []float64, p []float32, _ float64) {
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] += w[0]*p0*u[1] - w[1]*p2 + w[2]*p3*u[2]
	du[1] += w[0]*p0*u[0] + w[1]*2*p1*u[1] + w[2]*p0
	du[2] += w[0]*math.Cos(u[2]) + w[2]*p3*u[0]
	if dp != nil {
		dp[0] += w[0]*u[0]*u[1] + w[2]*u[1]
		dp[1] += w[1] * u[1] * u[1]
		dp[2] -= w[1] * u[0]
		dp[3] += w[2] * u[0] * u[2]
	}
}

// TestForwardSensRowsMatchJVPs checks the two ways ForwardSensitivity
// evaluates the sensitivities' right-hand side against each other at
// random points: m JVPs, and n VJPs with the dense product J_u·S + J_p.
// A wrong row/column index or a missing J_p term in either fails it.
func TestForwardSensRowsMatchJVPs(t *testing.T) {
	for _, n := range []int{2, 3} {
		rapid.Check(t, func(rt *rapid.T) {
			p := make([]float32, 4)
			for i := range p {
				p[i] = float32(rapid.Float64Range(-2, 2).Draw(rt, "p"))
			}
			prob := Problem[float64]{F: fsTestF, JVP: fsTestJVP, VJP: fsTestVJP, U0: make([]float64, 3), T1: 1, P: p}
			if n == 2 { // Lotka-Volterra, the unrolled n = 2 case
				prob.F, prob.JVP, prob.VJP = lvInF, lvInJVP, lvInVJP
				prob.U0 = make([]float64, 2)
			}
			gs, err := NewGradientSolver(prob, Tsit5(), ForwardSensitivity{})
			if err != nil {
				rt.Fatal(err)
			}
			fs := gs.impl.(*forwardSens[float64])
			if err := fs.build(false); err != nil {
				rt.Fatal(err)
			}
			m := fs.m
			if !useRows(n, m, true) || useRows(n, m, false) {
				rt.Fatalf("useRows(%d, %d): want the rows with a VJP only", n, m)
			}
			fs.ju, fs.jp, fs.er = make([]float64, n*n), make([]float64, n*4), make([]float64, n)
			Y := make([]float64, fs.dimN)
			for i := range Y {
				Y[i] = rapid.Float64Range(-3, 3).Draw(rt, "Y")
			}
			a, b := make([]float64, fs.dimN), make([]float64, fs.dimN)
			fs.rows = false
			fs.rhs(a, Y, p, 0.5)
			fs.rows = true
			fs.rhs(b, Y, p, 0.5)
			for i := range a {
				if d := math.Abs(a[i] - b[i]); d > 1e-12*(1+math.Abs(a[i])) {
					rt.Fatalf("component %d: JVPs give %g, rows %g", i, a[i], b[i])
				}
			}
			if n == 2 { // the integrator's F for two states: the same bits as rhs, rows or not
				for _, rows := range []bool{false, true} {
					fs.rows = rows
					fs.rhs(a, Y, p, 0.5)
					for i := range b {
						b[i] = math.NaN() // every component written
					}
					fs.rhs2(b, Y, p, 0.5)
					if !slices.Equal(a, b) {
						rt.Fatalf("rows %v: rhs2 gives %v, rhs %v", rows, b, a)
					}
				}
			}
		})
	}
}

// Lotka-Volterra with its products, for the internal tests.
var (
	lvInF   = lotkavolterra.F64
	lvInJVP = lotkavolterra.JVP64
	lvInVJP = lotkavolterra.VJP64
)
