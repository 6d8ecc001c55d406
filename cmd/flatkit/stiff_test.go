package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestBenchStiffQuick runs the stiff scenario's small -quick cases and
// checks each line: a skipped case names its reason; a solved one has its
// counters, an error against the reference within 1000 times the
// tolerance asked, and no allocation per solve.
func TestBenchStiffQuick(t *testing.T) {
	cases := runBench(t, []string{"stiff"})
	for _, c := range stiffQuickCases {
		m := figure(t, cases, c.name())
		if m == nil {
			continue
		}
		if m["unit"] == "skipped" {
			if s, _ := m["skipped"].(string); s == "" {
				t.Errorf("%s: skipped without a reason: %v", c.name(), m)
			}
			continue
		}
		for _, k := range []string{"nsteps", "nfe", "nje", "nsetups", "rms", "first", "last", "err_weighted", "ref_rms"} {
			if _, ok := m[k].(float64); !ok {
				t.Errorf("%s: field %q missing or not a number: %v", c.name(), k, m)
			}
		}
		// The global error of the oscillating 2-D Brusselator at t = 11.5
		// reaches a few hundred times the local tolerance, CVODE's as
		// flatkit's (their rms, first and last agree with each other to
		// 1e-7 and with the reference to 4e-4 at N = 32); a wrong answer
		// is off by far more.
		checkAtMost(t, c.name(), m, "err_weighted", 1000)
		checkAtMost(t, c.name(), m, "err_rfl", 1e-3)
		if last, ok := m["last_segment"].(map[string]any); ok != (c.problem == "bruss2d" || c.problem == "medakzo") {
			t.Errorf("%s: last_segment %v, want it exactly for the problems with a restart", c.name(), m["last_segment"])
		} else if ok && !(last["nsteps"].(float64) > 0 && last["nsteps"].(float64) < m["nsteps"].(float64)) {
			t.Errorf("%s: %v steps in the last segment of %v", c.name(), last["nsteps"], m["nsteps"])
		}
		// One quick solve also counts the runtime's own rare allocations.
		checkAtMost(t, c.name(), m, "allocs", 2)
	}
}

// TestStiffCaseNames pins the case names to the peer's, as
// cvode_stiff_bench.c prints them.
func TestStiffCaseNames(t *testing.T) {
	var got []string
	for _, c := range append(slices.Clone(stiffCases), stiff64Cases...) {
		got = append(got, c.name())
	}
	want := []string{"bruss1d N=100 dense", "bruss1d N=100 band", "bruss1d N=100 klu", "bruss1d N=250 band",
		"bruss1d N=500 band", "bruss1d N=500 klu", "bruss1d N=1000 band", "bruss1d N=2000 band",
		"bruss2d N=32 klu", "bruss2d N=32 gmres", "pollu N=20 dense", "medakzo N=200 band", "bruss2d N=64 klu"}
	if !slices.Equal(got, want) {
		t.Errorf("cases %q, want the peer's %q", got, want)
	}
}

// TestStiffGrowth checks the cost-growth line on made-up times per state.
func TestStiffGrowth(t *testing.T) {
	var out bytes.Buffer
	b := &bencher{scenario: "stiff", out: &out}
	b.stiffGrowth(map[int][2]float64{250: {1, 1}, 500: {1.1, 1}, 1000: {0.9, 1}, 2000: {1.2, 1.2}}, "")
	b.stiffGrowth(map[int][2]float64{250: {1, 1}}, "N=500: not built")
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	var m, s map[string]any
	if err := json.Unmarshal(lines[0], &m); err != nil {
		t.Fatal(err)
	}
	// medians: mean 1.05, largest deviation 0.15 → 14.286 %; fastest:
	// mean 1.05, largest deviation 0.15 too
	if m["unit"] != "us/state" || m["median"].(float64) != 1.05 || m["spread_pc"].(float64) != 14.286 ||
		m["spread_min_pc"].(float64) != 14.286 || m["min"].(float64) != 0.9 || m["max"].(float64) != 1.2 {
		t.Errorf("growth line %v, want mean 1.05 us/state in [0.9, 1.2] and spreads 14.286 %%", m)
	}
	if err := json.Unmarshal(lines[1], &s); err != nil {
		t.Fatal(err)
	}
	if s["unit"] != "skipped" || s["skipped"] == "" {
		t.Errorf("incomplete growth line %v, want skipped with a reason", s)
	}
}

// TestStiff64OnlyNamed checks that flatkit bench runs stiff but not
// stiff64 when no scenario is named, as the peer runs its bruss2d64.
func TestStiff64OnlyNamed(t *testing.T) {
	d := defaultNames()
	if !slices.Contains(d, "stiff") || slices.Contains(d, "stiff64") || !slices.Contains(scenarioNames(), "stiff64") {
		t.Errorf("default scenarios %v, want stiff and not stiff64 (registered: %v)", d, scenarioNames())
	}
}
