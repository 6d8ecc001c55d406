package ode_test

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// oscillators is 25 undamped oscillators u” = −p0·(1 + i/25)·u as a
// 50-component first-order system.
func oscillators(t1 float64) ode.Problem[float64] {
	const n = 50
	k := func(i int) float64 { return 1 + float64(i)/25 }
	f := func(du, u []float64, p []float32, t float64) {
		for i := 0; i < n/2; i++ {
			du[2*i], du[2*i+1] = u[2*i+1], -float64(p[0])*k(i)*u[2*i]
		}
	}
	vjp := func(du, dp, w, u []float64, p []float32, t float64) {
		for i := 0; i < n/2; i++ {
			du[2*i+1] += w[2*i]
			du[2*i] -= w[2*i+1] * float64(p[0]) * k(i)
			if dp != nil {
				dp[0] -= w[2*i+1] * k(i) * u[2*i]
			}
		}
	}
	u0 := make([]float64, n)
	for i := range u0 {
		u0[i] = 1 / float64(1+i)
	}
	return ode.Problem[float64]{F: f, VJP: vjp, U0: u0, T1: t1, P: []float32{1.5}}
}

// heldBytes returns the heap the solver holds once warm: the live heap with
// it minus the live heap without it.
func heldBytes(t *testing.T, s ode.Sensitivity, prob ode.Problem[float64], loss ode.Loss[float64]) (bytes uint64, steps int, g []float64) {
	return heldBytesBy(t, ode.Tsit5(), s, prob, loss)
}

// heldBytesBy is heldBytes with method m.
func heldBytesBy(t *testing.T, m ode.Method, s ode.Sensitivity, prob ode.Problem[float64], loss ode.Loss[float64]) (bytes uint64, steps int, g []float64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	gs, err := ode.NewGradientSolver(prob, m, s, ode.Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gs.Gradient(context.Background(), prob.P, loss)
	if err != nil {
		t.Fatal(err)
	}
	steps = r.Forward.Accepted
	g = append(append([]float64(nil), r.P...), r.U0[:4]...)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(gs)
	return after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc), steps, g
}

// oscillatorsJac is oscillators with its Jacobian, for BDF.
func oscillatorsJac(t1 float64) ode.Problem[float64] {
	prob := oscillators(t1)
	n := len(prob.U0)
	prob.Jac = func(J, _ []float64, p []float32, _ float64) {
		clear(J[:n*n])
		for i := 0; i < n/2; i++ {
			J[2*i*n+2*i+1] = 1
			J[(2*i+1)*n+2*i] = -float64(p[0]) * (1 + float64(i)/25)
		}
	}
	return prob
}

// With Checkpoints: 100, a 10 000-step solve's gradient holds O(100 states
// + one segment) instead of every step's: Tsit5's (to t = 520) and BDF's
// (to t = 360, 10 625 steps; its segments are solved again with error
// control, not replayed, so the gradients agree to about the tolerance).
func TestCheckpointsBoundMemory(t *testing.T) {
	endLoss := func(t1 float64) ode.Loss[float64] {
		return ode.Loss[float64]{At: []float64{t1}, Saved: func(ts []float64, us, dl [][]float64) float64 {
			var v float64
			for j, x := range us[0] {
				v += x * x / 2
				dl[0][j] = x
			}
			return v
		}}
	}
	for _, tc := range []struct {
		name       string
		m          ode.Method
		prob       ode.Problem[float64]
		full, ckpt ode.Sensitivity
		agree      float64 // relative difference allowed between the gradients (0: not checked)
	}{
		{"InterpolatingAdjoint", ode.Tsit5(), oscillators(520), ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 100}, 0},
		{"DiscreteAdjoint", ode.Tsit5(), oscillators(520), ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 100}, 0},
		{"BDF/InterpolatingAdjoint", ode.BDF(), oscillatorsJac(360), ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 100}, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loss := endLoss(tc.prob.T1)
			full, steps, g1 := heldBytesBy(t, tc.m, tc.full, tc.prob, loss)
			ckpt, _, g2 := heldBytesBy(t, tc.m, tc.ckpt, tc.prob, loss)
			t.Logf("%v: %d steps of 50 states: %d KiB held without checkpoints, %d KiB with 100 (%.1f×); dL/dp %.10g vs %.10g",
				tc.m, steps, full>>10, ckpt>>10, float64(full)/float64(max(ckpt, 1)), g1[0], g2[0])
			if steps < 10000 {
				t.Fatalf("only %d steps, want a 10 000-step solve", steps)
			}
			if ckpt*4 > full {
				t.Errorf("checkpointed solver holds %d bytes, more than a quarter of the %d without", ckpt, full)
			}
			for k := range g1 {
				if d := math.Abs(g2[k] - g1[k]); tc.agree > 0 && d > tc.agree*math.Abs(g1[k]) {
					t.Errorf("gradient[%d]: %.10g with checkpoints, %.10g without", k, g2[k], g1[k])
				}
			}
		})
	}
}
