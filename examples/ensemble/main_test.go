package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs the example small: the summary, the picture, the same paths
// for any number of workers, and every trajectory on its orbit (the
// invariant H kept to 1e-6).
func TestRun(t *testing.T) {
	png := filepath.Join(t.TempDir(), "lv.png")
	cfg := config{n: 24, out: png, workers: 1, seed: 1, points: 21}
	var out bytes.Buffer
	s, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("no PNG at %s: %v", png, err)
	}
	for _, want := range []string{"24 trajectories", "mean", "min", "max", "steps", "phase portrait written to"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if s.Failed != 0 || s.Steps <= 0 || s.FEvals <= s.Steps {
		t.Errorf("failed %d, steps %d, f evaluations %d", s.Failed, s.Steps, s.FEvals)
	}
	for j := range 2 {
		if !(s.Min[j] <= s.Mean[j] && s.Mean[j] <= s.Max[j]) {
			t.Errorf("component %d: mean %v outside [%v, %v]", j, s.Mean[j], s.Min[j], s.Max[j])
		}
	}
	for i, p := range s.Paths {
		if len(p) != 2*cfg.points {
			t.Fatalf("trajectory %d: %d values, want %d", i, len(p), 2*cfg.points)
		}
		if d := math.Abs(invariant(p[len(p)-2], p[len(p)-1]) - invariant(p[0], p[1])); d > 1e-6 {
			t.Errorf("trajectory %d: H drifted by %g", i, d)
		}
		if math.Abs(p[0]-1) > 0.25 || math.Abs(p[1]-1) > 0.25 {
			t.Errorf("trajectory %d starts at (%v, %v), want within 25%% of (1, 1)", i, p[0], p[1])
		}
	}

	cfg.workers, cfg.out = 3, ""
	s3, err := run(context.Background(), &bytes.Buffer{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Paths {
		for j, v := range s.Paths[i] {
			if math.Float64bits(v) != math.Float64bits(s3.Paths[i][j]) {
				t.Fatalf("trajectory %d differs between 1 and 3 workers", i)
			}
		}
	}
	if s3.Mean != s.Mean {
		t.Errorf("mean %v on 3 workers, %v on 1", s3.Mean, s.Mean)
	}
	if _, err := run(context.Background(), &bytes.Buffer{}, config{n: 0, points: 21, workers: 1}); err == nil {
		t.Error("n = 0: no error")
	}
}
