package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

func lvLoss32() ode.Loss[float32] {
	return ode.Loss[float32]{At: []float64{10}, Saved: func(ts []float64, us, dl [][]float32) float64 {
		a, b := 1-float64(us[0][0]), 1-float64(us[0][1])
		dl[0][0], dl[0][1] = float32(-a), float32(-b)
		return (a*a + b*b) / 2
	}}
}

// lvMaxRelErr32 is the largest relative error over the components of the
// gradient (dG/dp, dG/du0, dG/dT0, dG/dT1); the loss value itself is a small
// difference, 1.4e-3 off at rtol 1e-5 in the forward solve alone.
func lvMaxRelErr32(g *ode.GradientResult[float32]) float64 {
	var e float64
	for i, w := range lvRefP {
		e = max(e, math.Abs(float64(g.P[i])-w)/math.Abs(w))
	}
	for i, w := range lvRefU0 {
		e = max(e, math.Abs(float64(g.U0[i])-w)/math.Abs(w))
	}
	return max(e, math.Abs(g.T1-lvRefT1)/lvRefT1, math.Abs(g.T0+lvRefT1)/lvRefT1)
}

// With derivatives from ad and a float32 state at rtol 1e-5, every
// sensitivity method is within 1e-3 of the reference (Tsit5, Rodas5P).
func TestLotkaVolterraGradientAD(t *testing.T) {
	prob, err := ode.ADProblem(adLV, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		for _, s := range []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 10},
			ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}} {
			if _, ok := s.(ode.DiscreteAdjoint); ok && m.Name() == "Rodas5P" {
				continue
			}
			t.Run(m.Name()+"/"+s.Name(), func(t *testing.T) {
				g, err := ode.Gradient(context.Background(), prob, m, lvLoss32(), s, ode.Tol(1e-5, 1e-7))
				if err != nil {
					t.Fatal(err)
				}
				e := lvMaxRelErr32(g)
				t.Logf("G=%.7g P=%.6g U0=%.6g err=%.2e steps %d/%d", g.Value, g.P, g.U0, e, g.Forward.Accepted, g.Backward.Accepted)
				if e > 1e-3 {
					t.Errorf("max relative error %.3g > 1e-3", e)
				}
			})
		}
	}
}

// Plain Go F with finite-difference products (the methods' FiniteDiff):
// float64 state at rtol 1e-10, within the documented accuracy (the
// parameter columns ~1e-5 relative at worst; LV is linear in p, so its
// central differences are exact to rounding).
func TestLotkaVolterraGradientFiniteDiff(t *testing.T) {
	prob := ode.Problem[float64]{F: lvF, U0: []float64{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	for _, c := range []struct{ s, fd ode.Sensitivity }{
		{ode.ForwardSensitivity{}, ode.ForwardSensitivity{FiniteDiff: true}},
		{ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{FiniteDiff: true}},
		{ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{FiniteDiff: true}},
	} {
		t.Run(c.s.Name(), func(t *testing.T) {
			if _, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), lvLoss(), c.s); err == nil {
				t.Fatal("no JVP/VJP and no FiniteDiff: want an error naming the missing product")
			} else {
				t.Log(err)
			}
			g, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), lvLoss(), c.fd, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			e := lvMaxRelErr(g)
			t.Logf("err=%.2e", e)
			if e > 1e-6 {
				t.Errorf("max relative error %.3g > 1e-6", e)
			}
		})
	}
}
