package proptest_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"github.com/flatkit/flatkit/proptest"
)

// Random problems: DiscreteAdjoint equals finite differences of the same
// fixed-step solve to 1e-6, and the other methods agree with
// DiscreteAdjoint of the adaptive solve to 50× the tolerance at rtol 1e-8
// (the default ODEAgree, whose doc says how it was measured).
func TestODEGradientsOfRandomProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.ODECases().Draw(t, "case")
		m := []ode.Method{ode.Tsit5(), ode.Vern7(), ode.DP5()}[rapid.IntRange(0, 2).Draw(t, "method")]
		proptest.CheckODEGradient(t, c.Problem64(), m, proptest.Loss[float64](c))
	})
}

// recordedODECase is the problem on which CI failed when Agree was 10
// (rapid seed 8822255760225412384): u' = −0.5u + forcing(t) + 2.25u −
// 1.5u·sin u over [0, 1.5], where Tsit5 at rtol 1e-8 gives
// InterpolatingAdjoint 11× rtol above the rtol-1e-13 gradient and
// DiscreteAdjoint 5× below it, 16× apart.
var recordedODECase = proptest.ODECase{N: 1, NP: 3,
	Terms: []proptest.ODETerm{
		{Out: 0, K: 0, Sign: 1, Phi: 0, Psi: 1},
		{Out: 0, K: 2, Sign: 1, Phi: 0, Psi: 1},
		{Out: 0, K: 0, Sign: -1, Phi: 1, Psi: 3},
	},
	U0: []float64{1.5}, P: []float32{1.5, 1.5, 0.75}, T1: 1.5, At: []float64{1.5}, Weights: []float64{1}}

// recordedADCase is a problem on which the float32 finite differences of
// TestODEGradientsOfRandomADProblems were 4.7e-4 from DiscreteAdjoint
// (found by a soak at FDTol 4e-4, rapid seed 1233421154567272920), nearly
// half of the 1e-3 that FDTol's float32 default was then: dL/dp0 =
// 1.0173918 by the adjoint and by float64, 1.0162 by the differences.
var recordedADCase = proptest.ODECase{N: 3, NP: 2,
	Terms: []proptest.ODETerm{
		{Out: 0, K: 1, A: 1, B: 2, Sign: 1, Phi: 1, Psi: 2},
		{Out: 1, K: 0, A: 0, B: 1, Sign: 1, Phi: 2, Psi: 3},
		{Out: 2, K: 0, A: 0, B: 0, Sign: -1, Phi: 3, Psi: 3},
		{Out: 0, K: 0, A: 1, B: 1, Sign: -1, Phi: 2, Psi: 1},
		{Out: 1, K: 0, A: 0, B: 1, Sign: 1, Phi: 0, Psi: 2},
		{Out: 2, K: 0, A: 1, B: 0, Sign: 1, Phi: 3, Psi: 2},
	},
	U0: []float64{0.7034484270136031, 1.5, 0.8254108428955078}, P: []float32{1.5, 1.5}, T1: 1,
	At: []float64{0.5}, Weights: []float64{2, 1.911165513257515, 1.5318628035271473}, Running: true}

// Problems on which the checks once failed or came close, with the
// defaults of CheckODEGradient, in float64 and as ad problems in float32.
func TestODEGradientsOfRecordedProblems(t *testing.T) {
	for _, c := range []proptest.ODECase{recordedODECase, recordedADCase} {
		for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.DP5()} {
			proptest.CheckODEGradient(t, c.Problem64(), m, proptest.Loss[float64](c))
		}
		checkAsADProblem(t, c)
	}
}

// checkAsADProblem checks c written with ad ops (odead.Problem, float32
// state) with Tsit5.
func checkAsADProblem(t proptest.T, c proptest.ODECase) {
	t.Helper()
	u0 := make([]float32, c.N)
	for i, v := range c.U0 {
		u0[i] = float32(v)
	}
	prob, err := odead.Problem(c.RHS(), u0, 0, c.T1, c.P)
	if err != nil {
		t.Fatalf("odead.Problem: %v", err)
		return
	}
	proptest.CheckODEGradient(t, prob, ode.Tsit5(), proptest.Loss[float32](c), proptest.ODETol(1e-5), proptest.ODEAgree(100))
}

// A derivative off by 1e-4 relative, in the state or parameter part of the
// VJP or the JVP, is reported: the finite differences catch a wrong VJP,
// the agreement between methods a wrong JVP (which ForwardSensitivity of
// this one-state problem uses only when made to: "JVP columns").
func TestCheckODEGradientCatchesWrongRules(t *testing.T) {
	const off = 1 + 1e-4
	// wrongVJP scales the VJP's state part by su and its parameter part
	// by sp; wrongJVP the JVP's state direction by sv and parameter
	// direction by sp.
	wrongVJP := func(su, sp float64) func(ode.Problem[float64]) ode.Problem[float64] {
		return func(p ode.Problem[float64]) ode.Problem[float64] { return scaledVJP(p, su, sp) }
	}
	wrongJVP := func(sv, sp float64) func(ode.Problem[float64]) ode.Problem[float64] {
		return func(p ode.Problem[float64]) ode.Problem[float64] { return scaledJVP(p, sv, sp) }
	}
	tests := []struct {
		name  string
		wrong func(ode.Problem[float64]) ode.Problem[float64]
		want  string
	}{
		{"VJP, state part", wrongVJP(off, 1), "finite differences"},
		{"VJP, parameter part", wrongVJP(1, off), "finite differences"},
		{"JVP, state part", wrongJVP(off, 1), "ForwardSensitivity (JVP columns) and DiscreteAdjoint"},
		{"JVP, parameter part", wrongJVP(1, off), "ForwardSensitivity (JVP columns) and DiscreteAdjoint"},
	}
	c := recordedODECase
	// The wrappers with factors 1 pass: what is caught is the factor.
	for _, right := range []ode.Problem[float64]{c.Problem64(), wrongVJP(1, 1)(c.Problem64()), wrongJVP(1, 1)(c.Problem64())} {
		r := run(func(t proptest.T) {
			proptest.CheckODEGradient(t, right, ode.Tsit5(), proptest.Loss[float64](c))
		})
		if len(r.errors) > 0 {
			t.Fatalf("the right rules failed: %v", r.errors)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(func(t proptest.T) {
				proptest.CheckODEGradient(t, tt.wrong(c.Problem64()), ode.Tsit5(), proptest.Loss[float64](c))
			})
			if len(r.errors) == 0 {
				t.Fatal("a derivative off by 1e-4 passed")
			}
			if !strings.Contains(strings.Join(r.errors, "\n"), tt.want) {
				t.Errorf("no report names %q: %v", tt.want, r.errors)
			}
		})
	}
}

// With a stiff method, a problem without VJP supports one sensitivity
// method or none: the check is a fatal error naming what is missing, not
// a pass that compared nothing.
func TestCheckODEGradientNeedsTwoMethods(t *testing.T) {
	c := recordedODECase
	tests := []struct {
		name  string
		strip func(*ode.Problem[float64])
		want  string
	}{
		{"JVP only", func(p *ode.Problem[float64]) { p.VJP = nil }, "supports only ForwardSensitivity"},
		{"neither product", func(p *ode.Problem[float64]) { p.VJP, p.JVP = nil, nil }, "supports no sensitivity method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prob := c.Problem64()
			tt.strip(&prob)
			r := run(func(t proptest.T) {
				proptest.CheckODEGradient(t, prob, ode.Rodas5P(), proptest.Loss[float64](c))
			})
			if !r.fatal || len(r.errors) != 1 {
				t.Fatalf("want one fatal error, got fatal=%v %q", r.fatal, r.errors)
			}
			for _, want := range []string{tt.want, "want Problem.VJP"} {
				if !strings.Contains(r.errors[0], want) {
					t.Errorf("the error %q does not say %q", r.errors[0], want)
				}
			}
		})
	}
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
		proptest.CheckODEGradient(t, c.Problem64(), ode.Rodas5P(), proptest.Loss[float64](c), proptest.ODEAgree(30))
	})
}

// The same random problems written with ad ops (odead.Problem, float32
// state): the methods agree with each other, and DiscreteAdjoint with
// finite differences, to float32 accuracy.
func TestODEGradientsOfRandomADProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkAsADProblem(t, proptest.ODECases().Draw(t, "case"))
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
		proptest.CheckODEGradient(t, prob, ode.Tsit5(), c.Loss(), proptest.ODETol(1e-5), proptest.ODEAgree(100), proptest.ODEFDParams(12))
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
			g, gg := loss.Running, loss.RunningGradient
			loss.Running = func(u []float64, p []float32, t float64) float64 { return -g(u, p, t) }
			loss.RunningGradient = func(du, dp, u []float64, p []float32, t float64) {
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
		proptest.CheckODEGradient(t, prob, ode.Tsit5(), loss)
	})
}
