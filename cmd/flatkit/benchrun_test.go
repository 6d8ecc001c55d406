package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// runBench runs `flatkit bench -quick args…` (the scenario last) and returns
// its figures keyed by case. It fails t on a non-zero exit, a line that is
// not JSON or names another scenario, and a figure without a non-empty case
// and unit or whose median, min, max, allocs or any of numeric is not a
// number.
func runBench(t *testing.T, args []string, numeric ...string) map[string]map[string]any {
	t.Helper()
	cases, _ := runBenchStderr(t, args, numeric...)
	return cases
}

// runBenchStderr is runBench that also returns what the run wrote to
// stderr (the human-readable table).
func runBenchStderr(t *testing.T, args []string, numeric ...string) (map[string]map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"bench", "-quick"}, args...), &out, &errb); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errb.String())
	}
	scenario := args[len(args)-1]
	cases := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		if m["scenario"] != scenario {
			t.Errorf("line %q: scenario %v, want %s", line, m["scenario"], scenario)
		}
		for _, k := range []string{"case", "unit"} {
			if s, ok := m[k].(string); !ok || s == "" {
				t.Errorf("line %q: field %q missing or not a non-empty string", line, k)
			}
		}
		for _, k := range append([]string{"median", "min", "max", "allocs"}, numeric...) {
			if _, ok := m[k].(float64); !ok {
				t.Errorf("line %q: field %q missing or not a number", line, k)
			}
		}
		c, _ := m["case"].(string)
		cases[c] = m
	}
	return cases, errb.String()
}

// checkAtMost checks that figure m (of case name) has a number key ≤ max.
func checkAtMost(t *testing.T, name string, m map[string]any, key string, max float64) {
	t.Helper()
	if e, ok := m[key].(float64); !ok || !(e <= max) {
		t.Errorf("%s: %s %v, want ≤ %g", name, key, m[key], max)
	}
}

// checkSensSteps checks that a gradient figure of method s (case name)
// counts forward steps and, for the methods that solve backwards
// (InterpolatingAdjoint, BacksolveAdjoint), backward steps.
func checkSensSteps(t *testing.T, name string, s ode.Sensitivity, m map[string]any) {
	t.Helper()
	if m["fwd_steps"].(float64) <= 0 {
		t.Errorf("%s: %v forward steps", name, m["fwd_steps"])
	}
	switch s.(type) {
	case ode.InterpolatingAdjoint, ode.BacksolveAdjoint:
		if m["bwd_steps"].(float64) <= 0 {
			t.Errorf("%s: %v backward steps", name, m["bwd_steps"])
		}
	}
}

// figure is the figure of case name, or nil (failing t) if there is none.
func figure(t *testing.T, cases map[string]map[string]any, name string) map[string]any {
	t.Helper()
	m, ok := cases[name]
	if !ok {
		t.Errorf("no figure for case %q", name)
	}
	return m
}
