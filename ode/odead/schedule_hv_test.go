package odead_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// A PK model built with ad ops end to end: elimination u' = −k·u written
// with odead.Problem, and a nonlinear dose u ← u·e^(−c) + D written with
// odead.AddSchedule at fixed times 1 and 2.5, θ = (k, D, c). The
// Hessian-vector products through the doses take odead's exact effect
// products; they equal central differences of the gradient, Richardson
// extrapolated over steps exact in float32, along each unit vector.
func TestHessianVectorThroughAddSchedule(t *testing.T) {
	prob, err := odead.Problem(func(u, p ad.Var, _ float64) ad.Var { return ad.Neg(ad.Mul(ad.Slice(p, 0, 1), u)) },
		[]float64{0.5}, 0, 4, []float32{0.75, 1.25, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	dose := func(u, p, _ ad.Var) ad.Var {
		return ad.Add(ad.Mul(u, ad.Exp(ad.Neg(ad.Slice(p, 2, 3)))), ad.Slice(p, 1, 2))
	}
	if err := odead.AddSchedule(&prob, []float64{1, 2.5}, dose); err != nil {
		t.Fatal(err)
	}
	data := []float64{0.9, 0.7, 1.3, 0.8}
	loss := ode.Loss[float64]{At: []float64{0.5, 1.5, 3, 4}, Saved: func(_ []float64, us, dl [][]float64) float64 {
		var l float64
		for i, u := range us {
			d := u[0] - data[i]
			dl[i][0] = d
			l += d * d / 2
		}
		return l
	}}
	ctx := context.Background()
	tol := ode.Tol(1e-11, 1e-13)
	for _, m := range []ode.Method{ode.Vern7(), ode.Rodas5P()} {
		hs, err := ode.NewHvSolver(prob, m, ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := ode.NewGradientSolver(prob, m, ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		grad := func(θ []float32) []float64 {
			r, err := gs.Gradient(ctx, θ, loss)
			if err != nil {
				t.Fatal(err)
			}
			return append([]float64(nil), r.P...)
		}
		np := len(prob.P)
		v := make([]float64, np+1)
		for k := range np {
			clear(v)
			v[k] = 1
			r, err := hs.Hv(ctx, prob.P, ode.HvLoss[float64]{Loss: loss}, v)
			if err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
			// Central differences at steps 2⁻⁸ and 2⁻⁹, exact in float32,
			// extrapolated: error O(δ⁴).
			diff := func(δ float32) []float64 {
				θ := append([]float32(nil), prob.P...)
				θ[k] += δ
				gp := grad(θ)
				θ[k] -= 2 * δ
				gm := grad(θ)
				for i := range gp {
					gp[i] = (gp[i] - gm[i]) / (2 * float64(δ))
				}
				return gp
			}
			d1, d2 := diff(0x1p-8), diff(0x1p-9)
			for i := range np {
				want := (4*d2[i] - d1[i]) / 3
				if got := r.HvP[i]; math.Abs(got-want) > 1e-7*math.Max(1, math.Abs(want)) {
					t.Errorf("%s: H[%d][%d] = %.12g, differences of the gradient %.12g", m.Name(), i, k, got, want)
				}
			}
		}
	}
}
