package odead_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// The reference gradient of Lotka-Volterra (SUNDIALS' cvsLotkaVolterra_ASA
// problem: p = (1.5, 1, 3, 1), u0 = (1, 1), t ∈ [0, 10], G = ‖1 −
// u(10)‖²/2), as ode's tests hold it (CVODES at rtol 1e-12).
var (
	lvRefP  = []float64{0.621961585551281, 0.0680014041508743, 0.169176463995893, 0.272560693950007}
	lvRefU0 = []float64{0.299599508303682, -0.0141518163448535}
	lvRefT1 = 0.178103386841548
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
	prob, err := odead.Problem(adLV, []float32{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
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
