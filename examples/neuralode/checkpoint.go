package main

import (
	"bytes"
	"fmt"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// The checkpoint is one safetensors file, written atomically (temp file,
// fsync, rename), so θ and the optimiser's state always come from the same
// step:
//
//	theta.<path>   θ by the network's layout paths ("theta.0.weight", …, "theta.4.bias")
//	adam.<name>    the optimiser's own checkpoint (optimisers.Save): its moments
//	               "adam.slot0.<path>", "adam.slot1.<path>" and its document
//	               "adam.optimiser" (rule, hyperparameters, step, per-leaf counts)
//	step           the number of Adam steps taken (the optimiser's document has it too)
//	run            the flags the schedules depend on: steps, batch, window, lr and
//	               the seed in four 16-bit pieces (all exact in float32)
//	loss           the minibatch loss of every step so far, for the loss curve

// runKey is the "run" tensor of cfg.
func runKey(cfg config) []float32 {
	k := []float32{float32(cfg.steps), float32(cfg.batch), float32(cfg.window), float32(cfg.lr)}
	for i := range 4 {
		k = append(k, float32(cfg.seed>>(16*i)&0xffff))
	}
	return k
}

var runNames = []string{"-steps", "-batch", "-window", "-lr", "-seed", "-seed", "-seed", "-seed"}

// saveCheckpoint writes θ, the optimiser and the loss history to path.
func saveCheckpoint(path string, cfg config, lay *layout.Layout, θ []float32, opt *optimisers.Optimiser, losses []float64) error {
	var buf bytes.Buffer
	if err := opt.Save(&buf); err != nil {
		return err
	}
	adam, alay, err := layout.Load(&buf, layout.WantHolds(optimisers.HoldsOptimiserState))
	if err != nil {
		return err
	}
	key := runKey(cfg)
	b := layout.NewBuilder()
	for _, lf := range lay.Leaves() {
		b.Add("theta."+lf.Path, lf.Shape...)
	}
	for _, lf := range alay.Leaves() {
		b.Add("adam."+lf.Path, lf.Shape...)
	}
	b.Add("step")
	b.Add("run", len(key))
	b.Add("loss", len(losses))
	clay, err := b.Build()
	if err != nil {
		return err
	}
	data := make([]float32, 0, clay.Len())
	data = append(data, θ...)
	data = append(data, adam...)
	data = append(data, float32(opt.Steps()))
	data = append(data, key...)
	for _, v := range losses {
		data = append(data, float32(v))
	}
	// The leaves were added in buffer order: each part is its own range.
	for _, part := range []struct {
		name   string
		lo, hi int
	}{{"theta", 0, len(θ)}, {"adam", len(θ), len(θ) + len(adam)}} {
		if lo, hi, err := clay.Range(part.name); err != nil || lo != part.lo || hi != part.hi {
			return fmt.Errorf("checkpoint: %s at [%d, %d), want [%d, %d) (%v)", part.name, lo, hi, part.lo, part.hi, err)
		}
	}
	return layout.SaveFile(path, clay, data)
}

// loadCheckpoint reads a checkpoint written by saveCheckpoint for the same
// flags: θ (into θ), the optimiser (for rule over lay) and the loss history.
func loadCheckpoint(path string, cfg config, lay *layout.Layout, rule optimisers.Rule, θ []float32) (*optimisers.Optimiser, []float64, error) {
	data, clay, err := layout.LoadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	fail := func(format string, args ...any) (*optimisers.Optimiser, []float64, error) {
		return nil, nil, fmt.Errorf("resume: %s: "+format, append([]any{path}, args...)...)
	}
	view := func(name string) []float32 {
		if err != nil {
			return nil
		}
		var t []float32
		v, e := clay.View(data, name)
		t, err = v.Data, e
		return t
	}
	step, key, losses := view("step"), view("run"), view("loss")
	if err != nil {
		return fail("%v", err)
	}
	want := runKey(cfg)
	if len(key) != len(want) {
		return fail("the run tensor has %d values, want %d", len(key), len(want))
	}
	for i := range want {
		if key[i] != want[i] {
			return fail("the checkpoint was made with other flags: %s differs (the schedules and minibatches depend on it)", runNames[i])
		}
	}

	tlay, err := clay.Sub("theta")
	if err != nil {
		return fail("%v", err)
	}
	if err := lay.Compatible(tlay); err != nil {
		return fail("the checkpoint is for another network: %v", err)
	}
	alay, err := clay.Sub("adam")
	if err != nil {
		return fail("%v", err)
	}
	lo, hi, _ := clay.Range("adam")
	var buf bytes.Buffer
	if err := layout.Save(&buf, alay, data[lo:hi]); err != nil {
		return fail("%v", err)
	}
	opt, err := optimisers.Load(&buf, rule, lay)
	if err != nil {
		return fail("%v", err)
	}
	if int(step[0]) != opt.Steps() || len(losses) != opt.Steps() {
		return fail("step %v and %d losses, but the optimiser has taken %d steps", step[0], len(losses), opt.Steps())
	}
	lo, hi, _ = clay.Range("theta")
	copy(θ, data[lo:hi])
	hist := make([]float64, len(losses))
	for i, v := range losses {
		hist[i] = float64(v)
	}
	return opt, hist, nil
}
