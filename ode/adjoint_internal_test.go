package ode

import (
	"context"
	"slices"
	"testing"
)

// TestInterpCheckpointReplay: with Checkpoints, InterpolatingAdjoint
// re-solves each segment on the forward solve's own steps, so the dense
// output the backward pass reads is the forward solve's, bit for bit (F
// is autonomous, so the stage at a step's end does not depend on how its
// time was computed). The first segment, the last one replayed, is left in
// the segment integrator; it is compared with the same steps of a solve
// without checkpoints.
func TestInterpCheckpointReplay(t *testing.T) {
	prob := Problem[float64]{F: lvInF, JVP: lvInJVP, VJP: lvInVJP, U0: []float64{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	loss := Loss[float64]{At: []float64{3, 10}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		dl[0], dl[1] = u[0], u[1]
		return (u[0]*u[0] + u[1]*u[1]) / 2
	}}
	run := func(s InterpolatingAdjoint, opts ...Option) (*interpAdjoint[float64], *GradResult[float64]) {
		gs, err := NewGradientSolver(prob, Tsit5(), s, opts...)
		if err != nil {
			t.Fatal(err)
		}
		g, err := gs.Gradient(context.Background(), prob.P, loss)
		if err != nil {
			t.Fatal(err)
		}
		return gs.impl.(*interpAdjoint[float64]), g
	}
	for _, opts := range [][]Option{{Tol(1e-6, 1e-8)}, {Tol(1e-9, 1e-11), TStops(2.5, 7)}} {
		full, gf := run(InterpolatingAdjoint{}, opts...)
		ck, gc := run(InterpolatingAdjoint{Checkpoints: 4}, opts...)
		seg, fwd := ck.seg, full.fwd
		k := len(seg.denseT)
		if k == 0 || k >= len(fwd.denseT) {
			t.Fatalf("first segment has %d steps of %d", k, len(fwd.denseT))
		}
		if !slices.Equal(seg.denseT, fwd.denseT[:k]) || !slices.Equal(seg.denseH, fwd.denseH[:k]) {
			t.Fatalf("the replayed steps differ from the forward solve's")
		}
		sz := (seg.deg + 1) * seg.n
		if !slices.Equal(seg.denseC, fwd.denseC[:k*sz]) {
			t.Fatalf("the replayed dense output differs from the forward solve's")
		}
		// The replays take exactly the forward solve's steps (and no
		// rejections): the backward counters hold them plus the adjoint's.
		if gc.Backward.Accepted < gf.Forward.Accepted {
			t.Errorf("backward counters %d accepted steps, fewer than the %d replayed", gc.Backward.Accepted, gf.Forward.Accepted)
		}
		for i := range gf.P {
			if d := gf.P[i] - gc.P[i]; d > 1e-5*max(1, gf.P[i]) || -d > 1e-5*max(1, gf.P[i]) {
				t.Errorf("dL/dp_%d: %g without checkpoints, %g with", i, gf.P[i], gc.P[i])
			}
		}
	}
}
