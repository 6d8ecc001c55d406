package ode_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products through events at state-dependent times. Two
// problems, each with exact derivatives of F, of the condition and of
// the effect:
//
//   - a threshold dose: N' = p₀ − (1 + t/5)·N, N(0) = 0; when N rises
//     through p₀/2, N += p₁. The dose is affine; F reads t, so the jump
//     map depends on τ through f±.
//   - the same dose on a clock: the condition N − p₀/2 + t/10 and the
//     dose p₁·(1 + t/10) read t, so ġ and the jump have their ∂/∂t terms.
//   - the bouncing ball: h' = v, v' = −g with (h, v)(0) = (10, 0) and
//     v ← −e·v at each impact, θ = (e, g), two impacts on [0, 5]. The
//     effect is bilinear in (v, e).
//
// The losses are Σ (u₀(t_i) − d_i)² at save times away from the firings.

func evDoseProblem() ode.Problem[float64] {
	c := func(t float64) float64 { return 1 + t/5 }
	vjp := func(du, dp, w, _ []float64, _ []float32, t float64) {
		du[0] -= c(t) * w[0]
		if dp != nil {
			dp[0] += w[0]
		}
	}
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, t float64) { du[0] = float64(p[0]) - c(t)*u[0] },
		U0: []float64{0}, T1: 4, P: []float32{2, 1},
		JVP: func(jv, _, v []float64, _ []float32, dp []float64, t float64) {
			jv[0] = -c(t) * v[0]
			if dp != nil {
				jv[0] += dp[0]
			}
		},
		VJP: vjp,
		VJPJVP: func(gu, gp, hu, hp, w, wd, u, _ []float64, p []float32, _ []float64, t float64) {
			vjp(gu, gp, w, u, p, t) // F is affine in (u, p): no second derivatives
			vjp(hu, hp, wd, u, p, t)
		},
		Jac: func(J []float64, _ []float64, _ []float32, t float64) { J[0] = -c(t) },
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, p []float32, _ float64) float64 { return u[0] - 0.5*float64(p[0]) },
			Direction: 1,
			Effect:    func(u []float64, p []float32, _ float64) bool { u[0] += float64(p[1]); return false },
			CondGrad: func(du, dp, _ []float64, _ []float32, _ float64) float64 {
				du[0]++
				if dp != nil {
					dp[0] -= 0.5
				}
				return 0
			},
			EffectJVP: doseP1JVP,
			EffectVJP: doseP1VJP,
		}},
	}
}

// evClockDoseProblem is evDoseProblem with a condition and a dose that
// read t.
func evClockDoseProblem() ode.Problem[float64] {
	prob := evDoseProblem()
	prob.Events = []ode.Event[float64]{{
		Cond:      func(u []float64, p []float32, t float64) float64 { return u[0] - 0.5*float64(p[0]) + t/10 },
		Direction: 1,
		Effect:    func(u []float64, p []float32, t float64) bool { u[0] += float64(p[1]) * (1 + t/10); return false },
		CondGrad: func(du, dp, _ []float64, _ []float32, _ float64) float64 {
			du[0]++
			if dp != nil {
				dp[0] -= 0.5
			}
			return 0.1
		},
		EffectJVP: func(jv, _, v []float64, p []float32, dp []float64, t, dt float64) {
			jv[0] = v[0] + float64(p[1])*dt/10
			if dp != nil {
				jv[0] += dp[1] * (1 + t/10)
			}
		},
		EffectVJP: func(du, dp, w, _ []float64, p []float32, t float64) float64 {
			du[0] += w[0]
			if dp != nil {
				dp[1] += w[0] * (1 + t/10)
			}
			return w[0] * float64(p[1]) / 10
		},
	}}
	return prob
}

func evBallProblem() ode.Problem[float64] {
	vjp := func(du, dp, w, _ []float64, _ []float32, _ float64) {
		du[1] += w[0]
		if dp != nil {
			dp[1] -= w[1]
		}
	}
	return ode.Problem[float64]{
		F:  func(du, u []float64, p []float32, _ float64) { du[0], du[1] = u[1], -float64(p[1]) },
		U0: []float64{10, 0}, T1: 5, P: []float32{0.8, 9.8},
		JVP: func(jv, _, v []float64, _ []float32, dp []float64, _ float64) {
			jv[0], jv[1] = v[1], 0
			if dp != nil {
				jv[1] = -dp[1]
			}
		},
		VJP: vjp,
		VJPJVP: func(gu, gp, hu, hp, w, wd, u, _ []float64, p []float32, _ []float64, t float64) {
			vjp(gu, gp, w, u, p, t)
			vjp(hu, hp, wd, u, p, t)
		},
		Jac: func(J []float64, _ []float64, _ []float32, _ float64) { J[0], J[1], J[2], J[3] = 0, 1, 0, 0 },
		Events: []ode.Event[float64]{{
			Cond:      func(u []float64, _ []float32, _ float64) float64 { return u[0] },
			Direction: -1,
			Effect:    func(u []float64, p []float32, _ float64) bool { u[1] *= -float64(p[0]); return false },
			CondGrad: func(du, _, _ []float64, _ []float32, _ float64) float64 {
				du[0]++
				return 0
			},
			EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, _, _ float64) {
				e := float64(p[0])
				jv[0], jv[1] = v[0], -e*v[1]
				if dp != nil {
					jv[1] -= u[1] * dp[0]
				}
			},
			EffectVJP: func(du, dp, w, u []float64, p []float32, _ float64) float64 {
				du[0] += w[0]
				du[1] -= float64(p[0]) * w[1]
				if dp != nil {
					dp[0] -= u[1] * w[1]
				}
				return 0
			},
		}},
	}
}

// evLoss is Σ (u₀(at_i) − data_i)² for a problem of n states.
func evLoss(n int, at, data []float64) ode.HvLoss[float64] {
	return ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: at,
		Point: func(i int, _ float64, u, dl []float64) float64 {
			r := u[0] - data[i]
			clear(dl[:n])
			dl[0] = 2 * r
			return r * r
		}},
		PointHv: func(_ int, _ float64, _, ud, hv []float64) { hv[0] = 2 * ud[0] },
	}
}

type evCase struct {
	name string
	prob ode.Problem[float64]
	loss ode.HvLoss[float64]
}

func evCases() []evCase {
	dose := evDoseProblem()
	run := evLoss(1, []float64{0.3, 1, 2, 3, 4}, []float64{0.4, 2.3, 1.6, 1.4, 1.2})
	// A running cost ∫ p₁·N² dt, whose integrand jumps at the dose.
	run.Running = func(u []float64, p []float32, _ float64) float64 { return float64(p[1]) * u[0] * u[0] }
	run.RunningGradient = func(du, dp, u []float64, p []float32, _ float64) {
		du[0] += 2 * float64(p[1]) * u[0]
		dp[1] += u[0] * u[0]
	}
	return []evCase{
		{"dose", dose, evLoss(1, []float64{0.3, 1, 2, 3, 4}, []float64{0.4, 2.3, 1.6, 1.4, 1.2})},
		{"dose running", dose, run},
		{"dose clock", evClockDoseProblem(), evLoss(1, []float64{0.3, 1, 2, 3, 4}, []float64{0.4, 2.3, 1.6, 1.4, 1.2})},
		{"ball", evBallProblem(), evLoss(2, []float64{1, 2, 3, 4, 5}, []float64{5, 5, 6, 3, 3})},
	}
}

// checkEvHv compares H·v along the unit vectors and five random
// directions with ref·v, relative to the largest entry of ref·v, and
// returns the worst.
func checkEvHv(t *testing.T, c evCase, m ode.Method, s ode.InterpolatingAdjoint, ref []float64, tol float64) float64 {
	t.Helper()
	ctx := context.Background()
	N := len(c.prob.P) + len(c.prob.U0)
	hs, err := ode.NewHvSolver(c.prob, m, s, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(31, uint64(N)))
	var dirs [][]float64
	for k := range N {
		e := make([]float64, N)
		e[k] = 1
		dirs = append(dirs, e)
	}
	for range 5 {
		v := make([]float64, N)
		for i := range v {
			v[i] = 2*rng.Float64() - 1
		}
		dirs = append(dirs, v)
	}
	worst := 0.0
	for _, v := range dirs {
		r, err := hs.HvFor(ctx, c.prob, c.loss, v)
		if err != nil {
			t.Fatal(err)
		}
		got := append(append([]float64(nil), r.HvP...), r.HvU0...)
		want := make([]float64, N)
		scale := 0.0
		for i := range N {
			for j := range N {
				want[i] += ref[i*N+j] * v[j]
			}
			scale = max(scale, math.Abs(want[i]))
		}
		for i := range N {
			e := math.Abs(got[i]-want[i]) / scale
			worst = max(worst, e)
			if e > tol {
				t.Errorf("%s, %s: (H·v)[%d] along %.3v = %.12g, want %.12g (%.2g of the column's max > %.0g)", c.name, m.Name(), i, v, got[i], want[i], e, tol)
			}
		}
	}
	t.Logf("%s, %s: worst %.2g of the column's max", c.name, m.Name(), worst)
	return worst
}

// H·v through the moving event times equals Richardson differences of
// InterpolatingAdjoint's gradient, with explicit and stiff methods, and
// the full Hessian is symmetric. Each τ̇ term of the jumps is needed:
// dropping λ'⁺τ̇, λ'⁻τ̇, (μ'⁺ − μ'⁻)τ̇ or f⁻τ̇ in the direction of the
// differences fails every case (by 6 % to 42 % of the column's max on
// the dose); τ̇ in their time step fails the three doses, whose F reads
// t (by 4 % on the dose); the running cost's jump or its rates fail
// "dose running"; the forward tangent's τ̇ terms fail every case.
func TestHvEventsMatchDifferences(t *testing.T) {
	for _, c := range evCases() {
		checkEvHessian(t, c, 1e-8)
	}
}

// checkEvHessian checks c's products with Tsit5, Vern7 and Rodas5P
// against Richardson differences of InterpolatingAdjoint's gradient
// (checkEvHv) and that Vern7's full Hessian is symmetric, both to tol
// relative.
func checkEvHessian(t *testing.T, c evCase, tol float64) {
	t.Helper()
	ref := pkDiffHessian(t, c.prob, c.loss)
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P()} {
		checkEvHv(t, c, m, ode.InterpolatingAdjoint{}, ref, tol)
	}
	N := len(c.prob.P) + len(c.prob.U0)
	H, err := ode.FullHessian(context.Background(), c.prob, ode.Vern7(), c.loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, x := range H {
		scale = max(scale, math.Abs(x))
	}
	asym := 0.0
	for i := range N {
		for j := range i {
			e := math.Abs(H[i*N+j]-H[j*N+i]) / scale
			asym = max(asym, e)
			if e > tol {
				t.Errorf("%s: H[%d][%d] = %.12g, H[%d][%d] = %.12g: not symmetric (%.2g of max|H|)", c.name, i, j, H[i*N+j], j, i, H[j*N+i], e)
			}
		}
	}
	t.Logf("%s: H's asymmetry %.2g of max|H|", c.name, asym)
}

// BDF, and Rodas5P with the augmented systems in a band structure or
// matrix-free with GMRES, go through the events too. (The ball's BDF
// solves start from a state component at 0 after each impact and at T1:
// TestBDFTightTolerances.)
func TestHvEventsStiffPaths(t *testing.T) {
	for _, c := range evCases() {
		ref := pkDiffHessian(t, c.prob, c.loss)
		checkEvHv(t, c, ode.BDF(), ode.InterpolatingAdjoint{}, ref, 1e-8)
		b := c
		b.prob.JacStructure, b.prob.Jac = ode.BandJacobian{Lower: 1, Upper: 1}, nil
		checkEvHv(t, b, ode.Rodas5P(), ode.InterpolatingAdjoint{}, ref, 1e-8)
		f := c
		f.prob.JacStructure, f.prob.Jac = ode.MatrixFreeJacobian{}, nil
		checkEvHv(t, f, ode.Rodas5PMethod{Linear: ode.GMRES{}}, ode.InterpolatingAdjoint{}, ref, 1e-8)
	}
}

// Loss.End at T1 is a save there, after the ball's impacts: H equals
// differences of the gradient of the same loss.
func TestHvEventsLossEnd(t *testing.T) {
	c := evCases()[3]
	end := c.loss
	end.End = func(_ float64, u, dl []float64) (float64, float64) {
		r := u[0] - 3
		dl[0], dl[1] = 2*r, 0
		return r * r, 2 * r * u[1]
	}
	end.EndHv = func(_ float64, _, ud, hv []float64) { hv[0] = 2 * ud[0] }
	c.loss = end
	ref := pkDiffHessian(t, c.prob, c.loss)
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		checkEvHv(t, c, m, ode.InterpolatingAdjoint{}, ref, 1e-8)
	}
}

// With FiniteDiff the conditions' and effects' derivatives are
// differences too.
func TestHvEventsFiniteDiff(t *testing.T) {
	c := evCases()[3]
	ref := pkDiffHessian(t, c.prob, c.loss)
	ev := c.prob.Events[0]
	c.prob.Events = []ode.Event[float64]{{Cond: ev.Cond, Direction: ev.Direction, Effect: ev.Effect}}
	checkEvHv(t, c, ode.Vern7(), ode.InterpolatingAdjoint{FiniteDiff: true}, ref, 1e-4)
}

// The Gauss–Newton product through the impacts equals Σᵢ SᵢᵀSᵢ·v from
// ForwardSensitivity, which jumps the sensitivities through the moving
// event times.
func TestHvEventsGaussNewton(t *testing.T) {
	ctx := context.Background()
	tol := ode.Tol(1e-10, 1e-12)
	prob := evBallProblem()
	loss := gnSquares([]float64{1, 2, 3, 4, 5}, [][]float64{{5, -3}, {5, 3}, {6, 1}, {3, -5}, {3, 5}})
	v := []float64{0.3, -0.7, 0.5, 1}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		r, err := ode.HessianVector(ctx, prob, m, loss, v, ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		got := append(append([]float64(nil), r.HvP...), r.HvU0...)
		want := gnBySens(t, prob, m, loss.Loss, v, tol)
		scale := 0.0
		for _, w := range want {
			scale = max(scale, math.Abs(w))
		}
		for k := range want {
			if e := math.Abs(got[k]-want[k]) / scale; e > 1e-8 {
				t.Errorf("%s: GN·v[%d] = %.12g, Σ SᵀS·v = %.12g (%.2g)", m.Name(), k, got[k], want[k], e)
			}
		}
	}
}

// Checkpoints end a segment at each firing; the products are those
// without them.
func TestHvEventsCheckpoints(t *testing.T) {
	ctx := context.Background()
	for _, c := range evCases() {
		N := len(c.prob.P) + len(c.prob.U0)
		v := make([]float64, N)
		for i := range v {
			v[i] = 0.3 + 0.2*float64(i)
		}
		for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
			want, err := ode.HessianVector(ctx, c.prob, m, c.loss, v, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			w := hvFlat(want)
			for _, b := range []int{1, 3} {
				got, err := ode.HessianVector(ctx, c.prob, m, c.loss, v, ode.InterpolatingAdjoint{Checkpoints: b}, ode.Tol(1e-10, 1e-12))
				if err != nil {
					t.Fatal(err)
				}
				if e := hvWorstRel(hvFlat(got), w, len(c.prob.P), len(c.prob.U0)); e > 1e-9 {
					t.Errorf("%s, %s, %d checkpoints: product %v, without checkpoints %v (%.2g)", c.name, m.Name(), b, hvFlat(got), w, e)
				}
			}
		}
	}
}

// Warm products through events allocate nothing.
func TestHvEventsAllocatesNothingWarm(t *testing.T) {
	ctx := context.Background()
	for _, c := range evCases() {
		for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
			hs, err := ode.NewHvSolver(c.prob, m, ode.InterpolatingAdjoint{}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			v := make([]float64, len(c.prob.P)+len(c.prob.U0))
			for i := range v {
				v[i] = 0.5 - 0.25*float64(i)
			}
			for range 3 {
				if _, err := hs.Hv(ctx, c.prob.P, c.loss, v); err != nil {
					t.Fatal(err)
				}
			}
			a := testing.AllocsPerRun(10, func() {
				if _, err := hs.Hv(ctx, c.prob.P, c.loss, v); err != nil {
					t.Fatal(err)
				}
			})
			if a != 0 {
				t.Errorf("%s, %s: %v allocations per warm product, want 0", c.name, m.Name(), a)
			}
		}
	}
}

// Events that fire together are refused with an error that says what
// was wanted (terminating events: TestHvTerminatingErrors).
func TestHvEventsErrors(t *testing.T) {
	ctx := context.Background()
	two := evBallProblem()
	two.Events = append(two.Events, two.Events[0])
	v := []float64{1, 0, 0, 0}
	loss := evLoss(2, []float64{1}, []float64{5})
	for _, tc := range []struct {
		name string
		prob ode.Problem[float64]
		want string
	}{
		{"together", two, "fire together"},
	} {
		_, err := ode.HessianVector(ctx, tc.prob, ode.Tsit5(), loss, v, ode.InterpolatingAdjoint{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// Ensemble.HessianVector goes through each trajectory's own impacts: its
// product is the sum of the trajectories', the same bits on any number
// of workers.
func TestHvEventsEnsemble(t *testing.T) {
	ens := ode.Ensemble[float64]{Base: evBallProblem(), N: 5, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) { p.U0[0] = 8 + 0.5*float64(i) }}
	checkHvEnsemble(t, ens, evLoss(2, []float64{1, 2, 3, 4, 5}, []float64{5, 5, 6, 3, 3}), []float64{0.3, -1})
}

// checkHvEnsemble checks that ens.HessianVector along v (the parameters
// only), with loss for every trajectory, is the sum of the trajectories'
// products, the same bits on one and two workers.
func checkHvEnsemble(t *testing.T, ens ode.Ensemble[float64], loss ode.HvLoss[float64], v []float64) {
	t.Helper()
	ctx := context.Background()
	lossFor := func(int) ode.HvLoss[float64] { return loss }
	tol := ode.Tol(1e-10, 1e-12)
	want := make([]float64, len(v))
	for i := range ens.N {
		prob := ens.Problem(i)
		full := append(append([]float64(nil), v...), make([]float64, len(prob.U0))...)
		h, err := ode.HessianVector(ctx, prob, ode.Tsit5(), loss, full, ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range h.HvP {
			want[k] += x
		}
	}
	var first []float64
	for _, w := range []int{1, 2} {
		h, err := ens.HessianVector(ctx, ode.Tsit5(), lossFor, v, ode.InterpolatingAdjoint{}, tol, ode.Workers(w))
		if err != nil {
			t.Fatal(err)
		}
		for k := range want {
			if e := math.Abs(h.HvP[k]-want[k]) / max(1, math.Abs(want[k])); e > 1e-12 {
				t.Errorf("workers %d: HvP[%d] = %.15g, the trajectories' sum %.15g (%.2g)", w, k, h.HvP[k], want[k], e)
			}
		}
		if first == nil {
			first = append([]float64(nil), h.HvP...)
		} else {
			for k := range first {
				if h.HvP[k] != first[k] {
					t.Errorf("workers %d: HvP[%d] = %v, one worker's %v", w, k, h.HvP[k], first[k])
				}
			}
		}
	}
}

// BenchmarkHvEventsBall times one product through the ball's two impacts
// beside InterpolatingAdjoint's gradient of the same loss, at rtol 1e-8.
func BenchmarkHvEventsBall(b *testing.B) {
	ctx := context.Background()
	c := evCases()[3]
	tol := ode.Tol(1e-8, 1e-10)
	b.Run("gradient", func(b *testing.B) {
		gs, err := ode.NewGradientSolver(c.prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gs.Gradient(ctx, c.prob.P, c.loss.Loss); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hv", func(b *testing.B) {
		hs, err := ode.NewHvSolver(c.prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			b.Fatal(err)
		}
		v := []float64{0.3, -0.7, 0.5, 1}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := hs.Hv(ctx, c.prob.P, c.loss, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
