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
	benchProblem(b, prob, br.u0(), Rodas5PMethod{Linear: ls})
}

func benchLinsysWith(b *testing.B, N int, s Structure, m Method) {
	br := newLinsysBruss(N)
	prob := br.problem()
	prob.JacStructure = s
	benchProblem(b, prob, br.u0(), m)
}

func benchProblem(b *testing.B, prob Problem[float64], u0 []float64, m Method) {
	it, err := NewIntegrator(prob, m, Tol(1e-6, 1e-8))
	if err != nil {
		b.Fatal(err)
	}
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
	b.ReportMetric(float64(st.NewtonIters), "nni")
	b.ReportMetric(float64(st.NewtonFails), "ncfails")
	b.ReportMetric(float64(st.LinearFails), "linfails")
	b.ReportMetric(float64(st.ErrTestFails), "etfails")
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

// BDF on the same problem; benchLinsysWith is benchLinsys for method m.
func BenchmarkBrussBDFBand500(b *testing.B) {
	benchLinsysWith(b, 500, BandJacobian{2, 2}, BDFMethod{})
}
func BenchmarkBrussBDFSparse500(b *testing.B) {
	br := newLinsysBruss(500)
	benchLinsysWith(b, 500, SparseJacobian{br.pattern()}, BDFMethod{})
}
func BenchmarkBrussBDFGMRESBandPrec500(b *testing.B) {
	benchLinsysWith(b, 500, MatrixFreeJacobian{}, BDFMethod{Linear: GMRES{Precond: BandPreconditioner{2, 2}}})
}

// BDF with GMRES, with and without the band preconditioner, at N = 100
// and 500 (200 and 1000 states): products by difference quotients.
func BenchmarkBrussBDFGMRES100(b *testing.B) {
	benchLinsysWith(b, 100, MatrixFreeJacobian{}, BDFMethod{Linear: GMRES{}})
}
func BenchmarkBrussBDFGMRESBandPrec100(b *testing.B) {
	benchLinsysWith(b, 100, MatrixFreeJacobian{}, BDFMethod{Linear: GMRES{Precond: BandPreconditioner{2, 2}}})
}
func BenchmarkBrussBDFGMRES500(b *testing.B) {
	benchLinsysWith(b, 500, MatrixFreeJacobian{}, BDFMethod{Linear: GMRES{}})
}
