package funcopt_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/funcopt"
)

// solveConfig is the configuration of a call, solve, whose options (tol,
// maxSteps) each set one field of it, as ode's options do.
type solveConfig struct {
	tol      float64
	maxSteps int
}

type solveOption func(*solveConfig)

func tol(t float64) solveOption             { return func(c *solveConfig) { c.tol = t } }
func maxSteps(n int) solveOption            { return func(c *solveConfig) { c.maxSteps = n } }
func solve(opts ...solveOption) solveConfig { return funcopt.Collect(opts) }

// A nil option is skipped, so a caller may pass a conditional one as nil.
func ExampleCollect() {
	var steps solveOption // none asked for
	fmt.Printf("%+v\n", solve(tol(1e-6), steps))
	fmt.Printf("%+v\n", solve(tol(1e-6), maxSteps(100), tol(1e-3)))
	// Output:
	// {tol:1e-06 maxSteps:0}
	// {tol:0.001 maxSteps:100}
}

// Apply starts from the defaults the caller set rather than from zero.
func ExampleApply() {
	cfg := solveConfig{tol: 1e-6, maxSteps: 10000}
	funcopt.Apply(&cfg, []solveOption{maxSteps(100)})
	fmt.Printf("%+v\n", cfg)
	// Output:
	// {tol:1e-06 maxSteps:100}
}
