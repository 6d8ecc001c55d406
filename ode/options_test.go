package ode_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Every call rejects, by name, an option that does not apply to it; and
// accepts the ones that do.
func TestOptionsThatDoNotApply(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(4)
	calls := map[string]func(opts ...ode.Option) error{
		"Solve": func(opts ...ode.Option) error {
			_, err := ode.Solve(ctx, lvProblem(), ode.Tsit5(), opts...)
			return err
		},
		"Init": func(opts ...ode.Option) error {
			_, err := ode.Init(lvProblem(), ode.Tsit5(), opts...)
			return err
		},
		"Gradient": func(opts ...ode.Option) error {
			_, err := ode.Gradient(ctx, lvProblem(), ode.Tsit5(), lvLoss(), nil, opts...)
			return err
		},
		"Ensemble.Solve": func(opts ...ode.Option) error {
			_, err := ens.Solve(ctx, ode.Tsit5(), opts...)
			return err
		},
		"SolveShard": func(opts ...ode.Option) error {
			_, err := ens.SolveShard(ctx, ode.Tsit5(), ens.Shards()[0], opts...)
			return err
		},
		"Ensemble.Gradient": func(opts ...ode.Option) error {
			_, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, nil, opts...)
			return err
		},
		"GradientShard": func(opts ...ode.Option) error {
			_, err := ens.GradientShard(ctx, ode.Tsit5(), lossFor, nil, ode.Shard{Lo: 0, Hi: 1, Seed: ens.Seed}, opts...)
			return err
		},
	}
	options := []struct {
		name string
		opt  ode.Option
		to   []string // the calls it applies to
	}{
		{"Workers", ode.Workers(2), []string{"Ensemble.Solve", "Ensemble.Gradient"}},
		{"Indices", ode.Indices(1, 2), []string{"Ensemble.Gradient", "GradientShard"}},
		{"PerTrajectoryU0", ode.PerTrajectoryU0(), []string{"Ensemble.Gradient", "GradientShard"}},
		{"AdjointTol", ode.AdjointTol(1e-6, 1e-8), []string{"Gradient", "Ensemble.Gradient", "GradientShard"}},
		{"QuadTol", ode.QuadTol(1e-6, 1e-8), []string{"Gradient", "Ensemble.Gradient", "GradientShard"}},
		{"FiniteDiffDerivatives", ode.FiniteDiffDerivatives(), []string{"Gradient", "Ensemble.Gradient", "GradientShard"}},
		{"SaveAt", ode.SaveAt(1), []string{"Solve", "Init", "Ensemble.Solve", "SolveShard"}},
		{"Dense", ode.Dense(), []string{"Solve", "Init", "Ensemble.Solve", "SolveShard"}},
		{"SaveEveryStep", ode.SaveEveryStep(), []string{"Solve", "Init", "Ensemble.Solve", "SolveShard"}},
	}
	for _, o := range options {
		for call, run := range calls {
			err := run(ode.Tol(1e-6, 1e-8), o.opt)
			applies := false
			for _, c := range o.to {
				applies = applies || c == call
			}
			switch {
			case applies && err != nil:
				t.Errorf("%s given to %s: %v, want no error", o.name, call, err)
			case !applies && err == nil:
				t.Errorf("%s given to %s: no error, want one naming it", o.name, call)
			case !applies && !strings.Contains(err.Error(), o.name):
				t.Errorf("%s given to %s: %q does not name the option", o.name, call, err)
			case !applies && !strings.Contains(err.Error(), "ode: "+call+": "):
				t.Errorf("%s given to %s: %q does not name the call", o.name, call, err)
			}
		}
	}
}
