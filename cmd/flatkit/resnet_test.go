package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestResnetQuick runs the scenario in quick mode (a width-8 network on
// small inputs) and checks its figures: every case on 1 and 2 goroutines,
// in milliseconds.
func TestResnetQuick(t *testing.T) {
	cases := runBench(t, []string{"resnet"})
	for _, c := range []string{"inference 1x3x32x32", "inference 2x3x16x16", "training step 2x3x24x24"} {
		for _, g := range []string{"1 goroutine(s)", "2 goroutine(s)"} {
			name := "resnet18 " + c + ", " + g
			m, ok := cases[name]
			if !ok {
				t.Errorf("no figure %q; have %v", name, slices.Sorted(maps.Keys(cases)))
				continue
			}
			if m["unit"] != "ms" || !(m["median"].(float64) > 0) {
				t.Errorf("%q: median %v %v, want a positive figure in ms", name, m["median"], m["unit"])
			}
			if !strings.Contains(m["note"].(string), "width 8") {
				t.Errorf("%q: note %q does not name the quick width", name, m["note"])
			}
		}
	}
	if len(cases) != 6 {
		t.Errorf("%d figures, want 6", len(cases))
	}
}
