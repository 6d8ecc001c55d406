package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/ode"
)

// TestFit recovers the true parameters to within the noise, by name, with
// forward sensitivities and with the adjoint, and both find the same fit.
func TestFit(t *testing.T) {
	var fits []*result
	for _, sens := range []string{"forward", "adjoint", "discrete"} {
		var out bytes.Buffer
		r, err := run(context.Background(), &out, config{sens: sens, seed: 1, noise: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Rates.0", "Init.1", "stderr", "loss", "gradients"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", sens, want, out.String())
			}
		}
		got := append(append([]float32(nil), r.Rates...), r.Init...)
		for i, w := range append(append([]float32(nil), trueRates...), trueInit...) {
			if math.Abs(float64(got[i]-w)) > 0.05*float64(w) {
				t.Errorf("%s: parameter %d fitted to %v, true %v (want within 5%%)", sens, i, got[i], w)
			}
		}
		// The true rates lie within two standard errors of the fit. (On
		// seed 1 the initial prey count is 2.9 standard errors off.)
		for i, w := range trueRates {
			if d := math.Abs(float64(r.Rates[i] - w)); !(d <= 2*r.StdErr[i]) {
				t.Errorf("%s: rate %d fitted to %v ± %.3g, true %v: off by %.2g standard errors, want at most 2", sens, i, r.Rates[i], r.StdErr[i], w, d/r.StdErr[i])
			}
		}
		if r.Loss > 0.02 {
			t.Errorf("%s: final loss %g, want about the noise's 0.008", sens, r.Loss)
		}
		fits = append(fits, r)
	}
	for k := 1; k < len(fits); k++ {
		for i := range fits[0].Rates {
			if d := math.Abs(float64(fits[k].Rates[i] - fits[0].Rates[i])); d > 1e-3 {
				t.Errorf("fit %d: rate %d = %v, the forward fit's %v", k, i, fits[k].Rates[i], fits[0].Rates[i])
			}
		}
	}
}

// The standard errors from the Hessian agree with Gauss–Newton's,
// σ̂²(JᵀJ)⁻¹ from the forward sensitivities at the fit, to 2 %: the two
// differ by the residuals' curvature, small at a good fit.
func TestStdErrGaussNewton(t *testing.T) {
	ctx := context.Background()
	r, err := run(ctx, &bytes.Buffer{}, config{sens: "forward", seed: 1, noise: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	θ := append(append([]float32(nil), r.Rates...), r.Init...)
	ts := make([]float64, 20)
	for i := range ts {
		ts[i] = 0.5 * float64(i+1)
	}
	prob := ode.Problem[float64]{F: lv, JVP: lvJVP, VJP: lvVJP, U0: []float64{float64(θ[4]), float64(θ[5])}, T1: 10, P: θ}
	none := ode.Loss[float64]{At: ts, Point: func(int, float64, []float64, []float64) float64 { return 0 }}
	g, err := ode.Gradient(ctx, prob, ode.Tsit5(), none, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	cols := []int{0, 1, 2, 3, 6, 7} // the rates' columns, then u0's
	J := mat.NewDense(2*len(ts), len(cols), nil)
	for i := range ts {
		for c, k := range cols {
			for j := range 2 {
				J.Set(2*i+j, c, g.Sens[i][k*2+j])
			}
		}
	}
	var jtj, cov mat.Dense
	jtj.Mul(J.T(), J)
	if err := cov.Inverse(&jtj); err != nil {
		t.Fatal(err)
	}
	σ2 := 2 * r.Loss / float64(2*len(ts)-len(θ))
	for c := range cols {
		gn := math.Sqrt(σ2 * cov.At(c, c))
		if e := math.Abs(r.StdErr[c]-gn) / gn; e > 0.02 {
			t.Errorf("parameter %d: standard error %.5g from the Hessian, %.5g by Gauss–Newton (%.2g apart, want ≤ 2 %%)", c, r.StdErr[c], gn, e)
		}
	}
}

func TestBadFlag(t *testing.T) {
	if _, err := run(context.Background(), &bytes.Buffer{}, config{sens: "nope"}); err == nil {
		t.Fatal("want an error for -sens nope")
	}
}
