package optimisers

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// rosenbrockHessian is the chained Rosenbrock's Hessian, written out.
func rosenbrockHessian(θ []float32, h *mat.SymDense) error {
	n := len(θ)
	for i := range n {
		for j := i; j < n; j++ {
			h.SetSym(i, j, 0)
		}
	}
	for i := 0; i+1 < n; i++ {
		x, y := float64(θ[i]), float64(θ[i+1])
		h.SetSym(i, i, h.At(i, i)+1200*x*x-400*y+2)
		h.SetSym(i, i+1, -400*x)
		h.SetSym(i+1, i+1, h.At(i+1, i+1)+200)
	}
	return nil
}

// Newton from its Hessian and from products reaches the chained
// Rosenbrock's minimum, in fewer iterations than L-BFGS and the same
// iterations either way (the products build the same matrix).
func TestNewtonRosenbrock(t *testing.T) {
	for _, n := range []int{2, 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			set := &optimize.Settings{GradientThreshold: 1e-5}
			var iters []int
			for _, m := range []*Newton{{Hessian: rosenbrockHessian}, {Hv: rosenbrockHv}} {
				θ := rosenbrockStart(n)
				res, err := Minimize(rosenbrock, θ, m, set)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range θ {
					if math.Abs(float64(v)-1) > 1e-4 {
						t.Fatalf("θ[%d] = %v, want 1 (status %v)", i, v, res.Status)
					}
				}
				if res.HessEvaluations == 0 {
					t.Errorf("Stats.HessEvaluations = 0, want the Hessians evaluated")
				}
				iters = append(iters, res.MajorIterations)
			}
			θl := rosenbrockStart(n)
			resL, err := Minimize(rosenbrock, θl, nil, set)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Newton %d iterations from the Hessian, %d from products; LBFGS %d", iters[0], iters[1], resL.MajorIterations)
			if iters[0] != iters[1] {
				t.Errorf("%d iterations from the Hessian, %d from products, want the same", iters[0], iters[1])
			}
			if 4*iters[0] > 3*resL.MajorIterations {
				t.Errorf("Newton took %d iterations, LBFGS %d; want Newton at most three quarters", iters[0], resL.MajorIterations)
			}
		})
	}
}

func TestNewtonErrors(t *testing.T) {
	θ := []float32{-1.2, 1}
	for _, c := range []struct {
		m    *Newton
		want string
	}{
		{&Newton{}, "neither Hessian nor Hv"},
		{&Newton{Hv: rosenbrockHv, Increase: 0.5}, "Increase = 0.5"},
	} {
		if _, err := Minimize(rosenbrock, θ, c.m, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one containing %q", err, c.want)
		}
	}
	hvErr := errors.New("no Hessian here")
	θ0 := append([]float32(nil), θ...)
	_, err := Minimize(rosenbrock, θ, &Newton{Hv: func(θ, v, hv []float32) error { return hvErr }}, nil)
	if !errors.Is(err, hvErr) || !strings.Contains(err.Error(), "product 1 of 2") {
		t.Errorf("err = %v, want one wrapping %v and naming the product", err, hvErr)
	}
	nan := func(θ []float32, h *mat.SymDense) error {
		_ = rosenbrockHessian(θ, h)
		h.SetSym(0, 1, math.NaN())
		return nil
	}
	_, err = Minimize(rosenbrock, θ, &Newton{Hessian: nan}, nil)
	if err == nil || !strings.Contains(err.Error(), "NaN at (0, 1)") {
		t.Errorf("err = %v, want one naming the NaN entry", err)
	}
	if θ[0] != θ0[0] || θ[1] != θ0[1] {
		t.Errorf("θ = %v after failed runs, want the start %v", θ, θ0)
	}
}
