package proptest_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/proptest"
)

// stiffStructure is the case's Jacobian structure by name: "band" (its
// bandwidths), "sparse" (its pattern) or "free".
func stiffStructure(c proptest.ODECase, s string) ode.Structure {
	switch s {
	case "band":
		l, u := c.Bandwidths()
		return ode.BandJacobian{Lower: l, Upper: u}
	case "sparse":
		return ode.SparseJacobian{Pattern: c.Pattern()}
	}
	return ode.MatrixFreeJacobian{}
}

var stiffMethods = []ode.Method{ode.BDF(), ode.Rosenbrock23(), ode.Rodas5P()}

// stiffAgree is the ODEAgree of each stiff method at rtol 1e-8. The
// methods' global errors differ: the gradient is small beside λ where the
// diffusion damps the state, and an adjoint's error is of the tolerance
// times λ. Over 40 random cases × structures, ForwardSensitivity and
// InterpolatingAdjoint (with and without checkpoints) were at most 66×
// rtol apart with BDF, 163× with Rosenbrock23 and 21× with Rodas5P (medians
// 8×, 29× and 0.2×); the factors below leave room, and a rule off by 1e-4
// is still caught (TestCheckODEGradientCatchesWrongRulesStiff; at 5000 it
// was not). BDF's is 1000: with a running cost and states near 1e-5 (seed
// 6806448695243162543) InterpolatingAdjoint with 4 checkpoints was 560×
// rtol from ForwardSensitivity, its re-solved segments' error.
var stiffAgree = map[string]float64{"BDF": 1000, "Rosenbrock23": 1000, "Rodas5P": 100}

// Random small stiff problems (StiffODECases) with their Jacobians in a
// band, sparse or matrix-free structure: ForwardSensitivity (with VJP rows
// and with JVP columns) and InterpolatingAdjoint (with and without
// checkpoints) agree through BDF, Rosenbrock23 and Rodas5P. Matrix-free
// runs with BDF only: a Rosenbrock method's stages need exact solves for
// its order, which GMRES does not give.
func TestODEGradientsOfRandomStiffProblems(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := proptest.StiffODECases().Draw(t, "case")
		m := rapid.SampledFrom(stiffMethods).Draw(t, "method")
		structs := []string{"band", "sparse", "free"}
		if m.Name() != "BDF" {
			structs = structs[:2]
		}
		s := rapid.SampledFrom(structs).Draw(t, "structure")
		proptest.CheckODEGradient(t, c.Problem64In(stiffStructure(c, s)), m, proptest.Loss[float64](c),
			proptest.ODEAgree(stiffAgree[m.Name()]), proptest.ODEOptions(ode.MaxSteps(1e6)))
	})
}

// With a stiff method and a structured Jacobian, a VJP or JVP off by 1e-4
// relative is reported by the comparison of the methods, at the factors of
// stiffAgree.
func TestCheckODEGradientCatchesWrongRulesStiff(t *testing.T) {
	c := recordedStiffCase
	const off = 1 + 1e-4
	for _, m := range stiffMethods {
		for _, s := range []string{"band", "sparse", "free"} {
			if s == "free" && m.Name() != "BDF" {
				continue
			}
			prob := c.Problem64In(stiffStructure(c, s))
			r := run(func(t proptest.T) {
				proptest.CheckODEGradient(t, prob, m, proptest.Loss[float64](c), proptest.ODEAgree(stiffAgree[m.Name()]))
			})
			if len(r.errors) > 0 {
				t.Fatalf("%v/%s: the right rules failed: %v", m, s, r.errors)
			}
			for _, w := range []struct {
				name  string
				wrong ode.Problem[float64]
			}{
				{"VJP, state part", scaledVJP(prob, off, 1)},
				{"VJP, parameter part", scaledVJP(prob, 1, off)},
				{"JVP, state part", scaledJVP(prob, off, 1)},
				{"JVP, parameter part", scaledJVP(prob, 1, off)},
			} {
				t.Run(fmt.Sprintf("%v/%s/%s", m, s, w.name), func(t *testing.T) {
					r := run(func(t proptest.T) {
						proptest.CheckODEGradient(t, w.wrong, m, proptest.Loss[float64](c), proptest.ODEAgree(stiffAgree[m.Name()]))
					})
					if len(r.errors) == 0 {
						t.Fatal("a derivative off by 1e-4 passed")
					}
				})
			}
		}
	}
}

// recordedStiffCase is a stiff case with 4 states, 2 parameters and a
// diffusion of rate 300 whose terms read every factor kind.
var recordedStiffCase = proptest.ODECase{N: 4, NP: 2,
	Terms: []proptest.ODETerm{
		{Out: 0, K: 0, A: 0, B: 1, Sign: 1, Phi: 1, Psi: 2},
		{Out: 1, K: 1, A: 2, B: 1, Sign: -1, Phi: 3, Psi: 0},
		{Out: 2, K: 0, A: 3, B: 2, Sign: 1, Phi: 2, Psi: 3},
		{Out: 3, K: 1, A: 3, B: 2, Sign: 1, Phi: 0, Psi: 1},
		{Out: 0, K: 1, A: 1, B: 1, Sign: -1, Phi: 2, Psi: 0},
	},
	U0: []float64{0.9, -0.4, 1.2, 0.3}, P: []float32{1.25, 0.75}, T1: 1.5, At: []float64{0.7, 1.5},
	Weights: []float64{1, 0.5, 1.5, 2}, Running: true, Stiff: 300}

// scaledVJP scales prob's VJP's state part by su and its parameter part
// by sp.
func scaledVJP(prob ode.Problem[float64], su, sp float64) ode.Problem[float64] {
	vjp := prob.VJP
	prob.VJP = func(du, dp, w, u []float64, q []float32, t float64) {
		d := make([]float64, len(du))
		var e []float64
		if dp != nil {
			e = make([]float64, len(dp))
		}
		vjp(d, e, w, u, q, t)
		for i, x := range d {
			du[i] += su * x
		}
		for k, x := range e {
			dp[k] += sp * x
		}
	}
	return prob
}

// scaledJVP scales prob's JVP's state direction by sv and its parameter
// direction by sp.
func scaledJVP(prob ode.Problem[float64], sv, sp float64) ode.Problem[float64] {
	jvp := prob.JVP
	prob.JVP = func(jv, u, v []float64, q []float32, dp []float64, t float64) {
		vs := make([]float64, len(v))
		for i, x := range v {
			vs[i] = sv * x
		}
		var ds []float64
		if dp != nil {
			ds = make([]float64, len(dp))
			for k, x := range dp {
				ds[k] = sp * x
			}
		}
		jvp(jv, u, vs, q, ds, t)
	}
	return prob
}
