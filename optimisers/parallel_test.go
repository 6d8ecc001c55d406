package optimisers_test

import (
	"runtime"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// Updates on several goroutines give the same bits as on one, whatever the
// rule (chunks of leaves for elementwise chains, whole leaves for Leafwise
// ones, global reductions in buffer order).
func TestWorkersAgree(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	defer optimisers.SetMinChunk(optimisers.SetMinChunk(16))
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t)
		one := mustSetup(t, sc.rule, sc.lay)
		many := mustSetup(t, sc.rule, sc.lay)
		if old := many.SetWorkers(rapid.IntRange(2, 4).Draw(t, "workers")); old != 1 {
			t.Fatalf("default workers %d, want 1", old)
		}
		θ1, θn := slices.Clone(sc.θ0), slices.Clone(sc.θ0)
		for k := range sc.grads {
			sc.step(t, one, θ1, k)
			sc.step(t, many, θn, k)
			if !bitwise.Equal(θ1, θn) || !sameState(one.State(), many.State()) {
				t.Fatalf("step %d: %d workers differ from one", k+1, many.Workers())
			}
		}
	})
}

// With two workers a large Adam update still allocates nothing.
func TestWorkersAllocateNothing(t *testing.T) {
	const n = 1 << 17
	lay, err := layout.NewBuilder().Add("w", n).Add("b", 100).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []optimisers.Rule{
		optimisers.Adam(1e-3),
		optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3)),
		optimisers.Chain(optimisers.ClipNorm(1), optimisers.Adam(1e-3)),
	} {
		opt := mustSetup(t, rule, lay)
		opt.SetWorkers(2)
		θ, g := ramp(lay.Len(), 0.5, 1), ramp(lay.Len(), 0.1, 1)
		for range 3 {
			if err := opt.Update(θ, g); err != nil {
				t.Fatal(err)
			}
		}
		if a := testing.AllocsPerRun(20, func() { _ = opt.Update(θ, g) }); a != 0 {
			t.Errorf("%s: Update with 2 workers allocates %v times", ruleString(rule), a)
		}
	}
}
