package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// The ensemble Hessian-vector product is the sum of the trajectories'
// products, taken shard by shard, bit for bit the same on any number of
// workers; its gradient is Ensemble.Gradient's to the tolerance (the
// product's forward solve takes its own steps, with the tangent in the
// error control).
func TestEnsembleHessianVectorSumsTrajectories(t *testing.T) {
	ctx := context.Background()
	ens, lossFor := lvEnsemble(10)
	ens.Base.VJPJVP = lotkavolterra.VJPJVP[float64]
	hvLossFor := func(i int) ode.HvLoss[float64] { return ode.HvLoss[float64]{Loss: lossFor(i)} }
	tol := ode.Tol(1e-8, 1e-10)
	v := []float64{0.3, -1, 0.5, 0.25}
	var want, shard [4]float64
	for i := 0; i < ens.N; i++ {
		h, err := ode.HessianVector(ctx, ens.Problem(i), ode.Tsit5(), hvLossFor(i), append(v[:4:4], 0, 0), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range h.HvP {
			shard[k] += x
		}
		if i%ens.ShardSize == ens.ShardSize-1 || i == ens.N-1 {
			for k := range want {
				want[k] += shard[k]
			}
			shard = [4]float64{}
		}
	}
	g, err := ens.Gradient(ctx, ode.Tsit5(), lossFor, ode.InterpolatingAdjoint{}, tol)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 2, 3} {
		h, err := ens.HessianVector(ctx, ode.Tsit5(), hvLossFor, v, ode.InterpolatingAdjoint{}, tol, ode.Workers(w))
		if err != nil {
			t.Fatal(err)
		}
		if h.Count != ens.N || math.Abs(h.Value-g.Value) > 1e-6*g.Value {
			t.Errorf("workers %d: count %d value %v, want %d %v", w, h.Count, h.Value, ens.N, g.Value)
		}
		for k := range want {
			if h.HvP[k] != want[k] {
				t.Errorf("workers %d: HvP[%d] = %v, want %v (the shard-ordered sum)", w, k, h.HvP[k], want[k])
			}
			if math.Abs(h.P[k]-g.P[k]) > 1e-6*math.Abs(g.P[k]) {
				t.Errorf("workers %d: P[%d] = %v, Ensemble.Gradient's %v", w, k, h.P[k], g.P[k])
			}
		}
	}
	if _, err := ens.HessianVector(ctx, ode.Tsit5(), hvLossFor, v[:3], ode.InterpolatingAdjoint{}, tol); err == nil {
		t.Error("a direction of 3 for 4 parameters: no error")
	}
}
