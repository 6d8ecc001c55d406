package ode_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// BenchmarkHvBrusselator measures one warm Hessian-vector product of the
// Brusselator's loss (brussHvLoss) on N = 100 grid points, 200 states, by
// Rodas5P and BDF at rtol 1e-6, with the augmented systems in band storage
// against dense ones.
func BenchmarkHvBrusselator(b *testing.B) {
	const N = 100
	for _, m := range []ode.Method{ode.Rodas5P(), ode.BDF()} {
		for _, s := range []string{"band", "dense"} {
			b.Run(fmt.Sprintf("%v/%s", m, s), func(b *testing.B) {
				benchHvBruss(b, N, s, m)
			})
		}
	}
}

// BenchmarkHvBrusselatorKrylov is BenchmarkHvBrusselator with the
// augmented systems solved by GMRES, matrix-free, with a band
// preconditioner of the Jacobian's bandwidths at N = 100 and 400 grid
// points, and without one (BDF, N = 100).
func BenchmarkHvBrusselatorKrylov(b *testing.B) {
	band := ode.GMRES{Precond: ode.BandPreconditioner{Lower: 2, Upper: 2}}
	for _, N := range []int{100, 400} {
		for _, m := range []ode.Method{ode.Rodas5PMethod{Linear: band}, ode.BDFMethod{Linear: band}, ode.BDFMethod{Linear: ode.GMRES{}}} {
			if N > 100 && methodPrecond(m) == "no preconditioner" {
				continue
			}
			b.Run(fmt.Sprintf("N=%d/%v/%s", N, m, methodPrecond(m)), func(b *testing.B) {
				benchHvBruss(b, N, "free", m)
			})
		}
	}
}

// benchHvBruss measures one warm product of brussHvLoss on the
// Brusselator of N points in structure s by m, at rtol 1e-6.
func benchHvBruss(b *testing.B, N int, s string, m ode.Method) {
	ctx := context.Background()
	prob := brussHvProblem(N, s)
	hs, err := ode.NewHvSolver(prob, m, ode.InterpolatingAdjoint{}, ode.Tol(1e-6, 1e-8), ode.MaxSteps(1e6))
	if err != nil {
		b.Fatal(err)
	}
	loss := brussHvLoss(false)
	v := brussHvDirections(3, 2*N, 1)[0]
	if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := hs.Hv(ctx, prob.P, loss, v); err != nil {
			b.Fatal(err)
		}
	}
}
