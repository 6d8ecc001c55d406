package layout_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flatkit/flatkit/internal/stfile"
	"github.com/flatkit/flatkit/layout"
)

// The fixture is a PyTorch state_dict written by testdata/torch_state_dict.py
// the way the reference safetensors library writes files.
const torchFixture = "testdata/torch_state_dict.safetensors"

type torchTensor struct {
	Shape  []int     `json:"shape"`
	Values []float32 `json:"values"`
}

func torchValues(t *testing.T) map[string]torchTensor {
	t.Helper()
	b, err := os.ReadFile("testdata/torch_state_dict.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]torchTensor
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoadTorchStateDict(t *testing.T) {
	want := torchValues(t)
	// Parameters, as a flatkit Chain of Conv, BatchNorm, Relu, Flatten, Dense
	// would name them; the running statistics belong in a state layout.
	params, err := layout.NewBuilder().
		Add("0.weight", 2, 1, 3, 3).Add("0.bias", 2).
		Add("1.weight", 2).Add("1.bias", 2).
		Add("4.weight", 3, 8).Add("4.bias", 3).Build()
	if err != nil {
		t.Fatal(err)
	}
	θ := make([]float32, params.Len())
	rep := stfile.LoadInto(t, torchFixture, params, θ)
	if rep.Missed != nil {
		t.Errorf("Missed = %v, want none", rep.Missed)
	}
	skipped := map[string]string{}
	for _, s := range rep.Skipped {
		skipped[s.Name] = s.Reason
	}
	wantSkipped := map[string]string{"1.num_batches_tracked": "not in layout", "1.running_mean": "not in layout", "1.running_var": "not in layout"}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
	for _, lf := range params.Leaves() {
		w := want[lf.Path]
		if !cmp.Equal(lf.Shape, w.Shape) {
			t.Errorf("%s: shape %v, PyTorch has %v", lf.Path, lf.Shape, w.Shape)
		}
		if diff := cmp.Diff(w.Values, params.MustView(θ, lf.Path).Data); diff != "" {
			t.Errorf("%s (-torch +loaded):\n%s", lf.Path, diff)
		}
	}

	// The same file into a layout with other names, through a rename.
	renamed, err := layout.NewBuilder().
		Add("features.conv.weight", 2, 1, 3, 3).Add("features.conv.bias", 2).
		Add("features.norm.running_mean", 2).Add("features.norm.running_var", 2).Build()
	if err != nil {
		t.Fatal(err)
	}
	rename := func(name string) string {
		switch {
		case strings.HasPrefix(name, "0."):
			return "features.conv." + strings.TrimPrefix(name, "0.")
		case strings.HasPrefix(name, "1.running_"):
			return "features.norm." + strings.TrimPrefix(name, "1.")
		}
		return ""
	}
	f2, _ := os.Open(torchFixture)
	defer f2.Close()
	θ2 := make([]float32, renamed.Len())
	rep, err = layout.LoadInto(f2, renamed, θ2, layout.Rename(rename), layout.Strict())
	if err != nil {
		t.Fatalf("LoadInto with a rename that maps every leaf, Strict: %v", err)
	}
	if len(rep.Loaded) != 4 {
		t.Errorf("Loaded = %v, want 4 names", rep.Loaded)
	}
	if diff := cmp.Diff(want["1.running_var"].Values, renamed.MustView(θ2, "features.norm.running_var").Data); diff != "" {
		t.Errorf("running_var (-torch +loaded):\n%s", diff)
	}

	// Load wants F32 only, and says which tensor is not.
	f3, _ := os.Open(torchFixture)
	defer f3.Close()
	if _, _, err := layout.Load(f3); err == nil || !strings.Contains(err.Error(), "1.num_batches_tracked") || !strings.Contains(err.Error(), "I64") {
		t.Errorf("Load of a file with an I64 tensor: %v", err)
	}
}
