package ode_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// BDF gives up on a step after CVODE's limits: 7 error test failures
// (MXNEF) end the solve with ErrorTestFailed naming t and the component
// of the largest weighted error; 10 failures of Newton's iteration
// (MXNCF) with ConvergenceFailed naming t. Without the limits both cases
// shrank h on to DtUnderflow, whose message blames the solution or the
// tolerance.
func TestBDFGivesUp(t *testing.T) {
	// An initial step 10⁸ times too long for component 1, which
	// oscillates at ω = 10⁴: seven failures shrink h by 10⁶ only.
	f := func(du, u []float64, _ []float32, t float64) {
		du[0] = -u[0]
		du[1] = 1e4 * math.Cos(1e4*t)
		du[2] = -u[2]
	}
	prob := ode.Problem[float64]{F: f, U0: []float64{1, 1, 1}, T0: 1, T1: 2}
	sol, err := ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-8), ode.InitialStep(1))
	e := wantBDFError(t, err, ode.ErrorTestFailed)
	if e.T != 1 || e.Component != 1 || !strings.Contains(err.Error(), "component 1") || !strings.Contains(err.Error(), "t=1 ") {
		t.Errorf("err = %v (component %d), want ErrorTestFailed at t=1 naming component 1", err, e.Component)
	}
	if st := sol.Stats; st.ErrTestFails != 7 || st.Accepted != 0 || st.Retcode != ode.ErrorTestFailed {
		t.Errorf("stats %+v, want 7 error test failures and no step", st)
	}

	// A Jacobian of the wrong sign: Newton's iteration diverges until
	// h·10⁸ is below about 0.3, 10⁷ below the initial step.
	g := func(du, u []float64, _ []float32, t float64) { du[0] = -1e8 * (u[0] - math.Cos(t)) }
	jac := func(J, _ []float64, _ []float32, _ float64) { J[0] = 1e8 }
	prob = ode.Problem[float64]{F: g, Jac: jac, U0: []float64{1}, T0: 1, T1: 2}
	sol, err = ode.Solve(bg, prob, ode.BDF(), ode.Tol(1e-6, 1e-8), ode.InitialStep(0.1))
	e = wantBDFError(t, err, ode.ConvergenceFailed)
	if e.T != 1 || !strings.Contains(err.Error(), "t=1 ") || !strings.Contains(err.Error(), "Problem.Jac") {
		t.Errorf("err = %v, want ConvergenceFailed at t=1 pointing at Problem.Jac", err)
	}
	if st := sol.Stats; st.NewtonFails != 10 || st.Retcode != ode.ConvergenceFailed {
		t.Errorf("stats %+v, want 10 Newton failures", st)
	}
}

func wantBDFError(t *testing.T, err error, code ode.Retcode) *ode.Error {
	t.Helper()
	var e *ode.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want an *ode.Error with %v", err, code)
	}
	t.Log(err)
	return e
}
