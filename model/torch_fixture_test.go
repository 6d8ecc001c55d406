package model_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/stfile"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
)

// tfNet is the network of testdata/torch_model.py, layer for layer, so the
// state_dict names are the layout's paths.
func tfNet() model.Layer {
	return model.Chain(
		model.Conv([]int{3, 3}, 1, 4, model.Pad(1)),
		model.Relu(),
		model.MaxPool([]int{2, 2}),
		model.Conv([]int{3, 3}, 4, 6, model.Groups(2), model.Pad(1, 0)),
		model.Relu(),
		model.MeanPool([]int{2, 2}),
		model.ConvTranspose([]int{3, 3}, 6, 3, model.Stride(2), model.Pad(1, 0), model.OutputPad(1), model.Groups(3)),
		model.AdaptiveMeanPool(3, 2),
		model.Flatten(),
		model.Dense(18, 10),
		model.Tanh(),
		model.Dense(10, 3),
	)
}

// TestTorchModelFixture loads the parameters of a PyTorch nn.Sequential by
// name and checks that the same architecture built here gives PyTorch's
// output on PyTorch's input.
func TestTorchModelFixture(t *testing.T) {
	const path = "testdata/torch_model.safetensors"
	net := tfNet()
	lay := mustLayout(t, net)
	θ := make([]float32, lay.Len())
	for i := range θ {
		θ[i] = float32(math.NaN()) // anything not loaded would show
	}
	dataOnly := layout.Rename(func(name string) string {
		if name == "input" || name == "output" {
			return ""
		}
		return name
	})
	rep := stfile.LoadInto(t, path, lay, θ, dataOnly, layout.Strict())
	var leaves []string
	for _, l := range lay.Leaves() {
		leaves = append(leaves, l.Path)
	}
	slices.Sort(leaves)
	if !slices.Equal(rep.Loaded, leaves) || len(rep.Missed) != 0 {
		t.Errorf("loaded %v, missed %v; want every parameter %v", rep.Loaded, rep.Missed, leaves)
	}
	want := []layout.Skipped{{Name: "input", Reason: "renamed away"}, {Name: "output", Reason: "renamed away"}}
	if !slices.Equal(rep.Skipped, want) {
		t.Errorf("skipped %v, want %v", rep.Skipped, want)
	}

	// The data tensors, by name from the whole file.
	all, flay, err := layout.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tensor := func(name string) flat.Tensor {
		t.Helper()
		l, ok := flay.Find(name)
		if !ok {
			t.Fatalf("%s: no tensor %q", path, name)
		}
		n := 1
		for _, d := range l.Shape {
			n *= d
		}
		return flat.Tensor{Shape: l.Shape, Data: all[l.Offset : l.Offset+n]}
	}
	x, y := tensor("input"), tensor("output")

	tape := ad.NewTape()
	got := net.Apply(nil, tape.Param(θ), tape.Const(x))
	if err := tape.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape(), y.Shape) {
		t.Fatalf("output shape %v, PyTorch's %v", got.Shape(), y.Shape)
	}
	for i, w := range y.Data {
		g := got.Data()[i]
		if d := math.Abs(float64(g - w)); d > 1e-5*(1+math.Abs(float64(w))) {
			t.Errorf("output %d = %.7g, PyTorch %.7g (|diff| %.2g)", i, g, w, d)
		}
	}
}
