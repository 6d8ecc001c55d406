package ode_test

import (
	"context"
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

// With Checkpoints: 100, a 10 000-step solve's gradient holds O(100 states
// + one segment) instead of every step's.
func TestCheckpointsBoundMemory(t *testing.T) {
	prob := oscillators(520)
	loss := ode.Loss[float64]{At: []float64{520}, Saved: func(ts []float64, us, dl [][]float64) float64 {
		var v float64
		for j, x := range us[0] {
			v += x * x / 2
			dl[0][j] = x
		}
		return v
	}}
	for _, tc := range []struct {
		name       string
		full, ckpt ode.Sensitivity
	}{
		{"InterpolatingAdjoint", ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 100}},
		{"DiscreteAdjoint", ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, steps, g1 := heldBytes(t, tc.full, prob, loss)
			ckpt, _, g2 := heldBytes(t, tc.ckpt, prob, loss)
			t.Logf("%d steps of 50 states: %d KiB held without checkpoints, %d KiB with 100 (%.1f×); dL/dp %.10g vs %.10g",
				steps, full>>10, ckpt>>10, float64(full)/float64(max(ckpt, 1)), g1[0], g2[0])
			if steps < 10000 {
				t.Fatalf("only %d steps, want a 10 000-step solve", steps)
			}
			if ckpt*4 > full {
				t.Errorf("checkpointed solver holds %d bytes, more than a quarter of the %d without", ckpt, full)
			}
		})
	}
}
