package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// The BDF benchmarks: whole solves on a reused integrator, the cases of
// the peer benchmark (shared/peers/cvode_stiff_bench.c) at rtol 1e-6,
// atol 1e-8. Each reports BDF's counters under CVODE's names (nfe here
// includes the evaluations of difference-quotient Jacobians, CVODE's does
// not) for the comparison with `run.sh stiff`.

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

// BenchmarkBDFBruss1dDense: "bruss1d N=100 dense", the user's dense
// Jacobian. CVODE 6.4: 222 steps, nfe 263, nje 4, nsetups 28, nni 260.
func BenchmarkBDFBruss1dDense(b *testing.B) { benchBDF(b, bruss1d(100, true)) }

// BenchmarkBDFPollu: "pollu dense", a difference-quotient Jacobian.
// CVODE 6.4: 176 steps, nfe 302 (and 100 for its Jacobians), nje 5,
// nsetups 35, nni 299.
func BenchmarkBDFPollu(b *testing.B) { benchBDF(b, pollu()) }
