package layout_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
)

// TestPathErrorAs checks that the path and shape errors of View, Range,
// Sub, Restructure and LoadInto are *PathError values that callers can
// branch on with errors.As and errors.Is, naming the operation, the path,
// what came and what was wanted, with the prefix once.
func TestPathErrorAs(t *testing.T) {
	b := layout.NewBuilder()
	b.Group("enc").Add("w", 2, 3).Add("b", 3)
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	θ := make([]float32, lay.Len())

	type fields struct{ W, B []float32 }
	type wrongCase struct{ Enc fields }
	other := layout.NewBuilder()
	other.Group("enc").Add("w", 3, 2).Add("b", 3)
	olay, err := other.Build()
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := layout.Save(&file, olay, make([]float32, olay.Len())); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		err      func() error
		op, path string
		cause    error
		want     string // in PathError.Want
	}{
		{"View", func() error { _, err := lay.View(θ, "enc.x"); return err }, "View", "enc.x", layout.ErrUnknownPath, "enc.b, enc.w"},
		{"Range", func() error { _, _, err := lay.Range("dec"); return err }, "Range", "dec", layout.ErrUnknownPath, "enc"},
		{"Sub", func() error { _, err := lay.Sub("enc.w.x"); return err }, "Sub", "enc.w.x", layout.ErrUnknownPath, "enc"},
		{"Restructure", func() error { return layout.Restructure(θ, lay, &wrongCase{}) }, "Restructure", "Enc.W", layout.ErrUnknownPath, "enc"},
		{"LoadInto", func() error {
			_, err := layout.LoadInto(bytes.NewReader(file.Bytes()), lay, θ)
			return err
		}, "LoadInto", "enc.w", layout.ErrShape, "[2 3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			var pe *layout.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *layout.PathError", err, err)
			}
			if pe.Op != tt.op || pe.Path != tt.path || !errors.Is(err, tt.cause) || !strings.Contains(pe.Want, tt.want) {
				t.Errorf("got %+v, want Op %q, Path %q, cause %v, Want containing %q", *pe, tt.op, tt.path, tt.cause, tt.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "layout: "+tt.op+" ") || strings.Count(msg, "layout:") != 1 {
				t.Errorf("message %q: want the prefix once, then %s", msg, tt.op)
			}
		})
	}
	// A shape the struct's tag gets wrong is ErrShape, naming both shapes.
	type tagged struct {
		Enc struct {
			W []float32 `flat:"shape=3,2"`
			B []float32 `flat:"shape=3"`
		}
	}
	var pe *layout.PathError
	// Struct paths are Go field names, so the layout here has those.
	tl := layout.NewBuilder()
	tl.Group("Enc").Add("W", 2, 3).Add("B", 3)
	tlay, _ := tl.Build()
	err = layout.Restructure(θ, tlay, &tagged{})
	if !errors.As(err, &pe) || !errors.Is(err, layout.ErrShape) || pe.Path != "Enc.W" || pe.Want != `[2 3] (the layout's leaf "Enc.W")` {
		t.Errorf("Restructure with a wrong shape tag: %v", err)
	}
	if _, ok := lay.Find("enc.x"); ok {
		t.Error("Find of an unknown path reported a leaf")
	}
}
