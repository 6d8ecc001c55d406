package ode_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// CVODES's cvsRoberts_ASAi_dns problem: G = ∫₀^{4e7} y3 dt, a running cost.
// Reference: CVODES forward sensitivities at rtol 1e-10 (SciPy Radau agrees).
var (
	robRefG = 3.99825282e7
	robRefP = []float64{7.683773e5, -3.068921, 5.114890e-4}
)

func robF(du, u []float64, p []float32, t float64) {
	p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2])
	r1, r2, r3 := p1*u[0], p2*u[1]*u[2], p3*u[1]*u[1]
	du[0] = -r1 + r2
	du[2] = r3
	du[1] = r1 - r2 - r3
}

func robJac(J, u []float64, p []float32, t float64) {
	p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2])
	J[0], J[1], J[2] = -p1, p2*u[2], p2*u[1]
	J[6], J[7], J[8] = 0, 2*p3*u[1], 0
	J[3], J[4], J[5] = p1, -p2*u[2]-2*p3*u[1], -p2*u[1]
}

func robJVP(jv, u, v []float64, p []float32, dp []float64, t float64) {
	var J [9]float64
	robJac(J[:], u, p, t)
	for i := 0; i < 3; i++ {
		jv[i] = J[3*i]*v[0] + J[3*i+1]*v[1] + J[3*i+2]*v[2]
	}
	if dp != nil {
		d1, d2, d3 := u[0]*dp[0], u[1]*u[2]*dp[1], u[1]*u[1]*dp[2]
		jv[0] += -d1 + d2
		jv[2] += d3
		jv[1] += d1 - d2 - d3
	}
}

func robVJP(du, dp, w, u []float64, p []float32, t float64) {
	var J [9]float64
	robJac(J[:], u, p, t)
	for j := 0; j < 3; j++ {
		du[j] += w[0]*J[j] + w[1]*J[3+j] + w[2]*J[6+j]
	}
	if dp != nil {
		dp[0] += (w[1] - w[0]) * u[0]
		dp[1] += (w[0] - w[1]) * u[1] * u[2]
		dp[2] += (w[2] - w[1]) * u[1] * u[1]
	}
}

// robParamJac is ∂F/∂p (3×3, row-major).
func robParamJac(Jp, u []float64, _ []float32, _ float64) {
	r1, r2, r3 := u[0], u[1]*u[2], u[1]*u[1]
	Jp[0], Jp[1], Jp[2] = -r1, r2, 0
	Jp[3], Jp[4], Jp[5] = r1, -r2, -r3
	Jp[6], Jp[7], Jp[8] = 0, 0, r3
}

func robProblem() ode.Problem[float64] {
	return ode.Problem[float64]{F: robF, Jac: robJac, JVP: robJVP, VJP: robVJP,
		U0: []float64{1, 0, 0}, T0: 0, T1: 4e7, P: []float32{0.04, 1e4, 3e7}}
}

func robLoss() ode.Loss[float64] {
	return ode.Loss[float64]{
		Running:         func(u []float64, p []float32, t float64) float64 { return u[2] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[2] += 1 },
	}
}

func TestRobertsonGradientReference(t *testing.T) {
	opts := []ode.GradientOption{ode.TolPerComponent(1e-8, []float64{1e-10, 1e-16, 1e-8}), ode.MaxSteps(1e6)}
	jacs := robProblem()
	jacs.JVP, jacs.VJP, jacs.ParamJac = nil, nil, robParamJac
	for _, tc := range []struct {
		m    ode.Method
		s    ode.Sensitivity
		prob ode.Problem[float64]
		name string
	}{
		{ode.Rodas5P(), ode.InterpolatingAdjoint{}, robProblem(), ""},
		{ode.Rodas5P(), ode.InterpolatingAdjoint{Checkpoints: 20}, robProblem(), ""}, // checkpointed
		{ode.Rodas5P(), ode.ForwardSensitivity{}, robProblem(), ""},
		{ode.Rodas5P(), ode.ForwardSensitivity{}, jacs, "/Jac and ParamJac"},
		// BDF's staggered corrector: the state's Newton iteration, then
		// the sensitivities with its factorisation.
		{ode.BDF(), ode.ForwardSensitivity{}, robProblem(), ""},
		{ode.BDF(), ode.ForwardSensitivity{}, jacs, "/Jac and ParamJac"},
		{ode.BDFMethod{Linear: ode.GMRES{}}, ode.ForwardSensitivity{}, robProblem(), "/GMRES"},
	} {
		t.Run(tc.m.Name()+"/"+tc.s.Name()+tc.name, func(t *testing.T) {
			g, err := ode.Gradient(context.Background(), tc.prob, tc.m, robLoss(), tc.s, opts...)
			if err != nil {
				t.Fatal(err)
			}
			e := math.Abs(g.Value-robRefG) / robRefG
			for i, w := range robRefP {
				e = max(e, math.Abs(g.P[i]-w)/math.Abs(w))
			}
			t.Logf("G=%.9g dG/dp=%.7g dG/du0=%.5g err=%.2e steps fwd %d bwd %d", g.Value, g.P, g.U0, e, g.Forward.Accepted, g.Backward.Accepted)
			if e > 1e-4 {
				t.Errorf("max relative error %.3g > 1e-4", e)
			}
		})
	}
}

// Integrating Robertson's state backwards is unstable: BacksolveAdjoint
// fails with an error from the backward solve, as documented.
func TestBacksolveAdjointFailsOnRobertson(t *testing.T) {
	_, err := ode.Gradient(context.Background(), robProblem(), ode.Rodas5P(), robLoss(), ode.BacksolveAdjoint{},
		ode.TolPerComponent(1e-8, []float64{1e-10, 1e-16, 1e-8}), ode.MaxSteps(1e5))
	if err == nil {
		t.Fatal("BacksolveAdjoint on Robertson succeeded; want the backward solve to fail")
	}
	var oe *ode.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an *ode.Error", err)
	}
	if !strings.Contains(err.Error(), "InterpolatingAdjoint and GaussAdjoint keep the forward solution") {
		t.Errorf("the error %q does not say what to use instead", err)
	}
	t.Logf("BacksolveAdjoint on Robertson: %v", err)
}
