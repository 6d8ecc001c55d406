package optimisers

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/flatkit/flatkit/layout"
)

// This file: the training checkpoint, θ and the optimiser (and optionally
// the model's state) in one safetensors file.

// HoldsTrainingCheckpoint is what a training checkpoint says it holds.
const HoldsTrainingCheckpoint = "training checkpoint"

// Checkpoint is what a training checkpoint holds: the parameters θ laid out
// by Layout, the optimiser, and optionally the model's own state. The
// optimiser is saved as Optimiser.Save saves it. The model state is a
// buffer and its layout, such as BatchNorm's running statistics under
// model.StateLayout. SaveCheckpoint reads every field; LoadCheckpoint fills
// Params and State and returns the optimiser.
type Checkpoint struct {
	Layout      *layout.Layout
	Params      []float32
	Opt         *Optimiser
	StateLayout *layout.Layout // nil: no model state
	State       []float32
}

// SaveCheckpoint writes c to w as a safetensors file, readable by any
// safetensors tool: "params.<path>" is θ by its layout paths,
// "optimiser.slot<k>.<path>" the optimiser's state vectors,
// "optimiser.optimiser" its document (step, rule, hyperparameters,
// schedules; see Load), and "state.<path>" the model state.
func SaveCheckpoint(w io.Writer, c Checkpoint) error { return c.save(w, "SaveCheckpoint", "") }

// SaveCheckpointFile writes c to the file at path as SaveCheckpoint does,
// in one atomic write (layout.SaveFile: temp file, fsync, rename), so the
// parameters, the optimiser and the state always come from the same step.
func SaveCheckpointFile(path string, c Checkpoint) error {
	return c.save(nil, "SaveCheckpointFile", path)
}

// save writes c to w, or to the file at path if w is nil.
func (c Checkpoint) save(w io.Writer, op, path string) error {
	clay, data, err := c.encode(op)
	if err != nil {
		return err
	}
	return saveTo(w, path, op, clay, data, HoldsTrainingCheckpoint)
}

func (c *Checkpoint) check(op string, load bool) error {
	if c.StateLayout != nil && c.StateLayout.NumLeaves() == 0 && len(c.State) == 0 {
		c.StateLayout = nil // a model without state
	}
	switch {
	case c.Layout == nil:
		return errorf("%s: nil Layout", op)
	case len(c.Params) != c.Layout.Len():
		return errorf("%s: Params has %d floats, the layout wants %d", op, len(c.Params), c.Layout.Len())
	case !load && c.Opt == nil:
		return errorf("%s: nil Opt", op)
	case c.StateLayout == nil && len(c.State) > 0:
		return errorf("%s: State has %d floats but StateLayout is nil, want a StateLayout for them (or no State)", op, len(c.State))
	case c.StateLayout != nil && len(c.State) != c.StateLayout.Len():
		return errorf("%s: State has %d floats, StateLayout wants %d", op, len(c.State), c.StateLayout.Len())
	}
	return nil
}

func (c Checkpoint) encode(op string) (*layout.Layout, []float32, error) {
	if err := c.check(op, false); err != nil {
		return nil, nil, err
	}
	if c.Opt.Layout() != c.Layout && !c.Opt.Layout().Equal(c.Layout) {
		return nil, nil, errorf("%s: the optimiser was set up for another layout than Layout", op)
	}
	var buf bytes.Buffer
	if err := c.Opt.st.save(&buf, op, ""); err != nil {
		return nil, nil, err
	}
	odata, olay, err := layout.Load(&buf, layout.WantHolds(HoldsOptimiserState))
	if err != nil {
		return nil, nil, errorf("%s: %w", op, err)
	}
	parts := []struct {
		name string
		lay  *layout.Layout
		data []float32
	}{{"params", c.Layout, c.Params}, {"optimiser", olay, odata}}
	if c.StateLayout != nil {
		parts = append(parts, struct {
			name string
			lay  *layout.Layout
			data []float32
		}{"state", c.StateLayout, c.State})
	}
	b := layout.NewBuilder()
	n := 0
	for _, p := range parts {
		g := b.Group(p.name)
		for _, lf := range p.lay.Leaves() {
			g.Add(lf.Path, lf.Shape...)
		}
		n += len(p.data)
	}
	clay, err := b.Build()
	if err != nil {
		return nil, nil, errorf("%s: laying out the checkpoint: %w", op, err)
	}
	data := make([]float32, 0, n)
	for _, p := range parts {
		lo, hi, err := clay.Range(p.name)
		if err != nil || lo != len(data) || hi != lo+len(p.data) {
			return nil, nil, errorf("%s: part %s at [%d, %d), want [%d, %d) (%v)", op, p.name, lo, hi, len(data), len(data)+len(p.data), err)
		}
		data = append(data, p.data...)
	}
	return clay, data, nil
}

// LoadCheckpoint reads a checkpoint written by SaveCheckpoint from r. It
// reads θ into c.Params, laid out by c.Layout, and the model state into
// c.State if c.StateLayout is set. It returns the optimiser for rule, which
// continues exactly where the saved one was. As for Load, rule must have
// the saved rule's hyperparameters and schedules; change them after
// loading with Adjust. Errors name what differs or what is wrong; on error
// c.Params and c.State are unchanged.
//
// A nil rule loads the parameters and the model state alone, as for
// evaluation or a fit with another method: the optimiser's part of the
// file is not read, and the returned optimiser is nil.
func LoadCheckpoint(r io.Reader, rule Rule, c Checkpoint) (*Optimiser, error) {
	return readCheckpoint(r, "LoadCheckpoint", rule, c)
}

// LoadCheckpointFile is LoadCheckpoint of the file at path.
func LoadCheckpointFile(path string, rule Rule, c Checkpoint) (*Optimiser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("LoadCheckpointFile: %w", err)
	}
	defer f.Close()
	return readCheckpoint(f, "LoadCheckpointFile "+path, rule, c)
}

func readCheckpoint(r io.Reader, op string, rule Rule, c Checkpoint) (*Optimiser, error) {
	if err := c.check(op, true); err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*Optimiser, error) {
		return nil, errorf(op+": "+format, args...)
	}
	data, clay, err := layout.Load(r, layout.WantHolds(HoldsTrainingCheckpoint))
	if err != nil {
		return fail("%w", err)
	}
	sub := func(name string) (*layout.Layout, []float32, error) {
		lo, hi, err := clay.Range(name)
		if err != nil {
			return nil, nil, fmt.Errorf("not a training checkpoint: %w", err)
		}
		s, err := clay.Sub(name)
		if err != nil {
			return nil, nil, err
		}
		return s, data[lo:hi], nil
	}
	play, pdata, err := sub("params")
	if err != nil {
		return fail("%v", err)
	}
	if d := layoutDiff(c.Layout, play); d != "" {
		return fail("the parameters are for another layout: %s", d)
	}
	var sdata []float32
	_, noState := clay.Sub("state")
	switch {
	case c.StateLayout != nil && noState != nil:
		return fail("the checkpoint holds no model state, but StateLayout is set")
	case c.StateLayout == nil && noState == nil:
		return fail("the checkpoint holds model state; set StateLayout and State to load it")
	case c.StateLayout != nil:
		slay, s, err := sub("state")
		if err != nil {
			return fail("%v", err)
		}
		if d := layoutDiff(c.StateLayout, slay); d != "" {
			return fail("the model state is for another layout: %s", d)
		}
		sdata = s
	}
	olay, odata, err := sub("optimiser")
	if err != nil {
		return fail("%v", err)
	}
	if rule == nil {
		copy(c.Params, pdata)
		copy(c.State, sdata)
		return nil, nil
	}
	opt, err := load(op, odata, olay, rule, c.Layout)
	if err != nil {
		return nil, err
	}
	copy(c.Params, pdata)
	copy(c.State, sdata)
	return opt, nil
}
