package odead_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/odecheck"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// TestErrorsPrefixOnce scans the errors of the ad-written right-hand
// sides, reported up front by odead and through a solve by ode (an ad
// op's own error on the tape included), for their package's prefix: once,
// at the start, and never ad's "ad:"; and checks that the causes stay
// reachable with errors.As and errors.Is.
func TestErrorsPrefixOnce(t *testing.T) {
	ctx := context.Background()
	wrongSize := func(u, _ ad.Var, _ float64) ad.Var { return ad.Slice(u, 0, 1) }
	zeroVar := func(_, _ ad.Var, _ float64) ad.Var { return ad.Var{} }
	cases := []struct {
		name   string
		err    func() error
		prefix string // "odead: " or "ode: "
		want   string // in the message, after the one prefix
		as     any    // a pointer to a type errors.As must find, or nil
	}{
		{"Problem, wrong size", func() error {
			_, err := odead.Problem(wrongSize, []float32{1, 2}, 0, 1, nil)
			return err
		}, "odead: ", "Problem: the right-hand side at t=0: f returned 1 values (shape [1]), want 2", nil},
		{"Problem, zero Var", func() error {
			_, err := odead.Problem(zeroVar, []float32{1, 2}, 0, 1, nil)
			return err
		}, "odead: ", "f returned the zero Var", nil},
		{"Func through Solve", func() error {
			prob := odead.Func(wrongSize, 2)
			prob.U0, prob.T1 = []float32{1, 2}, 1
			_, err := ode.Solve(ctx, prob, ode.Tsit5())
			return err
		}, "ode: ", "the ad right-hand side: f returned 1 values", new(*ode.Error)},
		{"an ad op failing in Func through Solve", func() error {
			badSlice := func(u, _ ad.Var, _ float64) ad.Var { return ad.Add(u, ad.Slice(u, 0, 5)) }
			prob := odead.Func(badSlice, 2)
			prob.U0, prob.T1 = []float32{1, 2}, 1
			_, err := ode.Solve(ctx, prob, ode.Tsit5())
			return err
		}, "ode: ", "Slice [0, 5) of shape [2]", new(*ode.Error)},
		{"NeuralProblem", func() error {
			_, err := odead.NeuralProblem(model.Dense(2, 2), []float32{1, 2}, 0, 1, make([]float32, 5))
			return err
		}, "odead: ", "NeuralProblem: len(θ) = 5, want 6", nil},
		{"Problem with SparseJac, an op without a sparsity rule", func() error {
			pooled := func(u, _ ad.Var, _ float64) ad.Var {
				return ad.Add(u, ad.Reshape(ad.MaxPool(ad.Reshape(u, 1, 1, 2), ad.PoolGeom{Kernel: []int{1}}), 2))
			}
			_, err := odead.Problem(pooled, []float32{1, 2}, 0, 1, nil, odead.SparseJac())
			return err
		}, "odead: ", "JacobianPattern: no sparsity rule for MaxPool", nil},
		{"Sparsity, wrong size", func() error {
			_, err := odead.Sparsity(wrongSize, []float32{1, 2}, nil, 0)
			return err
		}, "odead: ", "Sparsity at t=0: f returned 1 values", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			odecheck.Prefixed(t, c.err(), c.prefix, c.want, c.as)
		})
	}
	// A cause from another package keeps its own words, after ode's once,
	// and stays reachable: here an error of the user's on the tape.
	errMine := errors.New("my right-hand side is broken")
	prob := odead.Func(func(u, _ ad.Var, _ float64) ad.Var { return u.Tape().Fail(errMine) }, 1)
	prob.U0, prob.T1 = []float32{1}, 1
	_, err := ode.Solve(ctx, prob, ode.Tsit5())
	if err == nil || !errors.Is(err, errMine) || strings.Count(err.Error(), "ode:") != 1 {
		t.Errorf("a tape error through Solve: %v, want errMine behind one \"ode:\"", err)
	}
}
