package ode

import (
	"context"
	"testing"
)

// The 1-D Brusselator (see linsysBruss) by Rodas5P at rtol 1e-6, atol
// 1e-8 on [0, 10]: a warm Integrator, Reinit + Run per iteration, for
// each structure and linear solver.
func benchLinsys(b *testing.B, N int, s Structure, ls LinearSolver, jvp bool) {
	br := newLinsysBruss(N)
	prob := br.problem()
	prob.JacStructure = s
	if jvp {
		prob.JVP = br.jvp
	}
	it, err := NewIntegrator(prob, Rodas5PMethod{Linear: ls}, Tol(1e-6, 1e-8))
	if err != nil {
		b.Fatal(err)
	}
	u0 := br.u0()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := it.Reinit(u0, 0, 10, nil); err != nil {
			b.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	st := it.Stats()
	b.ReportMetric(float64(st.Accepted), "steps")
	b.ReportMetric(float64(st.FEvals), "fevals")
	b.ReportMetric(float64(st.LinearIters), "liniters")
}

func BenchmarkBrussRodas5PDense50(b *testing.B) { benchLinsys(b, 50, nil, nil, false) }
func BenchmarkBrussRodas5PBand50(b *testing.B)  { benchLinsys(b, 50, BandJacobian{2, 2}, nil, false) }
func BenchmarkBrussRodas5PBand500(b *testing.B) { benchLinsys(b, 500, BandJacobian{2, 2}, nil, false) }
func BenchmarkBrussRodas5PGMRESBandPrec500(b *testing.B) {
	benchLinsys(b, 500, MatrixFreeJacobian{}, GMRES{Precond: BandPreconditioner{2, 2}}, false)
}
func BenchmarkBrussRodas5PGMRESBandPrecJVP500(b *testing.B) {
	benchLinsys(b, 500, MatrixFreeJacobian{}, GMRES{Precond: BandPreconditioner{2, 2}}, true)
}
