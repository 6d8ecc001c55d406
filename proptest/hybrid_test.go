package proptest_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"github.com/flatkit/flatkit/proptest"
)

// Random hybrid problems: an ad-written right-hand side with an event that
// crosses inside the span and resets a state, sometimes a dose at a known
// time. Every sensitivity method that differentiates through them agrees
// with central differences of the solve to 1e-6, leaving out directions
// along which an event time crosses a save time.
func TestHybridGradientsOfRandomProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.HybridCases().Draw(t, "case")
		prob, err := c.Problem()
		if err != nil {
			t.Fatal(err)
		}
		m := []ode.Method{ode.Tsit5(), ode.Vern7()}[rapid.IntRange(0, 1).Draw(t, "method")]
		proptest.CheckHybridGradient(t, prob, m, proptest.Loss[float64](c.ODECase))
	})
}

// dosing is the dosing problem of issue 29 with the level a parameter of
// its own: N' = p0 − N, N(0) = 0; when N rises through 1.5·p1, N += p1.
// At p = (100, 50) the dose comes at τ = ln 4.
func dosing(t *testing.T) ode.Problem[float64] {
	t.Helper()
	prob, err := odead.Problem(func(u, p ad.Var, _ float64) ad.Var { return ad.Sub(ad.Slice(p, 0, 1), u) },
		[]float64{0}, 0, 3, []float32{100, 50})
	if err != nil {
		t.Fatal(err)
	}
	cond := func(u, p, _ ad.Var) ad.Var { return ad.Sub(u, ad.Scale(ad.Slice(p, 1, 2), 1.5)) }
	dose := func(u, p, _ ad.Var) ad.Var { return ad.Add(u, ad.Slice(p, 1, 2)) }
	if err := odead.AddEvent(&prob, cond, dose, odead.Direction(+1)); err != nil {
		t.Fatal(err)
	}
	return prob
}

// dosingLoss is Σ N(t_i)² / 2 over at.
func dosingLoss(at ...float64) ode.Loss[float64] {
	return ode.Loss[float64]{At: at, Point: func(_ int, _ float64, u, dl []float64) float64 {
		dl[0] = u[0]
		return u[0] * u[0] / 2
	}}
}

// logRecorder is a recorder that keeps the log lines too.
type logRecorder struct {
	recorder
	logs []string
}

func (r *logRecorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func runLogged(check func(proptest.T)) (r *logRecorder) {
	r = &logRecorder{}
	defer func() {
		if p := recover(); p != nil && p != &r.recorder {
			panic(p)
		}
	}()
	check(r)
	return r
}

// The checker passes the dosing problem, and catches an effect whose
// derivative in p is 1 % off (the methods then disagree with the
// differences of the solve, which use Effect itself).
func TestCheckHybridGradientDosing(t *testing.T) {
	prob := dosing(t)
	loss := dosingLoss(0.5, 2, 3)
	proptest.CheckHybridGradient(t, prob, ode.Tsit5(), loss)

	wrong := prob
	wrong.Events = append([]ode.Event[float64](nil), prob.Events...)
	jvp, vjp := prob.Events[0].EffectJVP, prob.Events[0].EffectVJP
	wrong.Events[0].EffectJVP = func(jv, u, v []float64, p []float32, dp []float64, t, dt float64) {
		jvp(jv, u, v, p, dp, t, dt)
		if dp != nil {
			jv[0] += 0.01 * dp[1]
		}
	}
	wrong.Events[0].EffectVJP = func(du, dp, w, u []float64, p []float32, t float64) float64 {
		if dp != nil {
			dp[1] += 0.01 * w[0]
		}
		return vjp(du, dp, w, u, p, t)
	}
	r := runLogged(func(rt proptest.T) { proptest.CheckHybridGradient(rt, wrong, ode.Tsit5(), loss) })
	if len(r.errors) == 0 || !strings.Contains(strings.Join(r.errors, "\n"), "central differences of the solve differ") {
		t.Errorf("an effect's ∂a/∂p 1 %% off: errors %q, want the methods named against the differences", r.errors)
	}
}

// A save time 10⁻⁷ after the dose: along p the perturbed doses cross it
// even at the smallest retried steps (dτ/dp = (−0.03, 0.06), steps 2⁻³
// and 2⁻⁴, then 16, 256 and 4096 times smaller), so the p coordinates
// are left out with a log line; along u0 (dτ/du0 = −0.01, the step 2⁻¹⁰)
// the retry 256 times smaller no longer crosses, and u0 is checked.
func TestCheckHybridGradientLeavesOutCrossings(t *testing.T) {
	prob := dosing(t)
	r := runLogged(func(rt proptest.T) {
		proptest.CheckHybridGradient(rt, prob, ode.Tsit5(), dosingLoss(math.Log(4)+1e-7, 3))
	})
	if len(r.errors) != 0 {
		t.Errorf("errors: %q", r.errors)
	}
	logs := strings.Join(r.logs, "\n")
	for _, want := range []string{"p[0] left out", "p[1] left out", "crosses a save time"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs %q lack %q", r.logs, want)
		}
	}
	if strings.Contains(logs, "u0[0] left out") {
		t.Errorf("u0[0] was left out: %q", r.logs)
	}
}
