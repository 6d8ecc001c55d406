package ode_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// A one-compartment PK model, u' = −k·u, with doses at fixed times
// 1 and 2.5. The linear dose is u += D, θ = (k, D); the nonlinear one is
// u ← u·e^(−c) + D/(1 + u), θ = (k, D, c), whose derivatives depend on
// both u and θ. The loss is Σ (u(t_i) − d_i)² at save times between and
// at the doses: a save at 2.5 sees the state before that dose.

var (
	pkDoses = []float64{1, 2.5}
	pkAt    = []float64{0.5, 1.5, 2, 2.5, 3, 3.75}
	pkData  = []float64{0.6, 2.1, 1.5, 1.0, 2.4, 1.7}
)

func pkF(du, u []float64, p []float32, _ float64) { du[0] = -float64(p[0]) * u[0] }

func pkJVP(jv, u, v []float64, p []float32, dp []float64, _ float64) {
	jv[0] = -float64(p[0]) * v[0]
	if dp != nil {
		jv[0] -= dp[0] * u[0]
	}
}

func pkVJP(gu, gp, w, u []float64, p []float32, _ float64) {
	gu[0] -= float64(p[0]) * w[0]
	if gp != nil {
		gp[0] -= u[0] * w[0]
	}
}

func pkVJPJVP(gu, gp, hu, hp, w, wd, u, ud []float64, p []float32, pd []float64, t float64) {
	pkVJP(gu, gp, w, u, p, t)
	pkVJP(hu, hp, wd, u, p, t)
	hp[0] -= ud[0] * w[0]
	if pd != nil {
		hu[0] -= pd[0] * w[0]
	}
}

// pkLinearDose is the schedule u += D = p[1].
func pkLinearDose() ode.Schedule[float64] {
	return ode.Schedule[float64]{Times: pkDoses,
		Effect: func(u []float64, p []float32, _ float64) bool {
			u[0] += float64(p[1])
			return false
		},
		EffectJVP: func(jv, _, v []float64, _ []float32, dp []float64, _, _ float64) {
			jv[0] = v[0]
			if dp != nil {
				jv[0] += dp[1]
			}
		},
		EffectVJP: func(du, dp, w, _ []float64, _ []float32, _ float64) float64 {
			du[0] += w[0]
			if dp != nil {
				dp[1] += w[0]
			}
			return 0
		},
	}
}

// pkNonlinearDose is the schedule u ← u·e^(−c) + D/(1 + u), (D, c) =
// (p[1], p[2]).
func pkNonlinearDose() ode.Schedule[float64] {
	return ode.Schedule[float64]{Times: pkDoses,
		Effect: func(u []float64, p []float32, _ float64) bool {
			u[0] = u[0]*math.Exp(-float64(p[2])) + float64(p[1])/(1+u[0])
			return false
		},
		EffectJVP: func(jv, u, v []float64, p []float32, dp []float64, _, _ float64) {
			e, D, x := math.Exp(-float64(p[2])), float64(p[1]), u[0]
			jv[0] = (e - D/((1+x)*(1+x))) * v[0]
			if dp != nil {
				jv[0] += dp[1]/(1+x) - x*e*dp[2]
			}
		},
		EffectVJP: func(du, dp, w, u []float64, p []float32, _ float64) float64 {
			e, D, x := math.Exp(-float64(p[2])), float64(p[1]), u[0]
			du[0] += (e - D/((1+x)*(1+x))) * w[0]
			if dp != nil {
				dp[1] += w[0] / (1 + x)
				dp[2] -= x * e * w[0]
			}
			return 0
		},
	}
}

func pkProblem(nonlinear bool) ode.Problem[float64] {
	prob := ode.Problem[float64]{F: pkF, JVP: pkJVP, VJP: pkVJP, VJPJVP: pkVJPJVP,
		U0: []float64{1}, T0: 0, T1: 4, P: []float32{0.75, 2}}
	s := pkLinearDose()
	if nonlinear {
		prob.P = []float32{0.75, 2, 0.25}
		s = pkNonlinearDose()
	}
	prob.Schedules = []ode.Schedule[float64]{s}
	return prob
}

// pkRunningLoss adds the running cost ∫ D·u² dt, whose second
// derivatives HvSolver takes by differences of its gradient.
func pkRunningLoss() ode.HvLoss[float64] {
	l := pkLoss()
	l.Running = func(u []float64, p []float32, _ float64) float64 { return float64(p[1]) * u[0] * u[0] }
	l.RunningGradient = func(du, dp, u []float64, p []float32, _ float64) {
		du[0] += 2 * float64(p[1]) * u[0]
		dp[1] += u[0] * u[0]
	}
	return l
}

func pkLoss() ode.HvLoss[float64] { return pkLossAt(pkAt, pkData) }

// pkLossAt is Σ (u(at_i) − data_i)².
func pkLossAt(at, data []float64) ode.HvLoss[float64] {
	return ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: at,
		Point: func(i int, _ float64, u, dl []float64) float64 {
			r := u[0] - data[i]
			dl[0] = 2 * r
			return r * r
		}},
		PointHv: func(_ int, _ float64, _, ud, hv []float64) { hv[0] = 2 * ud[0] },
	}
}

// pkClosedHessian is the Hessian of the linear model's loss in (k, D, u0):
// u(t) = u0·e^(−kt) + D·Σ_{t_j < t} e^(−k(t−t_j)).
func pkClosedHessian(doses, at, data []float64, k, D, u0 float64) []float64 {
	H := make([]float64, 9)
	for i, t := range at {
		e0 := math.Exp(-k * t)
		u, uk, uD := u0*e0, -u0*t*e0, 0.0
		ukk, ukD, uku0 := u0*t*t*e0, 0.0, -t*e0
		for _, tj := range doses {
			if tj >= t {
				continue
			}
			s := t - tj
			e := math.Exp(-k * s)
			u += D * e
			uk -= D * s * e
			uD += e
			ukk += D * s * s * e
			ukD -= s * e
		}
		g := []float64{uk, uD, e0}
		h := []float64{ukk, ukD, uku0, ukD, 0, 0, uku0, 0, 0}
		r := u - data[i]
		for a := range 3 {
			for b := range 3 {
				H[a*3+b] += 2 * (g[a]*g[b] + r*h[a*3+b])
			}
		}
	}
	return H
}

// pkDiffHessian is the Hessian in (θ, u0) by Richardson-extrapolated
// central differences (steps 2^-9 and 2^-10, exact in float32 for these
// θ) of the gradient of InterpolatingAdjoint, which differentiates
// through schedules.
func pkDiffHessian(t *testing.T, prob ode.Problem[float64], loss ode.HvLoss[float64]) []float64 {
	t.Helper()
	ctx := context.Background()
	gs, err := ode.NewGradientSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, ode.Tol(1e-12, 1e-14))
	if err != nil {
		t.Fatal(err)
	}
	np := len(prob.P)
	N := np + len(prob.U0)
	grad := func(k int, s float64) []float64 {
		q := prob
		q.P, q.U0 = append([]float32(nil), prob.P...), append([]float64(nil), prob.U0...)
		if k < np {
			q.P[k] = float32(float64(q.P[k]) + s)
		} else {
			q.U0[k-np] += s
		}
		g, err := gs.GradientFor(ctx, q, loss.Loss)
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]float64(nil), g.P...), g.U0...)
	}
	H := make([]float64, N*N)
	for k := range N {
		copy(H[k*N:], richardsonColumn(func(s float64) []float64 { return grad(k, s) }))
	}
	return H
}

// checkPKHv compares products along the unit vectors and along three
// mixed directions with H·v from the reference Hessian, relative to
// max|H|.
func checkPKHv(t *testing.T, prob ode.Problem[float64], loss ode.HvLoss[float64], m ode.Method, s ode.InterpolatingAdjoint, ref []float64, tol float64) {
	t.Helper()
	ctx := context.Background()
	N := len(prob.P) + 1
	hs, err := ode.NewHvSolver(prob, m, s, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, v := range ref {
		scale = max(scale, math.Abs(v))
	}
	dirs := [][]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1},
		{0.3, -1, 0.5, 0.7}, {-1, 0.25, 1, -0.5}, {0.5, 0.5, -0.75, 1}}
	worst := 0.0
	for _, d := range dirs {
		v := append([]float64(nil), d[:N-1]...)
		v = append(v, d[3])
		r, err := hs.HvFor(ctx, prob, loss, v)
		if err != nil {
			t.Fatal(err)
		}
		got := append(append([]float64(nil), r.HvP...), r.HvU0...)
		for i := range N {
			want := 0.0
			for j := range N {
				want += ref[i*N+j] * v[j]
			}
			e := math.Abs(got[i]-want) / scale
			worst = max(worst, e)
			if e > tol {
				t.Errorf("%s: (H·v)[%d] along %v = %.12g, want %.12g (%.2g of max|H| > %.0g)", m.Name(), i, v, got[i], want, e, tol)
			}
		}
	}
	t.Logf("%s: worst %.2g of max|H| = %.3g", m.Name(), worst, scale)
}

// The linear PK model's Hessian equals its closed form and central
// differences of the gradient; products along several directions match
// it with explicit and stiff methods.
//
// The bound 1e-10 is tight enough to catch a backward segment below a
// dose that reads the state after it at the dose time (1.9e-9 with
// Tsit5). Doses at T0 and T1 change the initial state after it is saved
// and nothing the loss sees; save times at T0, at doses and at T1 see the
// state before the dose.
func TestHvScheduleLinearPK(t *testing.T) {
	for _, c := range []struct{ doses, at, data []float64 }{
		{pkDoses, pkAt, pkData},
		{[]float64{0, 1, 2.5, 4}, []float64{0, 0.5, 1, 2.5, 4}, []float64{0.6, 2.1, 1.5, 1.0, 2.4}},
	} {
		prob := pkProblem(false)
		prob.Schedules[0].Times = c.doses
		loss := pkLossAt(c.at, c.data)
		ref := pkDiffHessian(t, prob, loss)
		closed := pkClosedHessian(c.doses, c.at, c.data, float64(prob.P[0]), float64(prob.P[1]), prob.U0[0])
		for i := range closed {
			if e := math.Abs(ref[i]-closed[i]) / max(1, math.Abs(closed[i])); e > 1e-7 {
				t.Errorf("doses at %v: differences of the gradient H[%d] = %.12g, closed form %.12g (%.2g)", c.doses, i, ref[i], closed[i], e)
			}
		}
		for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P()} {
			checkPKHv(t, prob, loss, m, ode.InterpolatingAdjoint{}, closed, 1e-10)
		}
	}
}

// The nonlinear dose exercises the derivative of the jump's transpose
// along (ṡ, v_θ), in u and in θ (without it the products are off by 98 %
// of max|H|; with one pair of float32 steps in θ instead of the
// extrapolated two, by 3.6e-6; with those steps rounded unevenly about θ,
// by 2.2e-9), and the Hessian is symmetric. With FiniteDiff the effect's
// products are differences too.
func TestHvScheduleNonlinearDose(t *testing.T) {
	prob := pkProblem(true)
	ref := pkDiffHessian(t, prob, pkLoss())
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P(), ode.BDF()} {
		checkPKHv(t, prob, pkLoss(), m, ode.InterpolatingAdjoint{}, ref, 1e-8)
	}
	H, err := ode.FullHessian(context.Background(), prob, ode.Vern7(), pkLoss(), ode.InterpolatingAdjoint{}, ode.Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		for j := range i {
			if e := math.Abs(H[i*4+j] - H[j*4+i]); e > 1e-9 {
				t.Errorf("H[%d][%d] = %.12g, H[%d][%d] = %.12g: not symmetric (%.2g)", i, j, H[i*4+j], j, i, H[j*4+i], e)
			}
		}
	}
	band := prob // the augmented systems in a band structure
	band.JacStructure = ode.BandJacobian{}
	checkPKHv(t, band, pkLoss(), ode.Rodas5P(), ode.InterpolatingAdjoint{}, ref, 1e-8)
	fd := prob
	fd.Schedules = []ode.Schedule[float64]{{Times: pkDoses, Effect: prob.Schedules[0].Effect}}
	checkPKHv(t, fd, pkLoss(), ode.Vern7(), ode.InterpolatingAdjoint{FiniteDiff: true}, ref, 1e-4)
	// A running cost: its integrand reads u⁻ below a dose and u⁺ above.
	run := pkRunningLoss()
	checkPKHv(t, prob, run, ode.Tsit5(), ode.InterpolatingAdjoint{}, pkDiffHessian(t, prob, run), 1e-8)
}

// Checkpoints end a segment at each dose; the products are those without
// them.
func TestHvScheduleCheckpoints(t *testing.T) {
	ctx := context.Background()
	prob := pkProblem(true)
	v := []float64{0.3, -1, 0.5, 0.7}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		want, err := ode.HessianVector(ctx, prob, m, pkLoss(), v, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
		if err != nil {
			t.Fatal(err)
		}
		w := hvFlat(want)
		for _, b := range []int{1, 3} {
			got, err := ode.HessianVector(ctx, prob, m, pkLoss(), v, ode.InterpolatingAdjoint{Checkpoints: b}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			e := hvWorstRel(hvFlat(got), w, 3, 1)
			t.Logf("%s, %d checkpoints: %.2g from the product without them", m.Name(), b, e)
			if e > 1e-9 {
				t.Errorf("%s, %d checkpoints: product %v, without checkpoints %v (%.2g)", m.Name(), b, hvFlat(got), w, e)
			}
		}
	}
}

// Warm products through schedules allocate nothing.
func TestHvScheduleAllocatesNothingWarm(t *testing.T) {
	checkHvWarmAllocsPaths(t, pkProblem(true), pkLoss(), []float64{0.3, -1, 0.5, 0.7})
}

// Events and schedules without their derivatives, and save times after a
// terminating firing, are refused with errors that say what was wanted.
func TestHvScheduleErrors(t *testing.T) {
	ctx := context.Background()
	v := []float64{1, 0, 0}
	ev := pkProblem(false)
	ev.Events = []ode.Event[float64]{{G: func(u []float64, _ float64) float64 { return u[0] - 0.5 },
		Affect: func(u []float64, _ float64) bool { return false }}}
	term := pkProblem(false)
	eff := term.Schedules[0].Effect
	term.Schedules[0].Effect = func(u []float64, p []float32, t float64) bool {
		eff(u, p, t)
		return t > 2
	}
	noVJP := pkProblem(false)
	noVJP.Schedules[0].EffectVJP = nil
	for _, tc := range []struct {
		name string
		prob ode.Problem[float64]
		want string
	}{
		{"events", ev, "Problem.Events[0].CondGrad is nil"},
		{"terminating before saves", term, "where a terminating event ended the solve"},
		{"no EffectVJP", noVJP, "Problem.Schedules[0].EffectVJP is nil"},
	} {
		_, err := ode.HessianVector(ctx, tc.prob, ode.Tsit5(), pkLoss(), v, ode.InterpolatingAdjoint{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// A solver made without schedules refuses a problem with them.
	plain := pkProblem(false)
	plain.Schedules = nil
	hs, err := ode.NewHvSolver(plain, ode.Tsit5(), ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.HvFor(ctx, pkProblem(false), pkLoss(), v); err == nil || !strings.Contains(err.Error(), "want none as when the solver was made") {
		t.Errorf("schedules on a solver made without: error %v", err)
	}
}

// Ensemble.HessianVector goes through each subject's own dose times: its
// product is the sum of the trajectories', the same bits on any number
// of workers.
func TestHvScheduleEnsemble(t *testing.T) {
	base := pkProblem(true)
	ens := ode.Ensemble[float64]{Base: base, N: 5, ShardSize: 2,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] = 1 + 0.1*float64(i)
			s := p.Schedules[0]
			s.Times = []float64{1 + 0.1*float64(i), 2.5}
			p.Schedules = []ode.Schedule[float64]{s}
		}}
	checkHvEnsemble(t, ens, pkLoss(), []float64{0.3, -1, 0.5})
}

// BenchmarkHvSchedulePK times one product through the nonlinear doses
// beside InterpolatingAdjoint's gradient of the same loss, at rtol 1e-8.
func BenchmarkHvSchedulePK(b *testing.B) {
	benchHvPK(b, pkProblem(true), []float64{0.3, -1, 0.5, 0.7})
}
