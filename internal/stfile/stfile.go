package stfile

import (
	"os"
	"testing"

	"github.com/flatkit/flatkit/layout"
)

// LoadInto opens the safetensors file at path and loads it into θ by
// lay's paths, as layout.LoadInto does with opts. It fails t on an error
// and returns the report.
func LoadInto(t testing.TB, path string, lay *layout.Layout, θ []float32, opts ...layout.LoadOption) layout.LoadReport {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := layout.LoadInto(f, lay, θ, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
