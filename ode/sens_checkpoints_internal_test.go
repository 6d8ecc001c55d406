package ode

import (
	"context"
	"slices"
	"testing"
)

// TestInterpCheckpointReplay: with Checkpoints, InterpolatingAdjoint
// replays each segment on the forward solve's own steps, so the dense
// output the backward pass reads is the forward solve's bit for bit (F is
// autonomous, so the stage at a step's end does not depend on how its time
// was computed), and the backward solve, which does not stop at the
// checkpoints, takes the same steps: the gradient equals the one without
// checkpoints exactly. Also checked: the first segment (the last one
// replayed) against the same steps of the solve without checkpoints, and
// that no segment is replayed twice.
func TestInterpCheckpointReplay(t *testing.T) {
	prob := Problem[float64]{F: lvInF, JVP: lvInJVP, VJP: lvInVJP, U0: []float64{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	loss := Loss[float64]{At: []float64{3, 10}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		dl[0], dl[1] = u[0], u[1]
		return (u[0]*u[0] + u[1]*u[1]) / 2
	}}
	run := func(s InterpolatingAdjoint, opts ...GradientOption) (*interpAdjoint[float64], GradientResult[float64]) {
		gs, err := NewGradientSolver(prob, Tsit5(), s, opts...)
		if err != nil {
			t.Fatal(err)
		}
		g, err := gs.Gradient(context.Background(), prob.P, loss)
		if err != nil {
			t.Fatal(err)
		}
		r := *g
		r.P, r.U0 = slices.Clone(g.P), slices.Clone(g.U0)
		return gs.impl.(*interpAdjoint[float64]), r
	}
	for _, opts := range [][]GradientOption{{Tol(1e-6, 1e-8)}, {Tol(1e-9, 1e-11), TStops(2.5, 7)}} {
		full, gf := run(InterpolatingAdjoint{}, opts...)
		for _, budget := range []int{2, 4, 10, 1000} {
			ck, gc := run(InterpolatingAdjoint{Checkpoints: budget}, opts...)
			if !slices.Equal(gf.P, gc.P) || !slices.Equal(gf.U0, gc.U0) || gf.Value != gc.Value || gf.T0 != gc.T0 || gf.T1 != gc.T1 {
				t.Errorf("Checkpoints %d: dL/dp %v, dL/du0 %v, T0 %v, T1 %v; without: %v, %v, %v, %v",
					budget, gc.P, gc.U0, gc.T0, gc.T1, gf.P, gf.U0, gf.T0, gf.T1)
			}
			// The backward counters: the adjoint's steps (as without
			// checkpoints) plus each forward step replayed at most once (a
			// short segment no backward stage falls in is never read).
			if most := gf.Backward.Accepted + gf.Forward.Accepted; gc.Backward.Accepted > most || gc.Backward.Accepted < most-budget/10-1 {
				t.Errorf("Checkpoints %d: %d backward steps, want %d + at most %d", budget, gc.Backward.Accepted, gf.Backward.Accepted, gf.Forward.Accepted)
			}
			c := ck.cache
			s := 0
			if c.held[1] == 0 {
				s = 1
			}
			seg, fwd := c.its[s], full.fwd
			if c.held[s] != 0 {
				t.Fatalf("Checkpoints %d: the first segment is not held (%v)", budget, c.held)
			}
			k := len(seg.denseT)
			if k == 0 || k > len(fwd.denseT) {
				t.Fatalf("Checkpoints %d: first segment has %d steps of %d", budget, k, len(fwd.denseT))
			}
			sz := (seg.deg + 1) * seg.n
			if !slices.Equal(seg.denseT, fwd.denseT[:k]) || !slices.Equal(seg.denseH, fwd.denseH[:k]) || !slices.Equal(seg.denseC, fwd.denseC[:k*sz]) {
				t.Fatalf("Checkpoints %d: the replayed steps differ from the forward solve's", budget)
			}
		}
	}
}
