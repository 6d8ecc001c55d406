package optimisers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// fuzzSetup is the rule and layout every fuzzed file is loaded for.
func fuzzSetup(t testing.TB) (optimisers.Rule, *layout.Layout) {
	lay, err := layout.NewBuilder().Add("weight", 1, 2).Add("bias", 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	return ckptRule(50), lay
}

// fuzzSeeds are files of the kind a target reads, written by a trained
// optimiser, with their truncations, flipped bytes and a lying header.
func fuzzSeeds(f *testing.F, write func(opt *optimisers.Optimiser, θ []float32) []byte) [][]byte {
	rule, lay := fuzzSetup(f)
	_, bs := regression(f)
	var seeds [][]byte
	for _, n := range []int{0, 3} {
		opt, err := optimisers.Setup(rule, lay)
		if err != nil {
			f.Fatal(err)
		}
		θ := make([]float32, lay.Len())
		if err := optimisers.Train(context.Background(), opt, θ, first(epochs(bs, 1), n), mse, 0, nil); err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, write(opt, θ))
	}
	s := seeds[len(seeds)-1]
	for _, n := range []int{0, 8, 16, len(s) / 2, len(s) - 4, len(s) - 1} {
		seeds = append(seeds, slices.Clone(s[:n]))
	}
	for _, at := range []int{9, 40, len(s) / 2, len(s) - 5} {
		b := slices.Clone(s)
		b[at] ^= 0x5a
		seeds = append(seeds, b)
	}
	long := slices.Clone(s)
	binary.LittleEndian.PutUint64(long, 1<<40)
	return append(seeds, long)
}

// FuzzLoad: optimisers.Load never panics on a hostile or truncated file;
// what it accepts saves back to a file that loads to the same state.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f, func(opt *optimisers.Optimiser, _ []float32) []byte {
		var buf bytes.Buffer
		if err := opt.Save(&buf); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}) {
		f.Add(s)
	}
	rule, lay := fuzzSetup(f)
	f.Fuzz(func(t *testing.T, file []byte) {
		opt, err := optimisers.Load(bytes.NewReader(file), rule, lay)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := opt.Save(&buf); err != nil {
			t.Fatalf("Save of an accepted checkpoint: %v", err)
		}
		back, err := optimisers.Load(bytes.NewReader(buf.Bytes()), rule, lay)
		if err != nil {
			t.Fatalf("Load of its own Save: %v", err)
		}
		a, b := opt.State(), back.State()
		if a.Step != b.Step || a.Skipped != b.Skipped || len(a.Slots) != len(b.Slots) {
			t.Fatalf("round trip: step %d/%d, skipped %d/%d", a.Step, b.Step, a.Skipped, b.Skipped)
		}
		for k := range a.Slots {
			if !bitwise.Equal(a.Slots[k], b.Slots[k]) {
				t.Fatalf("slot %d changed in the round trip", k)
			}
		}
	})
}

// FuzzLoadCheckpoint: LoadCheckpoint never panics on a hostile or
// truncated file, leaves Params and State alone when it fails, and what it
// accepts writes back to a file that reads to the same values.
func FuzzLoadCheckpoint(f *testing.F) {
	slay, err := layout.NewBuilder().Add("running_mean", 2).Build()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range fuzzSeeds(f, func(opt *optimisers.Optimiser, θ []float32) []byte {
		var buf bytes.Buffer
		if err := optimisers.SaveCheckpoint(&buf, optimisers.Checkpoint{Layout: opt.Layout(), Params: θ, Opt: opt, StateLayout: slay, State: []float32{0.5, -2}}); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}) {
		f.Add(s)
	}
	rule, lay := fuzzSetup(f)
	f.Fuzz(func(t *testing.T, file []byte) {
		c := optimisers.Checkpoint{Layout: lay, Params: []float32{7, 7, 7}, StateLayout: slay, State: []float32{7, 7}}
		opt, err := optimisers.LoadCheckpoint(bytes.NewReader(file), rule, c)
		if err != nil {
			if !slices.Equal(c.Params, []float32{7, 7, 7}) || !slices.Equal(c.State, []float32{7, 7}) {
				t.Fatalf("Params %v, State %v changed by a failed read: %v", c.Params, c.State, err)
			}
			return
		}
		c.Opt = opt
		var buf bytes.Buffer
		if err := optimisers.SaveCheckpoint(&buf, c); err != nil {
			t.Fatalf("SaveCheckpoint of an accepted checkpoint: %v", err)
		}
		c2 := optimisers.Checkpoint{Layout: lay, Params: make([]float32, 3), StateLayout: slay, State: make([]float32, 2)}
		back, err := optimisers.LoadCheckpoint(bytes.NewReader(buf.Bytes()), rule, c2)
		if err != nil {
			t.Fatalf("LoadCheckpoint of its own write: %v", err)
		}
		if !bitwise.Equal(c.Params, c2.Params) || !bitwise.Equal(c.State, c2.State) || back.Steps() != opt.Steps() {
			t.Fatalf("round trip changed Params %v → %v, State %v → %v, step %d → %d", c.Params, c2.Params, c.State, c2.State, opt.Steps(), back.Steps())
		}
	})
}
