package main

import (
	"strings"
	"testing"
)

// TestBenchAdamQuick runs the adam scenario with tiny sample counts and
// checks its figures are there and allocation-free, not its timings.
func TestBenchAdamQuick(t *testing.T) {
	cases := runBench(t, []string{"adam"})
	for _, want := range []string{
		"Adam 1M params, 1 goroutine", "copy 7 x 4 MB, 1 goroutine", "Adam / copy, 1 goroutine",
		"Adam 1M params, 2 goroutines", "copy 7 x 4 MB, 2 goroutines", "Adam / copy, 2 goroutines",
	} {
		m, ok := cases[want]
		if !ok {
			t.Errorf("no figure for case %q", want)
			continue
		}
		// With two goroutines a short run also counts the runtime starting an
		// OS thread for the worker (newm after the bencher's runtime.GC); the
		// optimiser's own zero is pinned by optimisers.TestWorkersAllocateNothing.
		// A quick run counts every allocation in the process over a few
		// calls, and under load the runtime's own (a new OS thread, its timer
		// heap) show up even on one goroutine: more than 2 would be ours.
		if strings.HasPrefix(want, "Adam") && strings.HasSuffix(want, "1 goroutine") && m["allocs"].(float64) > 2 {
			t.Errorf("%s: %v allocs", want, m["allocs"])
		}
	}
}
