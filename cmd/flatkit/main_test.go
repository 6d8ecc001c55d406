package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchRestructureQuick runs the restructure scenario with tiny sample
// counts and checks the shape of its output, not its timings.
func TestBenchRestructureQuick(t *testing.T) {
	cases, stderr := runBenchStderr(t, []string{"-samples", "2", "-steps", "50", "restructure"})
	for _, want := range []string{
		"Restructure Dense 256->256",
		"forward Dense 256->256 (gonum blas32.Gemv)",
		"Restructure + forward Dense 256->256",
		"Restructure as % of forward",
		"50-step loop Restructure + forward, total",
		"50-step loop Restructure + forward, per step",
		"Restructure 100-leaf struct",
		"Dense 256->256 batch 1: forward (reused tape)",
		"Dense 256->256 batch 1: forward + gradient θ and x (reused tape)",
		"Dense 256->256 batch 1: gradient ÷ forward",
	} {
		if cases[want] == nil {
			t.Errorf("no figure for case %q; got %v", want, cases)
		}
	}
	if !strings.Contains(stderr, "Restructure Dense 256->256") {
		t.Errorf("stderr has no table:\n%s", stderr)
	}
}

func TestBenchUnknownScenario(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "-quick", "nosuch"}, &out, &errb)
	if code == 0 {
		t.Fatal("unknown scenario: exit code 0")
	}
	if !strings.Contains(errb.String(), `"nosuch"`) || !strings.Contains(errb.String(), "restructure") {
		t.Errorf("error should name the scenario and list the known ones, got:\n%s", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("unknown scenario wrote to stdout: %q", out.String())
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"bench", "-h"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Errorf("%v: exit code %d", args, code)
		}
		if !strings.Contains(out.String()+errb.String(), "restructure") {
			t.Errorf("%v: usage does not list the scenarios:\n%s%s", args, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit code %d, want 2", code)
	}
}
