package proptest_test

import (
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/proptest"
)

// chain is f(θ) = Σ θᵢ²θᵢ₊₁ + Σ sin θᵢ, with its gradient and Hessian-vector
// product written by hand; scale multiplies the product, to make it wrong.
func chainGrad[F flat.Float](θ, g []F) error {
	n := len(θ)
	for i := range θ {
		x := float64(θ[i])
		s := math.Cos(x)
		if i+1 < n {
			s += 2 * x * float64(θ[i+1])
		}
		if i > 0 {
			s += float64(θ[i-1]) * float64(θ[i-1])
		}
		g[i] = F(s)
	}
	return nil
}

func chainHv[F flat.Float](scale float64) func(θ, v, out []F) error {
	return func(θ, v, out []F) error {
		n := len(θ)
		for i := range θ {
			x := float64(θ[i])
			hii := -math.Sin(x)
			s := 0.0
			if i+1 < n {
				hii += 2 * float64(θ[i+1])
				s += 2 * x * float64(v[i+1])
			}
			if i > 0 {
				s += 2 * float64(θ[i-1]) * float64(v[i-1])
			}
			out[i] = F(scale * (hii*float64(v[i]) + s))
		}
		return nil
	}
}

// field is g(θ) = Aθ + cos θ for an asymmetric A: not a gradient. Its
// Jacobian applied, A·v − sin θ ∘ v, matches the differences but is not
// symmetric; Aᵀ·v − sin θ ∘ v, the transpose, does not match.
var fieldA = [3][3]float64{{2, 1, 0}, {-1, 3, 0.5}, {0.25, 0, 1}}

func fieldGrad(θ, g []float64) error {
	for i := range 3 {
		g[i] = math.Cos(θ[i])
		for j := range 3 {
			g[i] += fieldA[i][j] * θ[j]
		}
	}
	return nil
}

func fieldHv(transpose bool) func(θ, v, out []float64) error {
	return func(θ, v, out []float64) error {
		for i := range 3 {
			out[i] = -math.Sin(θ[i]) * v[i]
			for j := range 3 {
				a := fieldA[i][j]
				if transpose {
					a = fieldA[j][i]
				}
				out[i] += a * v[j]
			}
		}
		return nil
	}
}

func TestCheckHvPassesRightProducts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.SampledFrom([]int{1, 3, 20}).Draw(rt, "n")
		θ64 := rapid.SliceOfN(rapid.Float64Range(-2, 2), n, n).Draw(rt, "θ")
		proptest.CheckHv(rt, chainGrad[float64], chainHv[float64](1), θ64)
		θ32 := make([]float32, n)
		for i, v := range θ64 {
			θ32[i] = float32(v)
		}
		proptest.CheckHv(rt, chainGrad[float32], chainHv[float32](1), θ32)
	})
}

// TestCheckHvCatchesWrongProducts: a 1% error is caught in float64 by
// default, and in float32 with SharpTol (the default float32 tolerance is
// 2e-2 relative).
func TestCheckHvCatchesWrongProducts(t *testing.T) {
	θ := []float64{0.3, -0.7, 1.1, 0.4, -1.5}
	θ32 := []float32{0.3, -0.7, 1.1, 0.4, -1.5}
	for _, c := range []struct {
		name  string
		check func(proptest.T)
		want  string
	}{
		{"scaled64", func(t proptest.T) { proptest.CheckHv(t, chainGrad[float64], chainHv[float64](1.01), θ) }, "disagrees with finite differences"},
		{"scaled32", func(t proptest.T) {
			proptest.CheckHv(t, chainGrad[float32], chainHv[float32](1.01), θ32, proptest.SharpTol())
		}, "disagrees with finite differences"},
		{"transposed", func(t proptest.T) { proptest.CheckHv(t, fieldGrad, fieldHv(true), θ[:3]) }, "disagrees with finite differences"},
		{"asymmetric", func(t proptest.T) { proptest.CheckHv(t, fieldGrad, fieldHv(false), θ[:3]) }, "not symmetric"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(c.check)
			if len(r.errors) == 0 || !strings.Contains(r.errors[0], c.want) {
				t.Fatalf("errors %q, want one containing %q", r.errors, c.want)
			}
			t.Log(r.errors[0])
		})
	}
	if r := run(func(t proptest.T) { proptest.CheckHv(t, chainGrad[float64], chainHv[float64](1), θ) }); len(r.errors) != 0 {
		t.Errorf("right product reported: %q", r.errors)
	}
}
