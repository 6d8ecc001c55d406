// Package stfile loads the safetensors files of the tests of any package
// (the PyTorch fixtures in testdata, the files a test writes) into a
// layout's buffer. It imports layout, whose LoadInto reads from an
// io.Reader; a test gives a path.
package stfile

import (
	"os"
	"testing"

	"github.com/flatkit/flatkit/layout"
)

// LoadInto opens the safetensors file at path and loads it into θ by
// lay's paths, as layout.LoadInto with opts, failing t on an error; it
// returns the report.
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
