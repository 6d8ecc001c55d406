package ode_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/odecheck"
	"github.com/flatkit/flatkit/ode"
)

// TestErrorsPrefixOnce scans representative errors of ode, from a single
// solve to an ensemble's failed trajectory and a gradient's failed
// forward solve, for the "ode:" prefix: once, at the start, and never
// ad's "ad:"; and checks that the causes stay reachable with errors.As
// and errors.Is. odead's TestErrorsPrefixOnce does the same for the
// ad-written right-hand sides.
func TestErrorsPrefixOnce(t *testing.T) {
	ctx := context.Background()
	blowUp := func(du, u []float64, _ []float32, _ float64) { du[0] = u[0] * u[0] }
	ens := ode.Ensemble[float64]{Base: lvProblem(), N: 4,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float64]) {
			if i == 2 {
				p.U0 = []float64{math.Inf(1), 1}
			}
			if i == 3 {
				p.F = blowUp
			}
		}}
	cases := []struct {
		name string
		err  func() error
		want string // in the message, after the one prefix
		as   any    // a pointer to a type errors.As must find, or nil
	}{
		{"invalid problem", func() error {
			_, err := ode.Solve(ctx, ode.Problem[float64]{F: blowUp, T1: 1}, ode.Tsit5())
			return err
		}, "", nil},
		{"max steps", func() error {
			_, err := ode.Solve(ctx, lvProblem(), ode.Tsit5(), ode.MaxSteps(3))
			return err
		}, "max steps reached", new(*ode.Error)},
		{"ensemble", func() error {
			_, err := ens.Solve(ctx, ode.Tsit5())
			return err
		}, "ensemble: 2 of 4 trajectories failed; the first: trajectory 2: ", new(*ode.EnsembleError)},
		{"ensemble trajectory", func() error {
			_, err := ens.Solve(ctx, ode.Tsit5())
			var ee *ode.EnsembleError
			if !errors.As(err, &ee) || len(ee.Errors) < 2 {
				return err
			}
			return ee.Errors[1]
		}, "trajectory 3: dt underflow", new(*ode.Error)},
		{"gradient's forward solve", func() error {
			p := lvProblem()
			p.F = blowUp
			_, err := ode.Gradient(ctx, p, ode.Tsit5(), lvLoss(), ode.InterpolatingAdjoint{})
			return err
		}, "Gradient: the forward solve: dt underflow", new(*ode.Error)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			odecheck.Prefixed(t, c.err(), "ode: ", c.want, c.as)
		})
	}
	// A cause from another package keeps its own words, after ode's once,
	// and stays reachable: here an error of the user's behind Problem.Err.
	errMine := errors.New("my right-hand side is broken")
	prob := lvProblem()
	prob.Err = func() error { return errMine }
	_, err := ode.Solve(ctx, prob, ode.Tsit5())
	if err == nil || !errors.Is(err, errMine) || strings.Count(err.Error(), "ode:") != 1 {
		t.Errorf("a hook's error through Solve: %v, want errMine behind one \"ode:\"", err)
	}
}
