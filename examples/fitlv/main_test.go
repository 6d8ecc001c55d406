package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
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
		for _, want := range []string{"Rates.0", "Init.1", "loss", "gradients"} {
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

func TestBadFlag(t *testing.T) {
	if _, err := run(context.Background(), &bytes.Buffer{}, config{sens: "nope"}); err == nil {
		t.Fatal("want an error for -sens nope")
	}
}
