package odead_test

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// The 2-D Brusselator's Jacobian by colour-seeded forward sweeps (k
// sweeps for k colours), recorded anew at each call as a t-dependent f
// must be, and its pattern's detection: the costs a stiff solve pays per
// Jacobian and once.

// With replay, each call replays the recording of f and its k sweeps; the
// Brusselator's Jacobian does not depend on t, so its replay is right,
// though F's would not be from t = 1.1 on.
func BenchmarkBrusselatorSparseJac(b *testing.B) {
	for _, c := range []struct {
		N      int
		replay bool
	}{{32, false}, {64, false}, {32, true}, {64, true}} {
		b.Run(fmt.Sprintf("N=%d/replay=%t", c.N, c.replay), func(b *testing.B) {
			br := newBruss2D(c.N)
			u := br.u0()
			opts := []odead.Option{odead.SparseJac()}
			if c.replay {
				opts = append(opts, odead.Replayable())
			}
			prob, err := odead.Problem(br.f, u, 0, 1, nil, opts...)
			if err != nil {
				b.Fatal(err)
			}
			vals := make([]float32, prob.JacStructure.(ode.SparseJacobian).Pattern.NNZ())
			b.ReportAllocs()
			for b.Loop() {
				prob.Jac(vals, u, nil, 0.5)
			}
		})
	}
}

func BenchmarkBrusselatorF(b *testing.B) {
	br := newBruss2D(64)
	u := br.u0()
	prob := odead.Func(br.f, len(u))
	du := make([]float32, len(u))
	b.ReportAllocs()
	for b.Loop() {
		prob.F(du, u, nil, 0.5)
	}
}

func BenchmarkBrusselatorSparsity(b *testing.B) {
	br := newBruss2D(64)
	u := br.u0()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := odead.Sparsity(br.f, u, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
}
