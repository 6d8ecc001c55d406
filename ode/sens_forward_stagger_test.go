package ode_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/flatkit/flatkit/ode"
)

// ForwardSensitivity with BDF over a band Jacobian on the 1-D
// Brusselator, θ = (A, B, 50α) and the 2N initial values (2N+3
// sensitivities), rtol 1e-6, atol 1e-8: the staggered corrector's cost,
// in wall time and in CPU time (cpu-ms/op, steadier on a loaded machine).
// "newton" counts the state's and the sensitivities' iterations.
// go test ./ode -run X -bench BrusselatorForwardBDF -benchtime 5x
func BenchmarkBrusselatorForwardBDF(b *testing.B) {
	ctx := context.Background()
	for _, N := range []int{10, 50, 100} {
		prob := brussSensProblem(N, "band")
		b.Run(fmt.Sprintf("N=%d", N), func(b *testing.B) {
			gs, err := ode.NewGradientSolver(prob, ode.BDF(), ode.ForwardSensitivity{}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				b.Fatal(err)
			}
			loss := brussSensLoss()
			b.ReportAllocs()
			var g *ode.GradientResult[float64]
			if g, err = gs.Gradient(ctx, prob.P, loss); err != nil { // warm
				b.Fatal(err)
			}
			c0 := cpuTime()
			for b.Loop() {
				if g, err = gs.Gradient(ctx, prob.P, loss); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(g.Forward.Accepted), "steps")
			b.ReportMetric(float64(g.Forward.NewtonIters), "newton")
			b.ReportMetric(float64(g.Forward.LUs), "LUs")
		})
	}
}

// cpuTime is the process's user and system CPU time: a cost measure less
// moved by other processes on a loaded machine than the wall clock.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
