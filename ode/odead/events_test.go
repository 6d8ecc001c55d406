package odead_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// evCond is g(u, p, t) = u0·u1 + p0·sin t − p1·u2², nonlinear in all three.
func evCond(u, p, t ad.Var) ad.Var {
	u0, u1, u2 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	return ad.Sub(ad.Add(ad.Mul(u0, u1), ad.Mul(ad.Slice(p, 0, 1), ad.Sin(t))), ad.Mul(ad.Slice(p, 1, 2), ad.Square(u2)))
}

// evEffect is a(u, p, t) = (u0 + p0, u1·exp(−p1·t), u2·u0).
func evEffect(u, p, t ad.Var) ad.Var {
	u0, u1, u2 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	decay := ad.Exp(ad.Neg(ad.Mul(ad.Slice(p, 1, 2), t)))
	return ad.Concat(0, ad.Add(u0, ad.Slice(p, 0, 1)), ad.Mul(u1, decay), ad.Mul(u2, u0))
}

// hybridProblem is a 3-state problem with the event of evCond and evEffect.
func hybridProblem[F ode.Float](t *testing.T) ode.Problem[F] {
	t.Helper()
	prob := ode.Problem[F]{F: func(du, u []F, _ []float32, _ float64) { clear(du) },
		U0: []F{0.7, -0.4, 0.9}, T0: 0.3, T1: 1, P: []float32{0.625, -0.375}}
	if err := odead.AddEvent(&prob, evCond, evEffect); err != nil {
		t.Fatal(err)
	}
	return prob
}

func randVec[F ode.Float](r *rand.Rand, n int) []F {
	v := make([]F, n)
	for i := range v {
		v[i] = F(r.Float64()*2 - 1)
	}
	return v
}

func dot[F ode.Float](a, b []F) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// near reports |got − want| ≤ tol·max(1, |want|).
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want)) }

// The condition's and the effect's derivatives against central differences
// in random directions of u and t (steps hu, ht) and along each parameter
// (a step of 2⁻¹⁰, exact in float32 for these p); the VJP against the
// JVP as its transpose.
func checkEventDerivs[F ode.Float](t *testing.T, hu, tol, tolT float64) {
	prob := hybridProblem[F](t)
	ev := prob.Events[0]
	r := rand.New(rand.NewPCG(29, 1))
	n, np := 3, 2
	const hp = 1.0 / 1024
	for trial := range 5 {
		u := randVec[F](r, n)
		p := []float32{float32(r.IntN(64)) / 64, float32(r.IntN(64)-32) / 64}
		tt := r.Float64()
		v, w := randVec[F](r, n), randVec[F](r, n)
		dt := r.Float64()*2 - 1

		// CondGrad: directional derivative in (u, t) and each ∂g/∂p_k.
		du, dp := make([]F, n), make([]F, np)
		gt := ev.CondGrad(du, dp, u, p, tt)
		up, um := make([]F, n), make([]F, n)
		for i := range u {
			up[i], um[i] = u[i]+F(hu)*v[i], u[i]-F(hu)*v[i]
		}
		fd := (ev.Cond(up, p, tt+hu*dt) - ev.Cond(um, p, tt-hu*dt)) / (2 * hu)
		if got := dot(du, v) + gt*dt; !near(got, fd, tol) {
			t.Errorf("trial %d: ∂g/∂u·v + ∂g/∂t·dt = %.10g, central differences %.10g", trial, got, fd)
		}
		for k := range np {
			pp, pm := append([]float32(nil), p...), append([]float32(nil), p...)
			pp[k] += hp
			pm[k] -= hp
			fd := (ev.Cond(u, pp, tt) - ev.Cond(u, pm, tt)) / (2 * hp)
			if !near(float64(dp[k]), fd, tolT) {
				t.Errorf("trial %d: ∂g/∂p%d = %.10g, central differences %.10g", trial, k, dp[k], fd)
			}
		}

		// EffectJVP along (v, 0, dt) against differences, and along e_k in p.
		apply := func(u []F, p []float32, t float64) []F {
			x := append([]F(nil), u...)
			ev.Effect(x, p, t)
			return x
		}
		jv := make([]F, n)
		ev.EffectJVP(jv, u, v, p, nil, tt, dt)
		ap, am := apply(up, p, tt+hu*dt), apply(um, p, tt-hu*dt)
		for i := range n {
			if fd := float64(ap[i]-am[i]) / (2 * hu); !near(float64(jv[i]), fd, tol) {
				t.Errorf("trial %d: EffectJVP[%d] = %.10g, central differences %.10g", trial, i, jv[i], fd)
			}
		}
		for k := range np {
			ek := make([]F, np)
			ek[k] = 1
			ev.EffectJVP(jv, u, make([]F, n), p, ek, tt, 0)
			pp, pm := append([]float32(nil), p...), append([]float32(nil), p...)
			pp[k] += hp
			pm[k] -= hp
			ap, am := apply(u, pp, tt), apply(u, pm, tt)
			for i := range n {
				if fd := float64(ap[i]-am[i]) / (2 * hp); !near(float64(jv[i]), fd, tolT) {
					t.Errorf("trial %d: ∂a%d/∂p%d = %.10g, central differences %.10g", trial, i, k, jv[i], fd)
				}
			}
		}

		// The transpose: wᵀ(J·(v, dp, dt)) = (wᵀJ_u)·v + (wᵀJ_p)·dp + (wᵀJ_t)·dt.
		dpv := randVec[F](r, np)
		ev.EffectJVP(jv, u, v, p, dpv, tt, dt)
		wu, wp := make([]F, n), make([]F, np)
		wt := ev.EffectVJP(wu, wp, w, u, p, tt)
		lhs, rhs := dot(w, jv), dot(wu, v)+dot(wp, dpv)+wt*dt
		if !near(lhs, rhs, tol/100) {
			t.Errorf("trial %d: wᵀ·JVP = %.12g, VJP·(v, dp, dt) = %.12g", trial, lhs, rhs)
		}
		// The VJP adds, and with dp nil leaves the parameters out.
		wu2 := append([]F(nil), wu...)
		if wt2 := ev.EffectVJP(wu2, nil, w, u, p, tt); wt2 != wt {
			t.Errorf("trial %d: EffectVJP's ∂/∂t is %v with dp, %v without", trial, wt, wt2)
		}
		for i := range wu {
			if !near(float64(wu2[i]), 2*float64(wu[i]), tol/100) {
				t.Errorf("trial %d: EffectVJP does not add into du: %v after %v", trial, wu2, wu)
			}
		}
	}
}

func TestEventDerivs64(t *testing.T) { checkEventDerivs[float64](t, 1e-6, 1e-8, 1e-5) }
func TestEventDerivs32(t *testing.T) { checkEventDerivs[float32](t, 1.0/64, 2e-3, 2e-3) }

// A solve with an event added by AddEvent: the dosing test of SciML (issue
// 29), N' = p0 − N, add p1 when N crosses 3p0/4: N(10) = 100.00453999297625.
func TestAddEventSolvesDosing(t *testing.T) {
	prob, err := odead.Problem(func(u, p ad.Var, _ float64) ad.Var { return ad.Sub(ad.Slice(p, 0, 1), u) },
		[]float64{0}, 0, 10, []float32{100, 50})
	if err != nil {
		t.Fatal(err)
	}
	cond := func(u, p, _ ad.Var) ad.Var { return ad.Sub(u, ad.Scale(ad.Slice(p, 0, 1), 0.75)) }
	dose := func(u, p, _ ad.Var) ad.Var { return ad.Add(u, ad.Slice(p, 1, 2)) }
	if err := odead.AddEvent(&prob, cond, dose, odead.Direction(+1)); err != nil {
		t.Fatal(err)
	}
	sol, err := ode.Solve(context.Background(), prob, ode.Vern7(), ode.Tol(1e-12, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sol.U[len(sol.U)-1][0], 100.00453999297625; !near(got, want, 1e-9) {
		t.Errorf("N(10) = %.15g, want %.15g", got, want)
	}
	if err := prob.Err(); err != nil {
		t.Errorf("Err() = %v after a good solve", err)
	}
}

// A schedule whose times come from the parameters: the effect's derivatives
// and TimesFromJac against differences.
func TestAddScheduleTimesFrom(t *testing.T) {
	prob := ode.Problem[float64]{F: func(du, u []float64, _ []float32, _ float64) { clear(du) },
		U0: []float64{1, 2}, T1: 10, P: []float32{1.5, 0.5}}
	times := func(p ad.Var) ad.Var {
		t0 := ad.Slice(p, 0, 1)
		return ad.Concat(0, t0, ad.Add(t0, ad.Square(ad.Slice(p, 1, 2))), ad.Mul(t0, ad.Exp(ad.Slice(p, 1, 2))))
	}
	dose := func(u, p, _ ad.Var) ad.Var { return ad.Add(u, ad.Mul(ad.Slice(p, 1, 2), ad.Square(u))) }
	if err := odead.AddSchedule(&prob, make([]float64, 3), dose, odead.TimesFrom(times)); err != nil {
		t.Fatal(err)
	}
	s := prob.Schedules[0]
	p := prob.P
	ts := make([]float64, 3)
	s.TimesFrom(ts, p)
	want := []float64{1.5, 1.75, 1.5 * math.Exp(0.5)}
	for i := range ts {
		if !near(ts[i], want[i], 1e-7) {
			t.Errorf("ts = %v, want %v", ts, want)
		}
	}
	J := make([]float64, 6)
	s.TimesFromJac(J, p)
	wantJ := []float64{1, 0, 1, 2 * 0.5, math.Exp(0.5), 1.5 * math.Exp(0.5)}
	for i := range J {
		if !near(J[i], wantJ[i], 1e-7) {
			t.Errorf("TimesFromJac = %v, want %v", J, wantJ)
			break
		}
	}
	// The effect: a = u + p1·u², ∂a/∂u = 1 + 2p1·u, ∂a/∂p1 = u².
	jv := make([]float64, 2)
	s.EffectJVP(jv, []float64{1, 2}, []float64{1, -1}, p, []float64{0, 1}, 0, 0)
	if wantJV := []float64{2 + 1, -(1 + 2) + 4}; !near(jv[0], wantJV[0], 1e-12) || !near(jv[1], wantJV[1], 1e-12) {
		t.Errorf("EffectJVP = %v, want %v", jv, wantJV)
	}
}

// AddEvent reports a condition of the wrong size up front, naming it, and
// leaves the problem as it was; a failure in a solve reaches Err.
func TestAddEventErrors(t *testing.T) {
	prob := ode.Problem[float64]{F: func(du, u []float64, _ []float32, _ float64) { clear(du) },
		U0: []float64{1, 2}, T1: 1, P: []float32{1}}
	err := odead.AddEvent(&prob, func(u, _, _ ad.Var) ad.Var { return u }, nil)
	if err == nil || !strings.Contains(err.Error(), "Problem.Events[0].Cond") || !strings.Contains(err.Error(), "want 1") {
		t.Errorf("AddEvent with a condition of 2 values: error %v, want one naming Problem.Events[0].Cond and 1 value", err)
	}
	if len(prob.Events) != 0 || prob.Err != nil {
		t.Errorf("a failed AddEvent changed the problem: %d events, Err set %v", len(prob.Events), prob.Err != nil)
	}
	err = odead.AddSchedule(&prob, []float64{0.5}, func(u, _, _ ad.Var) ad.Var { return ad.Slice(u, 0, 1) })
	if err == nil || !strings.Contains(err.Error(), "Problem.Schedules[0].Effect") {
		t.Errorf("AddSchedule with an effect of 1 value for 2 states: error %v, want one naming Problem.Schedules[0].Effect", err)
	}
	// A condition that fails only for some u: the solve ends with its error.
	bad := func(u, _, _ ad.Var) ad.Var {
		if u.Data64()[0] < 0.5 {
			return u // two values: an error
		}
		return ad.Slice(u, 0, 1)
	}
	prob.F = func(du, u []float64, _ []float32, _ float64) { du[0], du[1] = -1, 0 }
	if err := odead.AddEvent(&prob, bad, nil); err != nil {
		t.Fatal(err)
	}
	_, err = ode.Solve(context.Background(), prob, ode.Tsit5())
	if err == nil || !strings.Contains(err.Error(), "Problem.Events[0].Cond") {
		t.Errorf("a solve whose condition fails: error %v, want one naming Problem.Events[0].Cond", err)
	}
}
