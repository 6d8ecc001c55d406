package ode_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

func BenchmarkLotkaVolterraTsit5(b *testing.B) { benchMethod(b, ode.Tsit5(), 1e-6, 1e-8) }

func BenchmarkLotkaVolterraSolve(b *testing.B) {
	prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-6, 1e-8)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSolve times Reinit + Run of prob (from T0 = 0) in one warm
// Integrator and returns it as the last run left it, for the caller's
// metrics.
func benchSolve(b *testing.B, prob ode.Problem[float64], m ode.Method, rtol, atol float64) *ode.Integrator[float64] {
	it, err := ode.NewIntegrator(prob, m, ode.Tol(rtol, atol))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := it.Reinit(prob.U0, 0, prob.T1, nil); err != nil {
			b.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return it
}

func benchMethod(b *testing.B, m ode.Method, rtol, atol float64) {
	it := benchSolve(b, ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T1: 10}, m, rtol, atol)
	b.ReportMetric(float64(it.Stats().FEvals), "fevals")
	b.ReportMetric(float64(it.Stats().Accepted), "steps")
	b.ReportMetric(maxAbsDiff(it.U(), refProblems[0].ref), "maxerr")
}

func BenchmarkLotkaVolterraDP5(b *testing.B)        { benchMethod(b, ode.DP5(), 1e-6, 1e-8) }
func BenchmarkLotkaVolterraBS3(b *testing.B)        { benchMethod(b, ode.BS3(), 1e-6, 1e-8) }
func BenchmarkLotkaVolterraVern7(b *testing.B)      { benchMethod(b, ode.Vern7(), 1e-6, 1e-8) }
func BenchmarkLotkaVolterraVern7Tight(b *testing.B) { benchMethod(b, ode.Vern7(), 1e-10, 1e-12) }
func BenchmarkLotkaVolterraTsit5Tight(b *testing.B) { benchMethod(b, ode.Tsit5(), 1e-10, 1e-12) }
