package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The BDF benchmarks: whole solves on a reused integrator, the cases of
// the peer benchmark (shared/peers/cvode_stiff_bench.c) at rtol 1e-6,
// atol 1e-8. Each reports CVODE's counters for the comparison.

func benchBDF(b *testing.B, prob ode.Problem[float64]) {
	it, err := ode.NewIntegrator(prob, ode.BDF(), ode.Tol(1e-6, 1e-8))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := it.Reinit(prob.U0, prob.T0, prob.T1, nil); err != nil {
			b.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	st := it.Stats()
	b.ReportMetric(float64(st.Accepted), "steps")
	b.ReportMetric(float64(st.FEvals), "nfe")
	b.ReportMetric(float64(st.JacEvals), "nje")
	b.ReportMetric(float64(st.LUs), "nsetups")
	b.ReportMetric(float64(st.NewtonIters), "nni")
}

// BenchmarkBDFBruss1dDense: "bruss1d N=100 dense", the user's dense Jacobian.
func BenchmarkBDFBruss1dDense(b *testing.B) { benchBDF(b, bruss1d(100, true)) }

// BenchmarkBDFPollu: "pollu dense", a difference-quotient Jacobian.
func BenchmarkBDFPollu(b *testing.B) { benchBDF(b, pollu()) }
