package ode

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
)

// TestHvCheckpointsBoundMemory: with Checkpoints the forward solve of
// [u, ṡ] keeps no dense output, at most Checkpoints states, and the
// backward pass holds two segments at a time, fewer steps than the
// forward solve took.
func TestHvCheckpointsBoundMemory(t *testing.T) {
	prob := Problem[float64]{F: lvInF, JVP: lvInJVP, VJP: lvInVJP, VJPJVP: lotkavolterra.VJPJVP[float64],
		U0: []float64{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	loss := HvLoss[float64]{Loss: Loss[float64]{At: []float64{3, 10}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		dl[0], dl[1] = u[0], u[1]
		return (u[0]*u[0] + u[1]*u[1]) / 2
	}}}
	for _, budget := range []int{8, 16} {
		hs, err := NewHvSolver(prob, Tsit5(), InterpolatingAdjoint{Checkpoints: budget}, Tol(1e-8, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		r, err := hs.HvFor(context.Background(), prob, loss, []float64{1, 0, 0, 0, 0, 1})
		if err != nil {
			t.Fatal(err)
		}
		steps := r.Forward.Accepted
		held := 0
		for i, it := range hs.cache.its {
			if hs.cache.held[i] >= 0 {
				held += len(it.denseT)
			}
		}
		t.Logf("Checkpoints %d: %d forward steps, %d checkpoints, %d steps held by the segments", budget, steps, hs.tr.ck.len(), held)
		if n := len(hs.fwd.denseT); n != 0 {
			t.Errorf("Checkpoints %d: the forward solve kept %d steps of dense output, want none", budget, n)
		}
		if k := hs.tr.ck.len(); k > budget {
			t.Errorf("Checkpoints %d: %d checkpoints kept", budget, k)
		}
		if held == 0 || held > steps/2 {
			t.Errorf("Checkpoints %d: the segments hold %d of the %d forward steps, want some and at most half", budget, held, steps)
		}
		if len(hs.ub) != 2*len(prob.U0) || hs.tr.ck.n != len(hs.ub) {
			t.Errorf("Checkpoints %d: checkpoints of %d values, want the state and its tangent (%d)", budget, hs.tr.ck.n, 2*len(prob.U0))
		}
	}
}
