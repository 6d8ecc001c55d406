package ode_test

import (
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Robertson, the stiff case of the Bari test set, to t = 1e5 at rtol 1e-6,
// atol 1e-8: a warm Integrator, Reinit + Run per iteration.
func benchRobertson(b *testing.B, m ode.Method, jac func(J, u []float64, p []float32, t float64), rtol, atol float64) {
	it := benchSolve(b, ode.Problem[float64]{F: robertson[float64], Jac: jac, U0: []float64{1, 0, 0}, T1: 1e5}, m, rtol, atol)
	st := it.Stats()
	b.ReportMetric(float64(st.Accepted), "steps")
	b.ReportMetric(float64(st.FEvals), "fevals")
	b.ReportMetric(float64(st.JacEvals), "jacs")
	b.ReportMetric(float64(st.LUs), "LUs")
	b.ReportMetric(weightedErr(it.U(), robertsonRef1e5, rtol, atol), "werr")
	b.ReportMetric(maxRelErr(it.U(), robertsonRef1e5), "maxrelerr")
}

func maxRelErr(u, ref []float64) float64 {
	m := 0.0
	for i := range u {
		m = max(m, relErr(u[i], ref[i]))
	}
	return m
}

func BenchmarkRobertsonRosenbrock23Jac(b *testing.B) {
	benchRobertson(b, ode.Rosenbrock23(), robertsonJac, 1e-6, 1e-8)
}
func BenchmarkRobertsonRosenbrock23FD(b *testing.B) {
	benchRobertson(b, ode.Rosenbrock23(), nil, 1e-6, 1e-8)
}
func BenchmarkRobertsonRodas5PJac(b *testing.B) {
	benchRobertson(b, ode.Rodas5P(), robertsonJac, 1e-6, 1e-8)
}
func BenchmarkRobertsonRodas5PFD(b *testing.B) { benchRobertson(b, ode.Rodas5P(), nil, 1e-6, 1e-8) }
func BenchmarkRobertsonRodas5PJacTight(b *testing.B) {
	benchRobertson(b, ode.Rodas5P(), robertsonJac, 1e-10, 1e-14)
}
