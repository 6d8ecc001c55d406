package ode_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/internal/typecheck"
	"github.com/flatkit/flatkit/ode"
)

// optionUse is one option, as a value and as Go source, with the calls it
// applies to.
type optionUse struct {
	src string
	opt any
	to  []string
}

var (
	everyCall    = []string{"Solve", "NewIntegrator", "SolveShard", "Ensemble.Solve", "Gradient", "NewGradientSolver", "GradientShard", "Ensemble.Gradient"}
	solveCalls   = []string{"Solve", "NewIntegrator", "SolveShard", "Ensemble.Solve"}
	workersCalls = []string{"Ensemble.Solve", "Ensemble.Gradient"}
	batchCalls   = []string{"GradientShard", "Ensemble.Gradient"}
)

func optionUses() []optionUse {
	return []optionUse{
		{"ode.Tol(1e-6, 1e-8)", ode.Tol(1e-6, 1e-8), everyCall},
		{"ode.TolPerComponent(1e-6, []float64{1e-8, 1e-8})", ode.TolPerComponent(1e-6, []float64{1e-8, 1e-8}), everyCall},
		{"ode.MaxSteps(10000)", ode.MaxSteps(10000), everyCall},
		{"ode.TStops(5)", ode.TStops(5), everyCall},
		{"ode.InitialStep(0.01)", ode.InitialStep(0.01), everyCall},
		{"ode.FixedStep(0.05)", ode.FixedStep(0.05), everyCall},
		{"ode.SaveAt(1)", ode.SaveAt(1), solveCalls},
		{"ode.Dense()", ode.Dense(), solveCalls},
		{"ode.SaveEveryStep()", ode.SaveEveryStep(), solveCalls},
		{"ode.Workers(2)", ode.Workers(2), workersCalls},
		{"ode.Indices(1, 2)", ode.Indices(1, 2), batchCalls},
		{"ode.PerTrajectoryU0()", ode.PerTrajectoryU0(), batchCalls},
	}
}

// callSources are the calls as Go source, the option in place of %s.
var callSources = map[string]string{
	"Solve":             "ode.Solve(ctx, prob, ode.Tsit5(), %s)",
	"NewIntegrator":     "ode.NewIntegrator(prob, ode.Tsit5(), %s)",
	"SolveShard":        "ens.SolveShard(ctx, ode.Tsit5(), ode.Shard{}, %s)",
	"Ensemble.Solve":    "ens.Solve(ctx, ode.Tsit5(), %s)",
	"Gradient":          "ode.Gradient(ctx, prob, ode.Tsit5(), loss, nil, %s)",
	"NewGradientSolver": "ode.NewGradientSolver(prob, ode.Tsit5(), nil, %s)",
	"GradientShard":     "ens.GradientShard(ctx, ode.Tsit5(), lossFor, nil, ode.Shard{}, %s)",
	"Ensemble.Gradient": "ens.Gradient(ctx, ode.Tsit5(), lossFor, nil, %s)",
}

// Every call accepts the options that apply to it, and runs with them.
// (The options' types keep the others out; see the test below.)
func TestOptionsThatApply(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(4)
	calls := map[string]func(o any) error{
		"Solve": func(o any) error {
			_, err := ode.Solve(ctx, lvProblem(), ode.Tsit5(), o.(ode.SolveOption))
			return err
		},
		"NewIntegrator": func(o any) error {
			_, err := ode.NewIntegrator(lvProblem(), ode.Tsit5(), o.(ode.SolveOption))
			return err
		},
		"SolveShard": func(o any) error {
			_, err := ens.SolveShard(ctx, ode.Tsit5(), ens.Shards()[0], o.(ode.SolveOption))
			return err
		},
		"Ensemble.Solve": func(o any) error {
			_, err := ens.Solve(ctx, ode.Tsit5(), o.(ode.EnsembleSolveOption))
			return err
		},
		"Gradient": func(o any) error {
			_, err := ode.Gradient(ctx, lvProblem(), ode.Tsit5(), lvLoss(), nil, o.(ode.GradientOption))
			return err
		},
		"NewGradientSolver": func(o any) error {
			_, err := ode.NewGradientSolver(lvProblem(), ode.Tsit5(), nil, o.(ode.GradientOption))
			return err
		},
		"GradientShard": func(o any) error {
			_, err := ens.GradientShard(ctx, ode.Tsit5(), lossFor, nil, ens.GradientShards(o.(ode.GradientShardOption))[0], o.(ode.GradientShardOption))
			return err
		},
		"Ensemble.Gradient": func(o any) error {
			_, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, nil, o.(ode.EnsembleGradientOption))
			return err
		},
	}
	for _, u := range optionUses() {
		for _, call := range u.to {
			if err := calls[call](u.opt); err != nil {
				t.Errorf("%s given to %s: %v, want no error", u.src, call, err)
			}
		}
	}
}

// An option that does not apply to a call does not compile: each call with
// each option is type-checked against ode's export data.
func TestOptionsThatDoNotApplyDoNotCompile(t *testing.T) {
	imp := typecheck.Importer(t, "github.com/flatkit/flatkit/ode")
	var uses []typecheck.Use
	for _, u := range optionUses() {
		uses = append(uses, typecheck.Use{Src: u.src, To: u.to})
	}
	typecheck.Pairings(t, imp, everyCall, uses, func(target, src string) string {
		return fileOf(fmt.Sprintf(callSources[target], src))
	})
	// A stored list of common options passes to any call through OptionsFor.
	if err := typecheck.Check(imp, fileOf("ens.Solve(ctx, ode.Tsit5(), append(ode.OptionsFor[ode.EnsembleSolveOption](common), ode.Workers(2))...)")); err != nil {
		t.Errorf("OptionsFor: %v", err)
	}
}

// fileOf is a Go file with the expression call in a function beside the
// variables it may use.
func fileOf(call string) string {
	src := `package p

import (
	"context"

	"github.com/flatkit/flatkit/ode"
)

var (
	ctx     = context.Background()
	prob    ode.Problem[float64]
	loss    ode.Loss[float64]
	ens     ode.Ensemble[float64]
	lossFor func(int) ode.Loss[float64]
	common  []ode.Option
)

func _() { _, _ = ` + call + ` }
`
	return src
}
