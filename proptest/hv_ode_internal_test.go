package proptest

import (
	"context"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Random ODE problems (ODECases, written with ad ops so that odead gives
// the exact VJPJVP) with their losses, running cost included: the
// Hessian-vector products of ode.HessianVector along u0 agree with
// Richardson differences of the adjoint gradient and are symmetric
// (CheckHv in float64); along θ, a float32 buffer, they agree with
// differences of the gradient to float32's accuracy.
func TestODEHessianVectorsOfRandomProblems(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		c := drawODECase(t)
		c.Stiff = 0
		prob, err := odead.Problem(c.rhs64(), slices.Clone(c.U0), 0, c.T1, slices.Clone(c.P))
		if err != nil {
			t.Fatal(err)
		}
		loss := ode.HvLoss[float64]{Loss: Loss[float64](c)}
		opts := []ode.GradientOption{ode.Tol(1e-11, 1e-13), ode.TStops(c.At...)}
		gs, err := ode.NewGradientSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := ode.NewHvSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		np := len(prob.P)
		v := make([]float64, np+len(prob.U0))
		at := func(u0 []float64, p []float32) ode.Problem[float64] {
			q := prob
			q.U0, q.P = u0, p
			return q
		}
		gradU0 := func(u0, g []float64) error {
			r, err := gs.GradientFor(ctx, at(u0, prob.P), loss.Loss)
			if err == nil {
				copy(g, r.U0)
			}
			return err
		}
		hvU0 := func(u0, dir, out []float64) error {
			clear(v)
			copy(v[np:], dir)
			r, err := hs.HvFor(ctx, at(u0, prob.P), loss, v)
			if err == nil {
				copy(out, r.HvU0)
			}
			return err
		}
		CheckHv(t, gradU0, hvU0, slices.Clone(c.U0))

		gradP := func(p, g []float32) error {
			r, err := gs.GradientFor(ctx, at(prob.U0, p), loss.Loss)
			if err == nil {
				for k, x := range r.P {
					g[k] = float32(x)
				}
			}
			return err
		}
		hvP := func(p, dir, out []float32) error {
			clear(v)
			for k, d := range dir {
				v[k] = float64(d)
			}
			r, err := hs.HvFor(ctx, at(prob.U0, p), loss, v)
			if err == nil {
				for k, x := range r.HvP {
					out[k] = float32(x)
				}
			}
			return err
		}
		CheckHv(t, gradP, hvP, slices.Clone(c.P), SharpTol())
	})
}
