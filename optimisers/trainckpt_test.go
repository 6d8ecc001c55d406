package optimisers_test

import (
	"bytes"
	"context"
	"iter"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

func ckptRule(total int) optimisers.Rule {
	return optimisers.Chain(optimisers.ClipGlobalNorm(1),
		optimisers.Scheduled(optimisers.AdamW(1e-3, 1e-2), "lr", optimisers.WarmupCosine(0.05, 0, 4, total)))
}

// first returns the first n values of seq.
func first[B any](seq iter.Seq[B], n int) iter.Seq[B] {
	return func(yield func(B) bool) {
		k := 0
		for b := range seq {
			if k++; k > n || !yield(b) {
				return
			}
		}
	}
}

// skip returns seq without its first n values.
func skip[B any](seq iter.Seq[B], n int) iter.Seq[B] {
	return func(yield func(B) bool) {
		k := 0
		for b := range seq {
			if k++; k > n && !yield(b) {
				return
			}
		}
	}
}

func stateLayout(t *testing.T) *layout.Layout {
	slay, err := layout.NewBuilder().Add("1.running_mean", 3).Add("1.running_var", 3).Build()
	if err != nil {
		t.Fatal(err)
	}
	return slay
}

// An interrupted run resumed from one checkpoint file ends bit for bit where
// the uninterrupted run does, and Train numbers the resumed steps on from
// the optimiser's count (they restarted at 1 before).
func TestCheckpointResumesBitExact(t *testing.T) {
	lay, bs := regression(t)
	slay := stateLayout(t)
	const n, stop = 40, 13
	var steps []int
	record := func(step int, _ float32) error { steps = append(steps, step); return nil }

	full := mustSetup(t, ckptRule(n), lay)
	θfull := make([]float32, lay.Len())
	if err := optimisers.Train(context.Background(), full, θfull, first(epochs(bs, 10), n), mse, 1, record); err != nil {
		t.Fatal(err)
	}
	wantSteps := slices.Clone(steps)

	steps = nil
	opt := mustSetup(t, ckptRule(n), lay)
	θ := make([]float32, lay.Len())
	if err := optimisers.Train(context.Background(), opt, θ, first(epochs(bs, 10), stop), mse, 1, record); err != nil {
		t.Fatal(err)
	}
	state := []float32{1, 2, 3, 4, 5, 6}
	path := filepath.Join(t.TempDir(), "run.safetensors")
	if err := optimisers.SaveCheckpointFile(path, optimisers.Checkpoint{Layout: lay, Params: θ, Opt: opt, StateLayout: slay, State: state}); err != nil {
		t.Fatal(err)
	}

	θ2 := make([]float32, lay.Len())
	state2 := make([]float32, slay.Len())
	opt2, err := optimisers.LoadCheckpointFile(path, ckptRule(n), optimisers.Checkpoint{Layout: lay, Params: θ2, StateLayout: slay, State: state2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(θ2, θ) || !slices.Equal(state2, state) || opt2.Steps() != stop {
		t.Fatalf("loaded θ %v state %v at step %d; want %v %v at %d", θ2, state2, opt2.Steps(), θ, state, stop)
	}
	if err := optimisers.Train(context.Background(), opt2, θ2, skip(first(epochs(bs, 10), n), stop), mse, 1, record); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, wantSteps) {
		t.Errorf("callback steps %v; want %v (continuing from the optimiser's)", steps, wantSteps)
	}
	for i := range θfull {
		if math.Float32bits(θfull[i]) != math.Float32bits(θ2[i]) {
			t.Fatalf("θ[%d] = %v resumed, %v uninterrupted", i, θ2[i], θfull[i])
		}
	}
}

// savedCkpt is a training checkpoint after 5 steps of ckptRule, with its
// parts.
type savedCkpt struct {
	lay, slay *layout.Layout
	opt       *optimisers.Optimiser
	θ, state  []float32
	data      []byte // the file
}

func trainedCheckpoint(t *testing.T, total int) savedCkpt {
	t.Helper()
	lay, bs := regression(t)
	c := savedCkpt{lay: lay, slay: stateLayout(t), opt: mustSetup(t, ckptRule(total), lay),
		θ: make([]float32, lay.Len()), state: []float32{1, 2, 3, 4, 5, 6}}
	if err := optimisers.Train(context.Background(), c.opt, c.θ, first(epochs(bs, 1), 5), mse, 0, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := optimisers.SaveCheckpoint(&buf, optimisers.Checkpoint{Layout: lay, Params: c.θ, Opt: c.opt, StateLayout: c.slay, State: c.state}); err != nil {
		t.Fatal(err)
	}
	c.data = buf.Bytes()
	return c
}

// The file is one safetensors file that names its parts, says what it
// holds, and is checked on load.
func TestCheckpointFileAndErrors(t *testing.T) {
	c := trainedCheckpoint(t, 100)
	lay, slay, opt, θ, state, data := c.lay, c.slay, c.opt, c.θ, c.state, c.data

	vals, clay, err := layout.Load(bytes.NewReader(data), layout.WantHolds(optimisers.HoldsTrainingCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float32{"params.weight": θ[:2], "params.bias": θ[2:], "state.1.running_var": state[3:]} {
		v, err := clay.View(vals, name)
		if err != nil || !slices.Equal(v.Data, want) {
			t.Errorf("tensor %s = %v (%v); want %v", name, v.Data, err, want)
		}
	}
	for _, name := range []string{"optimiser.slot0.weight", "optimiser.slot1.bias", "optimiser.optimiser"} {
		if _, ok := clay.Find(name); !ok {
			t.Errorf("no tensor %s", name)
		}
	}
	if _, _, err := layout.Load(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "holds training checkpoint") {
		t.Errorf("loaded as parameters: %v", err)
	}

	read := func(d []byte, rule optimisers.Rule, c optimisers.Checkpoint) error {
		_, err := optimisers.LoadCheckpoint(bytes.NewReader(d), rule, c)
		return err
	}
	good := func() optimisers.Checkpoint {
		return optimisers.Checkpoint{Layout: lay, Params: make([]float32, lay.Len()), StateLayout: slay, State: make([]float32, slay.Len())}
	}
	if err := read(data, ckptRule(100), good()); err != nil {
		t.Fatal(err)
	}
	other, _ := layout.NewBuilder().Add("weight", 1, 3).Add("bias", 1).Build()
	noState := good()
	noState.StateLayout, noState.State = nil, nil
	var optFile bytes.Buffer
	if err := opt.Save(&optFile); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		rule optimisers.Rule
		c    optimisers.Checkpoint
		want string
	}{
		{"schedule length", data, ckptRule(101), good(), "the schedule of lr differs"},
		{"other layout", data, ckptRule(100), optimisers.Checkpoint{Layout: other, Params: make([]float32, 4), StateLayout: slay, State: make([]float32, 6)}, "the parameters are for another layout"},
		{"state not asked for", data, ckptRule(100), noState, "holds model state"},
		{"truncated", data[:len(data)-3], ckptRule(100), good(), "optimisers: LoadCheckpoint: layout: Load"},
		{"an optimiser file", optFile.Bytes(), ckptRule(100), good(), "holds optimiser state (metadata \"flatkit.holds\"), want training checkpoint"},
		{"short Params", data, ckptRule(100), optimisers.Checkpoint{Layout: lay, Params: make([]float32, 2)}, "Params has 2 floats, the layout wants 3"},
		{"State without StateLayout", data, ckptRule(100), optimisers.Checkpoint{Layout: lay, Params: make([]float32, 3), State: make([]float32, 2)}, "State has 2 floats but StateLayout is nil, want a StateLayout for them (or no State)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p0 := slices.Clone(c.c.Params)
			err := read(c.data, c.rule, c.c)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one containing %q", err, c.want)
			}
			if !slices.Equal(p0, c.c.Params) {
				t.Errorf("Params changed on error")
			}
		})
	}
	// Without model state, on both sides.
	var buf bytes.Buffer
	if err := optimisers.SaveCheckpoint(&buf, optimisers.Checkpoint{Layout: lay, Params: θ, Opt: opt}); err != nil {
		t.Fatal(err)
	}
	if err := read(buf.Bytes(), ckptRule(100), noState); err != nil {
		t.Errorf("without state: %v", err)
	}
	if err := read(buf.Bytes(), ckptRule(100), good()); err == nil || !strings.Contains(err.Error(), "holds no model state") {
		t.Errorf("state asked for, none saved: %v", err)
	}
}

// A nil rule loads the parameters and the model state alone, without
// naming the optimiser's rule (before, a nil rule was an error). A rule
// whose hyperparameter differs is an error naming it and pointing to
// Adjust; a differing field that is not a hyperparameter is named too.
func TestLoadCheckpointParamsAlone(t *testing.T) {
	c := trainedCheckpoint(t, 20)
	lay, slay, θ, state, data := c.lay, c.slay, c.θ, c.state, c.data

	θ2, state2 := make([]float32, lay.Len()), make([]float32, slay.Len())
	opt2, err := optimisers.LoadCheckpoint(bytes.NewReader(data), nil, optimisers.Checkpoint{Layout: lay, Params: θ2, StateLayout: slay, State: state2})
	if err != nil {
		t.Fatalf("nil rule: %v", err)
	}
	if opt2 != nil || !slices.Equal(θ2, θ) || !slices.Equal(state2, state) {
		t.Errorf("nil rule: optimiser %v, θ %v, state %v; want nil, %v, %v", opt2, θ2, state2, θ, state)
	}

	other := optimisers.Chain(optimisers.ClipGlobalNorm(2),
		optimisers.Scheduled(optimisers.AdamW(1e-3, 1e-2), "lr", optimisers.WarmupCosine(0.05, 0, 4, 20)))
	_, err = optimisers.LoadCheckpoint(bytes.NewReader(data), other, optimisers.Checkpoint{Layout: lay, Params: θ2, StateLayout: slay, State: state2})
	if err == nil {
		t.Fatal("another max norm loaded without complaint")
	}
	for _, want := range []string{"chain rule 0", "is 1 in the checkpoint, 2 in the rule", "then change it with Adjust", "nil rule"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
