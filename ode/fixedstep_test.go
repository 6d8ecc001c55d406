package ode_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// TestFixedStepTStops steps a fixed-step solve by hand through TStops that
// are not multiples of the step, forwards and backwards in time: every
// stop is landed on exactly, the step that lands is shortened, and the one
// after it has the fixed size again (it used to stay shortened).
func TestFixedStepTStops(t *testing.T) {
	const dt = 0.1
	for _, c := range []struct {
		name   string
		m      ode.Method
		t0, t1 float64
		stops  []float64
	}{
		{"RK4 forward", ode.RK4(), 0, 1, []float64{0.25, 0.62}},
		{"RK4 backward", ode.RK4(), 1, 0, []float64{0.25, 0.62}},
		{"Tsit5 forward", ode.Tsit5(), 0, 1, []float64{0.25, 0.62}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T0: c.t0, T1: c.t1}
			it, err := ode.NewIntegrator(prob, c.m, ode.FixedStep(dt), ode.TStops(c.stops...))
			if err != nil {
				t.Fatal(err)
			}
			dir := math.Copysign(1, c.t1-c.t0)
			// The expected ends: fixed steps from each stop (and the start)
			// to the next, the last one shortened.
			var want []float64
			marks := slices.Clone(c.stops)
			slices.Sort(marks)
			if dir < 0 {
				slices.Reverse(marks)
			}
			marks = append(marks, c.t1)
			from := c.t0
			for _, m := range marks {
				for k := 1; ; k++ {
					s := from + dir*float64(k)*dt
					if dir*(m-s) <= 1e-9 {
						want = append(want, m)
						break
					}
					want = append(want, s)
				}
				from = m
			}
			var got []float64
			prev := c.t0
			for !it.Done() {
				if err := it.Step(); err != nil {
					t.Fatal(err)
				}
				got = append(got, it.T())
				h := it.T() - prev
				if wantH := want[len(got)-1] - prev; math.Abs(h-wantH) > 1e-12 {
					t.Fatalf("step %d from t=%g: size %g, want %g", len(got), prev, h, wantH)
				}
				prev = it.T()
				if len(got) > 2*len(want) {
					t.Fatalf("%d steps, want %d", len(got), len(want))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d steps %v, want %d %v", len(got), got, len(want), want)
			}
			for _, s := range c.stops {
				if !slices.Contains(got, s) {
					t.Errorf("no step ends exactly on the stop %g: %v", s, got)
				}
			}
		})
	}
}
