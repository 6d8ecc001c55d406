package layout

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSaveFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	lay := stLayouts(t)["nested"]
	θ := stValues(lay.Len())

	stDirIs := func(t *testing.T, want ...string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("directory (-want +got):\n%s", d)
		}
	}
	stFileIs := func(t *testing.T, θ []float32) {
		t.Helper()
		var want bytes.Buffer
		if err := Save(&want, lay, θ); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("file contents differ from Save's output")
		}
		gθ, glay, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := stLayoutDiff(glay, lay); d != "" {
			t.Error(d)
		}
		if d := cmp.Diff(stBits(θ), stBits(gθ)); d != "" {
			t.Errorf("LoadFile values (-want +got):\n%s", d)
		}
	}

	if err := SaveFile(path, lay, θ); err != nil {
		t.Fatal(err)
	}
	stFileIs(t, θ)
	stDirIs(t, "ckpt.safetensors")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, %v; want 0644", fi.Mode(), err)
	}

	// Overwrite with other values; the mode of the existing file is kept.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	θ2 := slices.Clone(θ)
	for i := range θ2 {
		θ2[i] = float32(i)
	}
	if err := SaveFile(path, lay, θ2); err != nil {
		t.Fatal(err)
	}
	stFileIs(t, θ2)
	stDirIs(t, "ckpt.safetensors")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("overwritten file mode %v, %v; want 0600", fi.Mode(), err)
	}

	// A failed save leaves the old file as it was and no temporary file.
	err := SaveFile(path, lay, θ2[1:])
	stWantErr(t, err, []string{"layout: SaveFile: "})
	err = SaveFile(path, stBuild(t, func(b *Builder) { b.Add("__metadata__", 1) }), []float32{1})
	stWantErr(t, err, []string{"layout: SaveFile: ", "reserved"})
	stFileIs(t, θ2)
	stDirIs(t, "ckpt.safetensors")

	// Renaming onto a directory fails after the data is written: the
	// temporary file must still go.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = SaveFile(filepath.Join(dir, "sub"), lay, θ)
	stWantErr(t, err, []string{"layout: SaveFile: "})
	stDirIs(t, "ckpt.safetensors", "sub")

	// A directory that does not exist.
	err = SaveFile(filepath.Join(dir, "nope", "x.safetensors"), lay, θ)
	stWantErr(t, err, []string{"layout: SaveFile: ", "nope"})

	// LoadFile of a missing file.
	_, _, err = LoadFile(filepath.Join(dir, "missing"))
	stWantErr(t, err, []string{"layout: LoadFile: ", "missing"})
}

func TestLoadIntoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, stTorchFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lay := stTorchLayout(t)
	θ := make([]float32, lay.Len())
	rep, err := LoadInto(f, lay, θ, Rename(stStripModel))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"0.bias", "0.weight", "1.running_mean"}, rep.Loaded); d != "" {
		t.Errorf("loaded (-want +got):\n%s", d)
	}
}
