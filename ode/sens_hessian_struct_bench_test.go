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
	ctx := context.Background()
	for _, m := range []ode.Method{ode.Rodas5P(), ode.BDF()} {
		for _, s := range []string{"band", "dense"} {
			b.Run(fmt.Sprintf("%v/%s", m, s), func(b *testing.B) {
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
			})
		}
	}
}
