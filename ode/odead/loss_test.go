package odead_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// lv32 is Lotka-Volterra with float32 state and exact derivative callbacks.
func lv32() ode.Problem[float32] {
	return ode.Problem[float32]{
		F: lotkavolterra.F[float32], VJP: lotkavolterra.VJP[float32],
		U0: []float32{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1},
	}
}

// A loss written with ad ops gives the gradient of the same loss written
// by hand, and couples save times (a non-separable loss).
func TestLossMatchesHandWrittenLoss(t *testing.T) {
	at := []float64{2, 5, 10}
	adl := odead.Loss(at, func(ts []float64, us []ad.Var) ad.Var {
		d := ad.Sub(us[2], us[0])
		return ad.Add(ad.Sum(ad.Mul(d, d)), ad.Sum(ad.Square(us[1])))
	})
	hand := ode.Loss[float32]{At: at, Saved: func(ts []float64, us, dl [][]float32) float64 {
		var v float64
		for j := range us[0] {
			d := us[2][j] - us[0][j]
			v += float64(d*d) + float64(us[1][j]*us[1][j])
			dl[2][j], dl[0][j], dl[1][j] = 2*d, -2*d, 2*us[1][j]
		}
		return v
	}}
	ctx := context.Background()
	gs, err := ode.NewGradientSolver(lv32(), ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-5, 1e-7))
	if err != nil {
		t.Fatal(err)
	}
	g1, err := gs.Gradient(ctx, lv32().P, adl)
	if err != nil {
		t.Fatal(err)
	}
	v1, p1 := g1.Value, append([]float32(nil), g1.P...)
	g2, err := gs.Gradient(ctx, lv32().P, hand)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v1-g2.Value) > 1e-6*math.Abs(g2.Value) {
		t.Errorf("value %g by Loss, %g by hand", v1, g2.Value)
	}
	for k := range p1 {
		if math.Abs(float64(p1[k]-g2.P[k])) > 1e-5*math.Abs(float64(g2.P[k]))+1e-6 {
			t.Errorf("dL/dp[%d] = %g by Loss, %g by hand", k, p1[k], g2.P[k])
		}
	}
	if race.Enabled {
		return // the race detector allocates
	}
	θ := lv32().P
	if a := testing.AllocsPerRun(10, func() { _, _ = gs.Gradient(ctx, θ, adl) }); a != 0 {
		t.Errorf("%v allocations per warm gradient with Loss, want 0", a)
	}
}

func TestLossErrorReachesGradient(t *testing.T) {
	bad := odead.Loss([]float64{10}, func(ts []float64, us []ad.Var) ad.Var {
		return ad.Sum(ad.Add(us[0], ad.Reshape(us[0], 1, 2, 1))) // broadcasts to (1,2,2): fine
	})
	worse := odead.Loss([]float64{10}, func(ts []float64, us []ad.Var) ad.Var {
		u := ad.Reshape(us[0], 1, 2)
		return ad.Sum(ad.MatMul(u, u)) // (1×2)·(1×2): a shape error
	})
	_, err := ode.Gradient(context.Background(), lv32(), ode.Tsit5(), bad, ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatalf("a valid ad loss failed: %v", err)
	}
	_, err = ode.Gradient(context.Background(), lv32(), ode.Tsit5(), worse, ode.InterpolatingAdjoint{})
	if err == nil || !strings.Contains(err.Error(), "MatMul") {
		t.Fatalf("got %v, want the loss's MatMul shape error", err)
	}
	t.Log(err)
}

// A loss that returns the zero Var fails the gradient with what was wanted.
func TestLossZeroVar(t *testing.T) {
	bad := odead.Loss([]float64{10}, func(ts []float64, us []ad.Var) ad.Var { return ad.Var{} })
	_, err := ode.Gradient(context.Background(), lv32(), ode.Tsit5(), bad, ode.InterpolatingAdjoint{})
	if want := "the loss returned the zero Var or a Var of another tape, want a Var computed from the states on their tape"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}
