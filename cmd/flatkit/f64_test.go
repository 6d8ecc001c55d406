package main

import (
	"testing"

	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode"
)

// TestBenchF64Quick runs the f64 scenario with tiny sample counts and
// checks its lines: every product of both problems, replayed and
// recorded, with both sides' figures, their ratio, the precision, and
// results that agree; not the timings.
func TestBenchF64Quick(t *testing.T) {
	cases := runBench(t, []string{"f64"}, "hand_median", "hand_allocs", "ratio", "max_rel_diff", "n")
	want := 0
	for _, pr := range f64Problems() {
		ops := f64Ops(pr, ode.Problem[f64Float]{}, ode.Problem[f64Float]{})
		want += 2 * len(ops)
		for _, op := range ops {
			for _, suffix := range []string{"", "/record"} {
				name := pr.name + "/" + op.name + suffix
				m := figure(t, cases, name)
				if m == nil {
					continue
				}
				if m["precision"] != f64Precision {
					t.Errorf("%s: precision %v, want %q", name, m["precision"], f64Precision)
				}
				if m["replay"] != (suffix == "") {
					t.Errorf("%s: replay %v", name, m["replay"])
				}
				if h, r := m["hand_median"].(float64), m["ratio"].(float64); !(h > 0 && r > 0) {
					t.Errorf("%s: hand_median %v, ratio %v, want both > 0", name, h, r)
				}
				checkAtMost(t, name, m, "max_rel_diff", 1e-5)
				// A quick figure also counts the runtime's own rare
				// allocations; TestF64AllocatesNothing pins the calls.
				checkAtMost(t, name, m, "allocs", 0.5)
			}
		}
	}
	if len(cases) != want {
		t.Errorf("%d figures, want %d", len(cases), want)
	}
	for _, name := range []string{"robertson/F", "pollu/VJP", "pollu/JacSparse/record"} {
		figure(t, cases, name)
	}
}

// TestF64AllocatesNothing pins every product of the scenario, on both
// sides and in both modes, at zero allocations once warm.
func TestF64AllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	for _, pr := range f64Problems() {
		for _, replay := range []bool{true, false} {
			ap := f64Bridge(pr.ad, len(pr.u), replay, nil)
			var sp ode.Problem[f64Float]
			if pr.pattern != nil {
				sp = f64Bridge(pr.ad, len(pr.u), replay, pr.pattern)
			}
			for _, op := range f64Ops(pr, ap, sp) {
				op.ad()
				if a := testing.AllocsPerRun(20, op.ad); a != 0 {
					t.Errorf("%s/%s (replay %t): %v allocations per ad call, want 0", pr.name, op.name, replay, a)
				}
				if a := testing.AllocsPerRun(20, op.hand); a != 0 {
					t.Errorf("%s/%s: %v allocations per hand-written call, want 0", pr.name, op.name, a)
				}
			}
		}
	}
}

// BenchmarkF64 is the scenario's products on both sides, replayed and
// recorded, timed in the thread's CPU time too (cpu-ns/op), which moves
// less than wall time on a shared machine, and for profiling:
//
//	go test ./cmd/flatkit -run X -bench F64 -benchtime 20000x
func BenchmarkF64(b *testing.B) {
	for _, pr := range f64Problems() {
		for _, replay := range []bool{true, false} {
			ap := f64Bridge(pr.ad, len(pr.u), replay, nil)
			var sp ode.Problem[f64Float]
			if pr.pattern != nil {
				sp = f64Bridge(pr.ad, len(pr.u), replay, pr.pattern)
			}
			for _, op := range f64Ops(pr, ap, sp) {
				name := pr.name + "/" + op.name
				if !replay {
					name += "/record"
				} else {
					b.Run(name+"/hand", func(b *testing.B) { cputime.Loop(b, op.hand) })
				}
				b.Run(name+"/ad", func(b *testing.B) {
					op.ad()
					cputime.Loop(b, op.ad)
				})
			}
		}
	}
}
