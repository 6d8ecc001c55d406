package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode/odead"
)

// TestRun runs the example on a small grid: the summary, a PNG per time,
// the first snapshot equal to the initial state and the others finite and
// moved away from it.
func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new") // made by run
	cfg := config{n: 8, out: dir, times: []float64{11.5, 0, 1.1, 3}}
	var out bytes.Buffer
	s, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"detected from the ad right-hand side: 768 entries", "8×8 (128 states)", "steps", "f evaluations", "Jacobians", "heatmaps of u written to"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if want := []float64{0, 1.1, 3, 11.5}; len(s.Times) != len(want) || len(s.Files) != len(want) {
		t.Fatalf("snapshots at %v in %v, want at %v", s.Times, s.Files, want)
	}
	for _, f := range s.Files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("no PNG at %s: %v", f, err)
		}
	}
	u0 := stiffprob.NewBruss2D[float64](8).U0()[:64]
	for k, u := range s.U {
		moved := 0.0
		for i, v := range u {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("t = %g: u[%d] = %v", s.Times[k], i, v)
			}
			moved = max(moved, math.Abs(v-u0[i]))
		}
		if (k == 0) != (moved == 0) {
			t.Errorf("t = %g: u moved by %g from the initial state", s.Times[k], moved)
		}
	}
	if s.Stats.Accepted <= 0 || s.Stats.FEvals <= s.Stats.Accepted {
		t.Errorf("stats %+v", s.Stats)
	}
}

// TestADRHS checks the ad right-hand side against stiffprob.Bruss2D's F,
// before and after the forcing starts, and its detected pattern against
// the Jacobian's.
func TestADRHS(t *testing.T) {
	const n = 7
	b := stiffprob.NewBruss2D[float64](n)
	prob := odead.Func(newADBruss(n).f, b.Dim())
	u64 := b.U0()
	u32 := make([]float32, len(u64))
	for i := range u64 {
		u64[i] += 0.1 * math.Sin(float64(i))
		u32[i] = float32(u64[i])
		u64[i] = float64(u32[i])
	}
	d32, d64 := make([]float32, len(u64)), make([]float64, len(u64))
	for _, tt := range []float64{0, 2} {
		prob.F(d32, u32, nil, tt)
		b.F(d64, u64, nil, tt)
		for i := range d64 {
			if math.Abs(float64(d32[i])-d64[i]) > 1e-4*(1+math.Abs(d64[i]))*float64(n*n) {
				t.Errorf("t = %g: du[%d] = %g by ad, %g by Bruss2D", tt, i, d32[i], d64[i])
			}
		}
	}
	p, err := detectPattern(n, b.U0(), b.Pattern())
	if err != nil {
		t.Fatal(err)
	}
	if p.NNZ() != 6*b.Dim() {
		t.Errorf("%d entries, want 6 a row", p.NNZ())
	}
}
