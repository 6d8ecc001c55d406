package ode_test

import (
	"testing"

	"github.com/flatkit/flatkit/ode"
)

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

// TestCheckpointsBoundMemoryBDF: as TestCheckpointsBoundMemory, with BDF:
// InterpolatingAdjoint{Checkpoints: 100} of a solve of more than 10 000
// BDF steps holds a small part of the heap the unchecked adjoint holds
// (every step's Nordsieck array), and its gradient agrees with the
// unchecked one to about the tolerance (the segments are solved again
// with error control, not replayed).
func TestCheckpointsBoundMemoryBDF(t *testing.T) {
	const t1 = 360
	prob := oscillatorsJac(t1)
	loss := ode.Loss[float64]{At: []float64{t1}, Saved: func(ts []float64, us, dl [][]float64) float64 {
		var v float64
		for j, x := range us[0] {
			v += x * x / 2
			dl[0][j] = x
		}
		return v
	}}
	full, steps, g1 := heldBytesBy(t, ode.BDF(), ode.InterpolatingAdjoint{}, prob, loss)
	ckpt, _, g2 := heldBytesBy(t, ode.BDF(), ode.InterpolatingAdjoint{Checkpoints: 100}, prob, loss)
	t.Logf("%d BDF steps of 50 states: %d KiB held without checkpoints, %d KiB with 100 (%.1f×); dL/dp %.10g vs %.10g",
		steps, full>>10, ckpt>>10, float64(full)/float64(max(ckpt, 1)), g1[0], g2[0])
	if steps < 10000 {
		t.Fatalf("only %d steps, want a 10 000-step solve", steps)
	}
	if ckpt*4 > full {
		t.Errorf("checkpointed solver holds %d bytes, more than a quarter of the %d without", ckpt, full)
	}
	for k := range g1 {
		if d := g2[k] - g1[k]; d*d > 1e-8*g1[k]*g1[k] {
			t.Errorf("gradient[%d]: %.10g with checkpoints, %.10g without", k, g2[k], g1[k])
		}
	}
}
