package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
)

// TestRun runs the example on a small grid: the summary, a PNG per time,
// the first snapshot equal to the initial state and the others finite and
// moved away from it.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	cfg := config{n: 8, out: dir, times: []float64{11.5, 0, 1.1, 3}}
	var out bytes.Buffer
	s, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8×8 (128 states)", "steps", "f evaluations", "Jacobians", "heatmaps of u written to"} {
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
