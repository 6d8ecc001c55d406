package layout

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// stGenLayout draws a small random layout: nested groups (some empty),
// leaves of rank 0–3, ties (also inside groups) and frozen leaves or groups.
func stGenLayout(t *rapid.T) *Layout {
	b := NewBuilder()
	var leaves, groups []string
	var fill func(g *Builder, prefix string, depth int)
	fill = func(g *Builder, prefix string, depth int) {
		n := rapid.IntRange(0, 4).Draw(t, "children")
		used := map[string]bool{}
		for range n {
			name := rapid.SampledFrom([]string{"0", "1", "2", "10", "weight", "bias", "w", "x.y"}).Draw(t, "name")
			if used[strings.Split(name, ".")[0]] {
				continue
			}
			used[strings.Split(name, ".")[0]] = true
			if depth < 3 && !strings.Contains(name, ".") && rapid.Bool().Draw(t, "group") {
				groups = append(groups, prefix+name)
				fill(g.Group(name), prefix+name+".", depth+1)
				continue
			}
			rank := rapid.IntRange(0, 3).Draw(t, "rank")
			shape := make([]int, rank)
			for i := range shape {
				shape[i] = rapid.IntRange(1, 3).Draw(t, "dim")
			}
			if strings.Contains(name, ".") {
				groups = append(groups, prefix+"x")
			}
			g.Add(name, shape...)
			leaves = append(leaves, prefix+name)
		}
	}
	fill(b, "", 0)
	if len(leaves) > 0 {
		for i := range rapid.IntRange(0, 3).Draw(t, "ties") {
			at := rapid.SampledFrom(append([]string{""}, groups...)).Draw(t, "tie group")
			alias := fmt.Sprintf("tie%d", i)
			if at != "" {
				alias = at + "." + alias
			}
			b.Tie(alias, rapid.SampledFrom(leaves).Draw(t, "tie target"))
		}
		all := append(slices.Clone(leaves), groups...)
		for range rapid.IntRange(0, 2).Draw(t, "freezes") {
			b.Freeze(rapid.SampledFrom(all).Draw(t, "freeze"))
		}
	}
	lay, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return lay
}

func TestSafetensorsRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := stGenLayout(t)
		words := rapid.SliceOfN(rapid.Uint32(), lay.Len(), lay.Len()).Draw(t, "θ bits")
		θ := make([]float32, len(words))
		for i, w := range words {
			θ[i] = math.Float32frombits(w)
		}
		var buf bytes.Buffer
		if err := Save(&buf, lay, θ); err != nil {
			t.Fatalf("Save: %v", err)
		}
		file := buf.Bytes()
		var r io.Reader = bytes.NewReader(file)
		if rapid.Bool().Draw(t, "plain reader") {
			r = onlyReader{r}
		}
		got, glay, err := Load(r)
		if err != nil {
			t.Fatalf("Load: %v\n%s", err, file)
		}
		if d := stLayoutDiff(glay, lay); d != "" {
			t.Fatalf("layout differs:\n%s", d)
		}
		if d := cmp.Diff(words, stBits(got)); d != "" {
			t.Fatalf("values differ (-want +got):\n%s", d)
		}
		// LoadInto the same layout fills every leaf with the same bits.
		into := make([]float32, lay.Len())
		rep, err := LoadInto(bytes.NewReader(file), lay, into, Strict())
		if err != nil {
			t.Fatalf("LoadInto: %v", err)
		}
		if len(rep.Missed) != 0 || len(rep.Skipped) != 0 || len(rep.Loaded) != lay.NumLeaves() {
			t.Fatalf("LoadInto report %+v", rep)
		}
		if d := cmp.Diff(words, stBits(into)); d != "" {
			t.Fatalf("LoadInto values differ (-want +got):\n%s", d)
		}
	})
}

// A file says what it holds: one marked by Holds is refused by Load and
// LoadInto (which load parameters) with an error naming both kinds, and
// read with WantHolds; an unmarked file is parameters, and WantHolds
// accepts it too (files from before the mark, or from PyTorch).
func TestHoldsMarksWhatAFileHolds(t *testing.T) {
	lay := stBuild(t, func(b *Builder) { b.Add("w", 2).Add("b", 1) })
	θ := []float32{1, 2, 3}
	var marked, plain bytes.Buffer
	if err := Save(&marked, lay, θ, Holds("optimiser state")); err != nil {
		t.Fatal(err)
	}
	if err := Save(&plain, lay, θ, Holds(HoldsParameters)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain.Bytes(), []byte("flatkit.holds")) {
		t.Errorf("a parameter file carries a mark: %q", plain.Bytes())
	}
	want := []string{"the file holds optimiser state", `"flatkit.holds"`, "want parameters"}
	_, _, err := Load(bytes.NewReader(marked.Bytes()))
	stWantErr(t, err, append([]string{"layout: Load: "}, want...))
	into := make([]float32, 3)
	_, err = LoadInto(bytes.NewReader(marked.Bytes()), lay, into)
	stWantErr(t, err, append([]string{"layout: LoadInto: "}, want...))
	_, _, err = Load(bytes.NewReader(plain.Bytes()), WantHolds("optimiser state"))
	if err != nil {
		t.Errorf("WantHolds refused an unmarked file: %v", err)
	}
	_, _, err = Load(bytes.NewReader(marked.Bytes()), WantHolds("a training checkpoint"))
	stWantErr(t, err, []string{"holds optimiser state", "want a training checkpoint"})

	got, lay2, err := Load(bytes.NewReader(marked.Bytes()), WantHolds("optimiser state"))
	if err != nil || !lay2.Equal(lay) || !slices.Equal(got, θ) {
		t.Fatalf("WantHolds: %v, %v, %v", got, lay2, err)
	}
	if _, err := LoadInto(bytes.NewReader(marked.Bytes()), lay, into, WantHolds("optimiser state")); err != nil || !slices.Equal(into, θ) {
		t.Fatalf("LoadInto with WantHolds: %v, %v", into, err)
	}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := SaveFile(path, lay, θ, Holds("optimiser state")); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadFile(path)
	stWantErr(t, err, append([]string{"layout: LoadFile: " + path + ": "}, want...))
	_, _, err = Load(bytes.NewReader(plain.Bytes()), Strict())
	stWantErr(t, err, []string{"layout: Load: ", "LoadInto only"})
}
