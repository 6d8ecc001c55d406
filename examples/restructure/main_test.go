package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
)

// TestRun runs the example's core with few steps and checks its final output
// against the same recurrence computed from views of θa and θb made by hand,
// with no Restructure at all.
func TestRun(t *testing.T) {
	const steps = 101
	var out bytes.Buffer
	res, err := run(&out, steps)
	if err != nil {
		t.Fatal(err)
	}
	if res.Params != 256*256+256 || res.Steps != steps {
		t.Errorf("Params, Steps = %d, %d; want %d, %d", res.Params, res.Steps, 256*256+256, steps)
	}
	if math.IsNaN(res.Checksum) || math.IsInf(res.Checksum, 0) {
		t.Errorf("checksum %v", res.Checksum)
	}
	for _, want := range []string{"ns/step", "checksum", "65792 parameters"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	_, θs, lay, x0, err := setup()
	if err != nil {
		t.Fatal(err)
	}
	var models [2]Dense
	for i, θ := range θs {
		models[i] = Dense{Weight: lay.MustView(θ, "Weight").Data, Bias: lay.MustView(θ, "Bias").Data}
	}
	in, o := append([]float32(nil), x0...), make([]float32, n)
	for s := range steps {
		models[s&1].Forward(o, in)
		in, o = o, in
	}
	for i := range in {
		if in[i] != res.Output[i] {
			t.Fatalf("output[%d] = %v after %d restructured steps, %v from hand-made views", i, res.Output[i], steps, in[i])
		}
	}
}

// TestStepAllocs pins the steady-state step (Restructure + forward) at zero
// allocations.
func TestStepAllocs(t *testing.T) {
	m, θs, lay, x0, err := setup()
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, n)
	k := 0
	allocs := testing.AllocsPerRun(200, func() {
		k++
		if err := layout.Restructure(θs[k&1], lay, m); err != nil {
			t.Fatal(err)
		}
		m.Forward(y, x0)
	})
	if allocs != 0 {
		t.Errorf("Restructure + forward: %v allocations per step, want 0", allocs)
	}
}
