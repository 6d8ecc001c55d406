package stfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flatkit/flatkit/internal/stfile"
	"github.com/flatkit/flatkit/layout"
)

// printTB stands in for a test's *testing.T: it has the two methods
// LoadInto calls, and prints what would fail the test.
type printTB struct{ testing.TB }

func (printTB) Helper()           {}
func (printTB) Fatal(args ...any) { fmt.Println(args...) }

// A test loads a file it wrote (or a fixture in testdata) by path, into a
// buffer of the same layout.
func ExampleLoadInto() {
	dir, err := os.MkdirTemp("", "stfile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	lay, err := layout.NewBuilder().Add("weight", 2, 2).Add("bias", 2).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	path := filepath.Join(dir, "model.safetensors")
	if err := layout.SaveFile(path, lay, []float32{1, 2, 3, 4, 5, 6}); err != nil {
		fmt.Println(err)
		return
	}

	var t printTB // a test's t
	θ := make([]float32, lay.Len())
	rep := stfile.LoadInto(t, path, lay, θ)
	fmt.Println(θ, rep.Loaded)
	// Output:
	// [1 2 3 4 5 6] [bias weight]
}
