package ode_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flatkit/flatkit/ode"
)

// Issue 28's check at its own size: the 1-D Brusselator at N = 500 (1000
// states), G = ½ Σ u_i(10)², θ = (A, B, 50α) and the 1000 initial values.
// Every sensitivity method × {BDF, Rodas5P} × {band, sparse} is held to
// 1e-5 relative in norm against central differences of tight solves in 6
// random directions of all 1003 parameters, and DiscreteAdjoint against
// InterpolatingAdjoint over the whole gradient.

// brussDir is a direction in (p, u0): p's steps are multiples of 2⁻⁸, so
// that p ± h·dp (h = 2⁻¹² or 2⁻¹³) is exact in float32.
type brussDir struct {
	dp  []float64
	du0 []float64
}

func brussDirections(n, k int, seed uint64) []brussDir {
	r := rand.New(rand.NewPCG(seed, 28))
	ds := make([]brussDir, k)
	for j := range ds {
		d := brussDir{dp: make([]float64, 3), du0: make([]float64, 2*n)}
		for i := range d.dp {
			d.dp[i] = float64(r.IntN(513)-256) / 256
		}
		for i := range d.du0 {
			d.du0[i] = 2*r.Float64() - 1
		}
		ds[j] = d
	}
	return ds
}

// along is the directional derivative of a gradient along d.
func (d brussDir) along(g *ode.GradientResult[float64]) float64 {
	var s float64
	for i, v := range d.dp {
		s += g.P[i] * v
	}
	for i, v := range d.du0 {
		s += g.U0[i] * v
	}
	return s
}

// brussDirectional returns G's derivatives along ds by central differences
// of tight solves (Rodas5P, rtol 1e-10), extrapolated from h = 2⁻¹² and
// 2⁻¹³ (Richardson: G is strongly nonlinear in A).
func brussDirectional(t *testing.T, n int, ds []brussDir) []float64 {
	t.Helper()
	prob := brussSensProblem(n, "band")
	at := func(d brussDir, h float64) float64 {
		q := prob
		q.P = make([]float32, 3)
		for i, v := range prob.P {
			x := float64(v) + h*d.dp[i]
			if float64(float32(x)) != x {
				t.Fatalf("p[%d] + %g = %g is not exact in float32", i, h*d.dp[i], x)
			}
			q.P[i] = float32(x)
		}
		q.U0 = make([]float64, len(prob.U0))
		for i, v := range prob.U0 {
			q.U0[i] = v + h*d.du0[i]
		}
		return brussLossAt(t, q)
	}
	out := make([]float64, len(ds))
	for j, d := range ds {
		const h = 0x1p-12
		d1 := (at(d, h) - at(d, -h)) / (2 * h)
		d2 := (at(d, h/2) - at(d, -h/2)) / h
		out[j] = (4*d2 - d1) / 3
	}
	return out
}

// discreteRefused reports whether err is ode's refusal of DiscreteAdjoint
// through method m, as ode gives it before DiscreteAdjoint goes through
// stiff steps.
func discreteRefused(err error, m ode.Method) bool {
	return err != nil && strings.Contains(err.Error(), "DiscreteAdjoint supports the explicit Runge–Kutta methods") &&
		strings.Contains(err.Error(), "not "+m.Name())
}

// brussGrad500Tol is the tolerance of the gradients: at rtol 1e-6 the
// adjoints' errors in dG/du0 are near 1e-4 (bench stiffsens); the bar is
// 1e-5.
var brussGrad500Tol = []ode.GradientOption{ode.Tol(1e-9, 1e-11), ode.MaxSteps(1e6)}

// TestBrusselatorGradient500: at N = 500 (50 with -short),
// InterpolatingAdjoint with and without checkpoints, GaussAdjoint and
// DiscreteAdjoint (Rodas5P; BDF's is refused, and skipped) over BDF and
// Rodas5P, band and sparse, at rtol 1e-9. BacksolveAdjoint cannot solve
// this problem: u integrated back through the diffusion blows up
// (BacksolveAdjoint's doc). ForwardSensitivity's 1004
// systems of 1000 states take minutes at N = 500: it runs there only
// with FLATKIT_LONG=1 (and not -short), else at N = 50.
func TestBrusselatorGradient500(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 50
	}
	long := os.Getenv("FLATKIT_LONG") == "1" && !testing.Short()
	sens := []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 20}, ode.GaussAdjoint{}}
	if n == 50 || long {
		sens = append(sens, ode.ForwardSensitivity{})
	}
	brussGradientAt(t, n, sens, true)
	if n != 50 && !long {
		t.Run("N=50", func(t *testing.T) { brussGradientAt(t, 50, []ode.Sensitivity{ode.ForwardSensitivity{}}, false) })
	}
}

// brussGradientAt checks the gradients by sens (and DiscreteAdjoint's,
// with discrete) × {BDF, Rodas5P} × {band, sparse} at N against central
// differences along 6 directions; DiscreteAdjoint's also against the
// first of sens over the whole gradient.
func brussGradientAt(t *testing.T, n int, sens []ode.Sensitivity, discrete bool) {
	ctx := context.Background()
	ds := brussDirections(n, 6, uint64(n))
	start := time.Now()
	fd := brussDirectional(t, n, ds)
	t.Logf("N = %d: central differences along 6 directions in %v: %.10g", n, time.Since(start).Round(time.Millisecond), fd)
	loss := brussSensLoss()
	check := func(t *testing.T, g *ode.GradientResult[float64]) {
		t.Helper()
		got := make([]float64, len(ds))
		for j, d := range ds {
			got[j] = d.along(g)
		}
		e := relNorm(got, fd)
		t.Logf("directional derivatives %.10g: %.2g from central differences", got, e)
		if !(e <= 1e-5) {
			t.Errorf("directional derivatives %.10g, central differences %.10g: %.2g relative in norm, want ≤ 1e-5", got, fd, e)
		}
	}
	for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
		for _, st := range []string{"band", "sparse"} {
			prob := brussSensProblem(n, st)
			var first *ode.GradientResult[float64]
			for _, s := range sens {
				name := s.Name()
				if c, ok := s.(ode.InterpolatingAdjoint); ok && c.Checkpoints > 0 {
					name += fmt.Sprintf("-Checkpoints%d", c.Checkpoints)
				}
				t.Run(fmt.Sprintf("N=%d/%v/%s/%s", n, m, st, name), func(t *testing.T) {
					start := time.Now()
					g, err := ode.Gradient(ctx, prob, m, loss, s, brussGrad500Tol...)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%v, %d forward and %d backward steps", time.Since(start).Round(time.Millisecond), g.Forward.Accepted, g.Backward.Accepted)
					check(t, g)
					if first == nil {
						first = g
					}
				})
			}
			if !discrete {
				continue
			}
			t.Run(fmt.Sprintf("N=%d/%v/%s/DiscreteAdjoint", n, m, st), func(t *testing.T) {
				g, err := ode.Gradient(ctx, prob, m, loss, ode.DiscreteAdjoint{}, brussGrad500Tol...)
				if discreteRefused(err, m) {
					t.Skip(fmt.Sprintf("DiscreteAdjoint through %v: %v", m, err))
				}
				if err != nil {
					t.Fatalf("DiscreteAdjoint through %v: %v", m, err)
				}
				check(t, g)
				if first == nil {
					t.Fatal("no other gradient to compare with")
				}
				a := append(append([]float64(nil), g.P...), g.U0...)
				b := append(append([]float64(nil), first.P...), first.U0...)
				if e := relNorm(a, b); !(e <= 1e-5) {
					t.Errorf("DiscreteAdjoint's gradient is %.2g from %s's in norm, want ≤ 1e-5", e, sens[0].Name())
				}
			})
		}
	}
}
