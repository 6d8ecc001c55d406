package ode_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// DiscreteAdjoint through Rosenbrock23 and Rodas5P: the gradient of the
// computed discrete solution. On fixed steps that solution is a smooth
// function of θ and u0, so central differences of it are the reference.

// fvdpProblem is Van der Pol with μ = p[0] = 1000, stiff, forced by
// p[1]·sin(3t) so that F depends on t: u1' = u2, u2' = μ((1 − u1²)u2 − u1)
// + p[1]·sin(3t). Its Jac is exact and dense.
func fvdpProblem() ode.Problem[float64] {
	f := func(du, u []float64, p []float32, t float64) {
		mu, a := float64(p[0]), float64(p[1])
		du[0] = u[1]
		du[1] = mu*((1-u[0]*u[0])*u[1]-u[0]) + a*math.Sin(3*t)
	}
	jac := func(J, u []float64, p []float32, t float64) {
		mu := float64(p[0])
		J[0], J[1] = 0, 1
		J[2], J[3] = mu*(-2*u[0]*u[1]-1), mu*(1-u[0]*u[0])
	}
	vjp := func(du, dp, w, u []float64, p []float32, t float64) {
		mu := float64(p[0])
		du[0] += w[1] * mu * (-2*u[0]*u[1] - 1)
		du[1] += w[0] + w[1]*mu*(1-u[0]*u[0])
		if dp != nil {
			dp[0] += w[1] * ((1-u[0]*u[0])*u[1] - u[0])
			dp[1] += w[1] * math.Sin(3*t)
		}
	}
	jvp := func(jv, u, v []float64, p []float32, dp []float64, t float64) {
		mu := float64(p[0])
		jv[0] = v[1]
		jv[1] = mu * ((-2*u[0]*u[1]-1)*v[0] + (1-u[0]*u[0])*v[1])
		if dp != nil {
			jv[1] += dp[0]*((1-u[0]*u[0])*u[1]-u[0]) + dp[1]*math.Sin(3*t)
		}
	}
	return ode.Problem[float64]{F: f, Jac: jac, VJP: vjp, JVP: jvp, U0: []float64{2, -0.6}, T0: 0, T1: 0.4, P: []float32{1000, 2}}
}

// linLoss is Σ_k c_k·u(At[k]), with fixed weights c.
func linLoss(at []float64, n int) (ode.Loss[float64], func(us [][]float64) float64) {
	r := rand.New(rand.NewPCG(7, 8))
	c := make([][]float64, len(at))
	for k := range c {
		c[k] = make([]float64, n)
		for i := range c[k] {
			c[k][i] = r.NormFloat64()
		}
	}
	val := func(us [][]float64) float64 {
		var g float64
		for k, u := range us {
			for i, v := range u {
				g += c[k][i] * v
			}
		}
		return g
	}
	loss := ode.Loss[float64]{At: at, Point: func(k int, _ float64, u, dl []float64) float64 {
		var g float64
		for i, v := range u {
			g += c[k][i] * v
			dl[i] = c[k][i]
		}
		return g
	}}
	return loss, val
}

// solveLoss solves prob with m and opts, saving at the loss's times.
func solveLoss(t *testing.T, prob ode.Problem[float64], m ode.Method, at []float64, val func([][]float64) float64, opts ...ode.Option) float64 {
	t.Helper()
	o := []ode.SolveOption{ode.SaveAt(at...)}
	for _, x := range opts {
		o = append(o, x)
	}
	sol, err := ode.Solve(context.Background(), prob, m, o...)
	if err != nil {
		t.Fatal(err)
	}
	// The solve saves in the order of integration; val wants At's.
	us := make([][]float64, len(at))
	for j, tj := range sol.T {
		for k, a := range at {
			if a == tj {
				us[k] = sol.U[j]
			}
		}
	}
	return val(us)
}

// checkDirections compares the gradient g (dL/dθ, dL/du0) with central
// differences of loss along nd random directions in u0 and along each
// parameter, Richardson-extrapolated.
func checkDirections(t *testing.T, prob ode.Problem[float64], g *ode.GradientResult[float64], loss func(ode.Problem[float64]) float64, nd int, dpar []float32, tol float64) {
	t.Helper()
	worst := 0.0
	defer func() { t.Logf("largest relative difference: %.2g", worst) }()
	r := rand.New(rand.NewPCG(1, 2))
	n := len(prob.U0)
	along := func(d []float64, h float64) float64 {
		p := prob
		p.U0 = make([]float64, n)
		for i := range p.U0 {
			p.U0[i] = prob.U0[i] + h*d[i]
		}
		return loss(p)
	}
	for k := 0; k < nd; k++ {
		d := make([]float64, n)
		var want float64
		for i := range d {
			d[i] = r.NormFloat64()
			want += g.U0[i] * d[i]
		}
		h := 1e-4 * (1 + maxAbsSlice(prob.U0))
		c1 := (along(d, h) - along(d, -h)) / (2 * h)
		c2 := (along(d, h/2) - along(d, -h/2)) / h
		got := (4*c2 - c1) / 3
		e := math.Abs(got-want) / max(math.Abs(got), 1e-300)
		worst = max(worst, e)
		if e > tol {
			t.Errorf("direction %d in u0: gradient %.12g, central differences %.12g (rel %.2g)", k, want, got, e)
		}
	}
	for k, dp := range dpar {
		if dp == 0 {
			continue
		}
		at := func(h float32) float64 {
			p := prob
			p.P = append([]float32(nil), prob.P...)
			p.P[k] += h
			return loss(p)
		}
		c1 := (at(dp) - at(-dp)) / (2 * float64(dp))
		c2 := (at(dp/2) - at(-dp/2)) / float64(dp)
		got := (4*c2 - c1) / 3
		e := math.Abs(got-g.P[k]) / max(math.Abs(got), 1e-300)
		worst = max(worst, e)
		if e > tol {
			t.Errorf("dL/dθ[%d] = %.12g, central differences %.12g (rel %.2g)", k, g.P[k], got, e)
		}
	}
}

func maxAbsSlice(x []float64) float64 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// TestDiscreteAdjointRosenbrockFixedSteps: on fixed steps of the forced,
// stiff Van der Pol oscillator (F depends on t, so the ∂F/∂t terms count),
// with save times inside steps, the gradient of Rosenbrock23 and Rodas5P
// agrees with central differences of the discrete solution to 1e-7 along
// random directions in u0 and along each parameter.
func TestDiscreteAdjointRosenbrockFixedSteps(t *testing.T) {
	prob := fvdpProblem()
	at := []float64{0.1234, 0.25, 0.3333, 0.4}
	loss, val := linLoss(at, 2)
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		for _, ck := range []int{0, 5} {
			t.Run(m.Name(), func(t *testing.T) {
				fixed := ode.FixedStep(0.4 / 64)
				g, err := ode.Gradient(context.Background(), prob, m, loss, ode.DiscreteAdjoint{Checkpoints: ck}, fixed)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("checkpoints %d: dL/dθ = %.10g, dL/du0 = %.10g", ck, g.P, g.U0)
				f := func(p ode.Problem[float64]) float64 { return solveLoss(t, p, m, at, val, fixed) }
				checkDirections(t, prob, g, f, 6, []float32{1, 1.0 / 64}, 1e-7)
			})
		}
	}
}

// TestDiscreteAdjointRosenbrockTinyState: a state of 1e-9, far below the
// absolute tolerance, where ∂F/∂p holds terms of its own (F_i = −u_i +
// cos(t + i)/4 − θ − θ·u_0·[i = 0]). ∇_θ(r̄ᵀJg) is a difference of VJPs
// along the stages; on the scale of |u| alone its increment was 1e-14 and
// the rounding of the VJPs' θ parts spoiled dL/dθ at 2e-6. On the
// tolerances' scale the gradient agrees with central differences of the
// discrete solution to 1e-8.
func TestDiscreteAdjointRosenbrockTinyState(t *testing.T) {
	prob := ode.Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) {
			q := float64(p[0])
			for i := range du {
				du[i] = -u[i] + math.Cos(t+float64(i))/4 - q
			}
			du[0] -= q * u[0]
		},
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			q := float64(p[0])
			for i := range du {
				du[i] -= w[i]
				if dp != nil {
					dp[0] -= w[i]
				}
			}
			du[0] -= q * w[0]
			if dp != nil {
				dp[0] -= w[0] * u[0]
			}
		},
		Jac: func(J, u []float64, p []float32, t float64) { // exact, so that the differences' solves take it too
			J[0], J[1], J[2], J[3] = -1-float64(p[0]), 0, 0, -1
		},
		U0: []float64{1.862645149230957e-09, 4.656612873077393e-10}, P: []float32{0.50390625}, T1: 1,
	}
	at := []float64{0.3, 1}
	loss, val := linLoss(at, 2)
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		t.Run(m.Name(), func(t *testing.T) {
			fixed := ode.FixedStep(1.0 / 64)
			g, err := ode.Gradient(context.Background(), prob, m, loss, ode.DiscreteAdjoint{}, fixed)
			if err != nil {
				t.Fatal(err)
			}
			f := func(p ode.Problem[float64]) float64 { return solveLoss(t, p, m, at, val, fixed) }
			checkDirections(t, prob, g, f, 4, []float32{1.0 / 64}, 1e-8)
		})
	}
}

// TestDiscreteAdjointRosenbrockStructures: on fixed steps of the 1-D
// Brusselator (N = 10, θ = (A, B, 50α)), the gradient through Rodas5P
// and Rosenbrock23 in the dense, band and sparse structures (the solves
// with Wᵀ from the dense LU, the band LU and the sparse LU; J from Jac,
// and from coloured JVPs), agrees with
// central differences of the discrete solution to 1e-7, and the
// structures agree with each other to 1e-10.
func TestDiscreteAdjointRosenbrockStructures(t *testing.T) {
	const N = 10
	at := []float64{0.7, 1.55, 2}
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		var ref *ode.GradientResult[float64]
		for _, s := range []string{"dense", "band", "sparse", "sparse/JVP"} {
			t.Run(m.Name()+"/"+s, func(t *testing.T) {
				prob := brussSensProblem(N, strings.TrimSuffix(s, "/JVP"))
				if strings.HasSuffix(s, "/JVP") { // J by coloured JVPs
					prob.Jac = nil
				}
				prob.T1 = 2
				loss, val := linLoss(at, 2*N)
				fixed := ode.FixedStep(2.0 / 40)
				g, err := ode.Gradient(context.Background(), prob, m, loss, ode.DiscreteAdjoint{}, fixed)
				if err != nil {
					t.Fatal(err)
				}
				if ref == nil {
					ref = &ode.GradientResult[float64]{P: append([]float64(nil), g.P...), U0: append([]float64(nil), g.U0...)}
				} else if e := max(relNorm(g.P, ref.P), relNorm(g.U0, ref.U0)); e > 1e-10 {
					t.Errorf("%s differs from dense by %.2g relative", s, e)
				}
				f := func(p ode.Problem[float64]) float64 { return solveLoss(t, p, m, at, val, fixed) }
				checkDirections(t, prob, g, f, 4, []float32{1.0 / 512, 1.0 / 512, 1.0 / 512}, 1e-8)
			})
		}
	}
}

// TestDiscreteAdjointRosenbrockBackwardInTime: T1 < T0, negative steps,
// with save times inside steps, against central differences of the
// discrete solution.
func TestDiscreteAdjointRosenbrockBackwardInTime(t *testing.T) {
	at := []float64{0.05, 0.13}
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		t.Run(m.Name(), func(t *testing.T) {
			prob := brussSensProblem(5, "band")
			prob.T0, prob.T1 = 0.2, 0
			loss, val := linLoss(at, 10)
			fixed := ode.FixedStep(0.2 / 16)
			g, err := ode.Gradient(context.Background(), prob, m, loss, ode.DiscreteAdjoint{Checkpoints: 3}, fixed)
			if err != nil {
				t.Fatal(err)
			}
			f := func(p ode.Problem[float64]) float64 { return solveLoss(t, p, m, at, val, fixed) }
			checkDirections(t, prob, g, f, 3, []float32{1.0 / 512, 1.0 / 512, 1.0 / 512}, 1e-8)
		})
	}
}

// TestDiscreteAdjointRosenbrockRunningCost: a running cost (the
// quadrature q beside u, with its row of W) and save times inside steps,
// on fixed steps, in the dense, band and sparse structures, and in the
// band one without JVP (J from Jac alone). The gradient agrees with
// central differences of the loss the gradient itself reports to 1e-8,
// and the structures with the dense one to 1e-10. The structured forward
// solves take q's row of W from Loss.RunningGradient: a difference of the
// running cost there left the loss smooth to √ε only, and its central
// differences off by 1e-6.
func TestDiscreteAdjointRosenbrockRunningCost(t *testing.T) {
	const N = 6
	at := []float64{0.33, 1}
	for _, m := range []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()} {
		var dense *ode.GradientResult[float64]
		for _, s := range []string{"dense", "band", "sparse", "band/noJVP"} {
			t.Run(m.Name()+"/"+s, func(t *testing.T) {
				prob := brussSensProblem(N, strings.TrimSuffix(s, "/noJVP"))
				if strings.HasSuffix(s, "/noJVP") {
					prob.JVP = nil
				}
				prob.T1 = 1
				loss, _ := linLoss(at, 2*N)
				loss.Running = func(u []float64, p []float32, tt float64) float64 {
					return float64(p[0]) * u[0] * u[0] * u[3] * math.Cos(tt)
				}
				loss.RunningGradient = func(du, dp, u []float64, p []float32, tt float64) {
					c := math.Cos(tt)
					du[0] += 2 * float64(p[0]) * u[0] * u[3] * c
					du[3] += float64(p[0]) * u[0] * u[0] * c
					dp[0] += u[0] * u[0] * u[3] * c
				}
				fixed := ode.FixedStep(1.0 / 16)
				gs, err := ode.NewGradientSolver(prob, m, ode.DiscreteAdjoint{}, fixed)
				if err != nil {
					t.Fatal(err)
				}
				g, err := gs.GradientFor(context.Background(), prob, loss)
				if err != nil {
					t.Fatal(err)
				}
				g = &ode.GradientResult[float64]{P: append([]float64(nil), g.P...), U0: append([]float64(nil), g.U0...)}
				if s == "dense" {
					dense = g
				} else if e := max(relNorm(g.P, dense.P), relNorm(g.U0, dense.U0)); e > 1e-10 {
					t.Errorf("%s differs from dense by %.2g, want ≤ 1e-10", s, e)
				}
				f := func(p ode.Problem[float64]) float64 {
					r, err := gs.GradientFor(context.Background(), p, loss)
					if err != nil {
						t.Fatal(err)
					}
					return r.Value
				}
				checkDirections(t, prob, g, f, 4, []float32{1.0 / 512, 1.0 / 512, 1.0 / 512}, 1e-8)
			})
		}
	}
}

// TestDiscreteAdjointRosenbrockU0From: θ sets the initial state through
// U0From; its gradient flows into dL/dθ.
func TestDiscreteAdjointRosenbrockU0From(t *testing.T) {
	prob := fvdpProblem()
	prob.P = append(prob.P, 2, -0.6)
	prob.U0From = func(u0 []float64, p []float32) { u0[0], u0[1] = float64(p[2]), float64(p[3]) }
	prob.U0FromVJP = func(dp, w []float64, p []float32) { dp[2] += w[0]; dp[3] += w[1] }
	at := []float64{0.2, 0.4}
	loss, val := linLoss(at, 2)
	fixed := ode.FixedStep(0.4 / 64)
	g, err := ode.Gradient(context.Background(), prob, ode.Rodas5P(), loss, ode.DiscreteAdjoint{}, fixed)
	if err != nil {
		t.Fatal(err)
	}
	f := func(p ode.Problem[float64]) float64 { return solveLoss(t, p, ode.Rodas5P(), at, val, fixed) }
	checkDirections(t, prob, g, f, 0, []float32{1, 1.0 / 64, 1.0 / 256, 1.0 / 256}, 1e-7)
}

// TestDiscreteAdjointRosenbrockAdaptive: on the adaptive solve of the
// 1-D Brusselator at N = 20 (t ∈ [0, 10]), DiscreteAdjoint through
// Rodas5P, band and sparse, agrees with InterpolatingAdjoint and with
// central differences of tight solves to 1e-5 relative in norm; the
// checkpointed gradient is the unchecked one to rounding.
func TestDiscreteAdjointRosenbrockAdaptive(t *testing.T) {
	const N = 20
	gpFD, guFD := brussCentral(t, N)
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}
	for _, s := range []string{"band", "sparse"} {
		prob := brussSensProblem(N, s)
		ia, err := ode.Gradient(ctx, prob, ode.Rodas5P(), brussSensLoss(), ode.InterpolatingAdjoint{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		iaP, iaU := append([]float64(nil), ia.P...), append([]float64(nil), ia.U0...)
		var plain *ode.GradientResult[float64]
		for _, ck := range []int{0, 8} {
			g, err := ode.Gradient(ctx, prob, ode.Rodas5P(), brussSensLoss(), ode.DiscreteAdjoint{Checkpoints: ck}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			eFD := max(relNorm(g.P, gpFD), relNorm(g.U0, guFD))
			eIA := max(relNorm(g.P, iaP), relNorm(g.U0, iaU))
			t.Logf("%s, checkpoints %d: against central differences %.2g, against InterpolatingAdjoint %.2g (%d steps)", s, ck, eFD, eIA, g.Forward.Accepted)
			if eFD > 1e-5 || eIA > 1e-5 {
				t.Errorf("%s, checkpoints %d: differs by %.2g from central differences, %.2g from InterpolatingAdjoint, want ≤ 1e-5", s, ck, eFD, eIA)
			}
			if ck == 0 {
				plain = &ode.GradientResult[float64]{P: append([]float64(nil), g.P...), U0: append([]float64(nil), g.U0...)}
			} else if e := max(relNorm(g.P, plain.P), relNorm(g.U0, plain.U0)); e > 1e-10 {
				t.Errorf("%s: checkpointed gradient differs by %.2g", s, e)
			}
		}
	}
}

// TestDiscreteAdjointRosenbrockAllocatesNothingWarm: a warm GradientSolver
// takes no allocation per gradient, with and without checkpoints, a
// running cost and save times inside steps.
func TestDiscreteAdjointRosenbrockAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		m  ode.Method
		s  string
		ck int
	}{{ode.Rodas5P(), "band", 0}, {ode.Rodas5P(), "sparse", 0}, {ode.Rodas5P(), "dense", 0},
		{ode.Rosenbrock23(), "band", 0}, {ode.Rodas5P(), "band", 6}, {ode.Rosenbrock23(), "sparse", 6},
		{ode.Rodas5PMethod{Linear: ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}}, "free", 0}} {
		t.Run(fmt.Sprintf("%v/%s/%d", c.m, c.s, c.ck), func(t *testing.T) {
			prob := brussSensProblem(10, c.s)
			gs, err := ode.NewGradientSolver(prob, c.m, ode.DiscreteAdjoint{Checkpoints: c.ck}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			θ := []float32{1, 3, 1}
			loss, _ := linLoss([]float64{2.5, 7.25, 10}, 20)
			loss.Running = func(u []float64, p []float32, _ float64) float64 { return u[0] * u[1] }
			loss.RunningGradient = func(du, dp, u []float64, p []float32, _ float64) { du[0] += u[1]; du[1] += u[0] }
			for range 2 {
				if _, err := gs.Gradient(ctx, θ, loss); err != nil {
					t.Fatal(err)
				}
			}
			a := testing.AllocsPerRun(5, func() {
				if _, err := gs.Gradient(ctx, θ, loss); err != nil {
					t.Fatal(err)
				}
			})
			if a != 0 {
				t.Errorf("%v allocations per warm gradient, want 0", a)
			}
		})
	}
}

// TestDiscreteAdjointRefusesWhatItLacks: BDF is an error that names it.
func TestDiscreteAdjointRefusesWhatItLacks(t *testing.T) {
	_, err := ode.NewGradientSolver(brussSensProblem(5, "band"), ode.BDF(), ode.DiscreteAdjoint{})
	if err == nil {
		t.Fatal("BDF: no error")
	}
	for _, w := range []string{"DiscreteAdjoint", "Rodas5P", "not BDF yet"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// TestDiscreteAdjointRosenbrockGMRES: with GMRES (matrix-free, with a
// band preconditioner or none) the forward stages are inexact, so the
// gradient is that of the step map with exact solves at the computed
// stages; the solves with Wᵀ are GMRES on VJPs. On fixed steps of the
// Brusselator it agrees with the band LU's to 1e-6 (the forward solves'
// tolerance), and on the adaptive solve with central differences of
// tight solves to 1e-5.
func TestDiscreteAdjointRosenbrockGMRES(t *testing.T) {
	const N = 20
	ctx := context.Background()
	pre := ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}
	at := []float64{0.7, 2}
	loss, _ := linLoss(at, 2*N)
	fixed := ode.FixedStep(2.0 / 40)
	for _, m := range []ode.Method{ode.Rodas5P(), ode.Rosenbrock23()} {
		band := brussSensProblem(N, "band")
		band.T1 = 2
		ref, err := ode.Gradient(ctx, band, m, loss, ode.DiscreteAdjoint{}, fixed)
		if err != nil {
			t.Fatal(err)
		}
		for _, ls := range []ode.GMRES{pre, {MaxRestarts: 20}} {
			mm := ode.Method(ode.Rodas5PMethod{Linear: ls})
			if m.Name() == "Rosenbrock23" {
				mm = ode.Rosenbrock23Method{Linear: ls}
			}
			prob := brussSensProblem(N, "free")
			prob.T1 = 2
			g, err := ode.Gradient(ctx, prob, mm, loss, ode.DiscreteAdjoint{}, fixed)
			if err != nil {
				t.Fatalf("%v: %v", mm, err)
			}
			e := max(relNorm(g.P, ref.P), relNorm(g.U0, ref.U0))
			t.Logf("%v, fixed steps: %.2g from band LU's; %d GMRES iterations on Wᵀ", mm, e, g.Backward.LinearIters)
			if e > 1e-6 {
				t.Errorf("%v: %.2g from the band LU's gradient, want ≤ 1e-6", mm, e)
			}
		}
	}
	gpFD, guFD := brussCentral(t, N)
	g, err := ode.Gradient(ctx, brussSensProblem(N, "free"), ode.Rodas5PMethod{Linear: pre}, brussSensLoss(), ode.DiscreteAdjoint{Checkpoints: 8}, ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6))
	if err != nil {
		t.Fatal(err)
	}
	e := max(relNorm(g.P, gpFD), relNorm(g.U0, guFD))
	t.Logf("adaptive, checkpointed: %.2g from central differences", e)
	if e > 1e-5 {
		t.Errorf("adaptive: %.2g from central differences, want ≤ 1e-5", e)
	}
}

// TestDiscreteAdjointRosenbrockFloat32: a float32 state (ε^⅓ ≈ 5e-3 in
// the J terms' differences): the gradient through Rodas5P, band, on
// fixed steps agrees with float64's to 1e-4.
func TestDiscreteAdjointRosenbrockFloat32(t *testing.T) {
	const N = 10
	ctx := context.Background()
	fixed := ode.FixedStep(2.0 / 40)
	b64 := brussSensProblem(N, "band")
	b64.T1 = 2
	l64 := brussSensLoss()
	l64.At = []float64{2}
	g64, err := ode.Gradient(ctx, b64, ode.Rodas5P(), l64, ode.DiscreteAdjoint{}, fixed)
	if err != nil {
		t.Fatal(err)
	}
	b := stiffprob.NewBruss1DParams[float32](N)
	prob := ode.Problem[float32]{F: b.F, U0: b.U0(), T0: 0, T1: 2, P: b.P(), JVP: b.JVP, VJP: b.VJP,
		Jac: b.JacBand, JacStructure: ode.BandJacobian{Lower: 2, Upper: 2}}
	loss := ode.Loss[float32]{At: []float64{2}, Point: func(_ int, _ float64, u, dl []float32) float64 {
		var g float64
		for i := 0; i < len(u); i += 2 {
			g += float64(u[i]) * float64(u[i]) / 2
			dl[i] = u[i]
		}
		return g
	}}
	g, err := ode.Gradient(ctx, prob, ode.Rodas5P(), loss, ode.DiscreteAdjoint{}, fixed)
	if err != nil {
		t.Fatal(err)
	}
	wide := func(x []float32) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
		}
		return y
	}
	e := max(relNorm(wide(g.P), g64.P), relNorm(wide(g.U0), g64.U0))
	t.Logf("float32 against float64: %.2g", e)
	if e > 1e-4 {
		t.Errorf("float32 gradient %.2g from float64's, want ≤ 1e-4", e)
	}
}

// BenchmarkDiscreteAdjointBruss500: the gradient of issue 28's loss on the
// 1-D Brusselator at N = 500 (1000 states), Rodas5P with a band
// Jacobian, rtol 1e-6, atol 1e-8, by DiscreteAdjoint and by
// InterpolatingAdjoint, beside the forward solve ("solve").
func BenchmarkDiscreteAdjointBruss500(b *testing.B) {
	ctx := context.Background()
	prob := brussSensProblem(500, "band")
	opts := []ode.GradientOption{ode.Tol(1e-6, 1e-8)}
	b.Run("solve", func(b *testing.B) {
		it, err := ode.NewIntegrator(prob, ode.Rodas5P(), ode.Tol(1e-6, 1e-8))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := it.Reinit(prob.U0, prob.T0, prob.T1, prob.P); err != nil {
				b.Fatal(err)
			}
			if err := it.Run(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		s    ode.Sensitivity
	}{{"discrete", ode.DiscreteAdjoint{}}, {"discrete-ckpt16", ode.DiscreteAdjoint{Checkpoints: 16}}, {"interpolating", ode.InterpolatingAdjoint{}}} {
		s := c.s
		b.Run(c.name, func(b *testing.B) {
			gs, err := ode.NewGradientSolver(prob, ode.Rodas5P(), s, opts...)
			if err != nil {
				b.Fatal(err)
			}
			loss := brussSensLoss()
			for b.Loop() {
				if _, err := gs.Gradient(ctx, prob.P, loss); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
