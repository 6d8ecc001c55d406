package proptest_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/proptest"
)

// Random problems: DiscreteAdjoint equals finite differences of the same
// fixed-step solve to 1e-6, and the other methods agree with
// DiscreteAdjoint of the adaptive solve to 10× the tolerance at rtol 1e-8.
func TestODEGradientsOfRandomProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.ODECases().Draw(t, "case")
		m := []ode.Method{ode.Tsit5(), ode.Vern7(), ode.DP5()}[rapid.IntRange(0, 2).Draw(t, "method")]
		proptest.CheckODEGradient(t, c.Problem64(), m, proptest.Loss[float64](c), proptest.ODEGradCheck{})
	})
}

// Stiff methods: ForwardSensitivity and InterpolatingAdjoint (with and
// without checkpoints) agree with Rodas5P within 30× rtol: the largest
// difference seen over 10 000 cases was 17× (1.75e-7 at rtol 1e-8); Rodas5P
// is used with the forward sensitivities' coupling blocks from finite
// differences, and there is no DiscreteAdjoint through Rosenbrock steps to
// compare both with.
func TestODEGradientsOfRandomProblemsRosenbrock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.ODECases().Draw(t, "case")
		proptest.CheckODEGradient(t, c.Problem64(), ode.Rodas5P(), proptest.Loss[float64](c), proptest.ODEGradCheck{Agree: 30})
	})
}

// The same random problems written with ad ops (ode.ADProblem, float32
// state): the methods agree with each other, and DiscreteAdjoint with
// finite differences, to float32 accuracy.
func TestODEGradientsOfRandomADProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.ODECases().Draw(t, "case")
		u0 := make([]float32, c.N)
		for i, v := range c.U0 {
			u0[i] = float32(v)
		}
		prob, err := ode.ADProblem(c.RHS(), u0, 0, c.T1, c.P)
		if err != nil {
			t.Fatal(err)
		}
		proptest.CheckODEGradient(t, prob, ode.Tsit5(), proptest.Loss[float32](c), proptest.ODEGradCheck{Tol: 1e-5, Agree: 100, FDTol: 1e-3})
	})
}

// Random small networks as right-hand sides: every method against the
// others, and DiscreteAdjoint against finite differences, in float32.
func TestODEGradientsOfRandomNetworks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.NeuralODECases().Draw(t, "case")
		prob, err := c.Problem()
		if err != nil {
			t.Fatal(err)
		}
		proptest.CheckODEGradient(t, prob, ode.Tsit5(), c.Loss(), proptest.ODEGradCheck{Tol: 1e-5, Agree: 100, FDTol: 2e-3, FDParams: 12})
	})
}

// Backwards in time (T1 < T0): the time-reversed problem u' = −F(u, T − t)
// integrated from T down to 0 (as stable as the forward one), the same
// checks.
func TestODEGradientsBackwardsInTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.ODECases().Draw(t, "case")
		fw := c.Problem64()
		T := c.T1
		prob := fw
		prob.T0, prob.T1 = T, 0
		prob.F = func(du, u []float64, p []float32, t float64) {
			fw.F(du, u, p, T-t)
			for i := range du {
				du[i] = -du[i]
			}
		}
		prob.JVP = func(jv, u, v []float64, p []float32, dp []float64, t float64) {
			fw.JVP(jv, u, v, p, dp, T-t)
			for i := range jv {
				jv[i] = -jv[i]
			}
		}
		prob.VJP = func(du, dp, w, u []float64, p []float32, t float64) {
			wn := make([]float64, len(w))
			for i, x := range w {
				wn[i] = -x
			}
			fw.VJP(du, dp, wn, u, p, T-t)
		}
		prob.Jac = nil
		loss := proptest.Loss[float64](c)
		for i, s := range loss.At {
			loss.At[i] = T - s
		}
		if loss.Running != nil {
			g, gg := loss.Running, loss.RunningGrad
			loss.Running = func(u []float64, p []float32, t float64) float64 { return -g(u, p, t) }
			loss.RunningGrad = func(du, dp, u []float64, p []float32, t float64) {
				d1, d2 := make([]float64, len(du)), make([]float64, len(dp))
				gg(d1, d2, u, p, t)
				for i := range du {
					du[i] -= d1[i]
				}
				for k := range dp {
					dp[k] -= d2[k]
				}
			}
		}
		proptest.CheckODEGradient(t, prob, ode.Tsit5(), loss, proptest.ODEGradCheck{})
	})
}
