package layout_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/proptest"
)

func mustBuild(t *testing.T, b *layout.Builder) *layout.Layout {
	t.Helper()
	lay, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return lay
}

// encoderDecoder is the layout of DESIGN.md's example, with its members
// mentioned out of order to show that groups stay contiguous.
func encoderDecoder(t *testing.T) *layout.Layout {
	t.Helper()
	b := layout.NewBuilder()
	b.Add("weight", 4, 3)
	enc := b.Group("encoder")
	enc.Add("bias", 2)
	b.Add("head", 5)
	enc.Add("weight", 2, 2) // after head in call order, still inside encoder
	b.Group("relu")         // an empty group keeps its place
	b.Tie("decoder.weight", "weight")
	b.Freeze("encoder")
	return mustBuild(t, b)
}

func TestBuilderPlacesGroupsContiguously(t *testing.T) {
	lay := encoderDecoder(t)
	want := []layout.Leaf{
		{Path: "weight", Offset: 0, Shape: []int{4, 3}, Aliases: []string{"decoder.weight"}},
		{Path: "encoder.bias", Offset: 12, Shape: []int{2}, Frozen: true},
		{Path: "encoder.weight", Offset: 14, Shape: []int{2, 2}, Frozen: true},
		{Path: "head", Offset: 18, Shape: []int{5}},
	}
	if diff := cmp.Diff(want, lay.Leaves()); diff != "" {
		t.Errorf("Leaves (-want +got):\n%s", diff)
	}
	wantGroups := []layout.Group{{Path: "encoder", Lo: 12, Hi: 18}, {Path: "relu", Lo: 23, Hi: 23}}
	if diff := cmp.Diff(wantGroups, lay.Groups()); diff != "" {
		t.Errorf("Groups (-want +got):\n%s", diff)
	}
	if lay.Len() != 23 {
		t.Errorf("Len = %d, want 23", lay.Len())
	}
}

func TestBuilderErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *layout.Builder)
		want  string // a fragment the error must contain
	}{
		{"duplicate leaf", func(b *layout.Builder) { b.Add("w", 2); b.Add("w", 3) }, `duplicate path "w"`},
		{"duplicate in group", func(b *layout.Builder) { b.Group("g").Add("w", 2); b.Add("g.w", 1) }, `duplicate path "g.w"`},
		{"leaf then group", func(b *layout.Builder) { b.Add("w", 2); b.Group("w").Add("x", 1) }, `"w" is a leaf`},
		{"empty name", func(b *layout.Builder) { b.Add("", 2) }, "empty name"},
		{"empty segment", func(b *layout.Builder) { b.Add("a..b", 2) }, "empty segment"},
		{"zero dimension", func(b *layout.Builder) { b.Add("w", 2, 0) }, "dimension 1 of shape [2 0] is 0"},
		{"negative dimension", func(b *layout.Builder) { b.Add("w", -1) }, "is -1, want > 0"},
		{"tie to unknown", func(b *layout.Builder) { b.Add("w", 2); b.Tie("v", "nope") }, `no leaf "nope"`},
		{"tie to group", func(b *layout.Builder) { b.Group("g").Add("w", 2); b.Tie("v", "g") }, "is a group"},
		{"tie onto existing", func(b *layout.Builder) { b.Add("w", 2); b.Add("v", 2); b.Tie("v", "w") }, `"v" already exists`},
		{"tie below leaf", func(b *layout.Builder) { b.Add("w", 2); b.Tie("w.x", "w") }, "below leaf"},
		{"tie onto group", func(b *layout.Builder) { b.Group("g").Add("w", 2); b.Tie("g", "g.w") }, "is a group"},
		{"freeze unknown", func(b *layout.Builder) { b.Add("w", 2); b.Freeze("v") }, `Freeze "v"`},
		{"first error wins", func(b *layout.Builder) { b.Add("", 1); b.Add("w", 0) }, "empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := layout.NewBuilder()
			tt.build(b)
			_, err := b.Build()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTieChainsResolveToStorage(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("w", 3)
	b.Tie("a", "w")
	b.Tie("g.b", "a")
	lay := mustBuild(t, b)
	for _, p := range []string{"w", "a", "g.b"} {
		lf, ok := lay.Find(p)
		if !ok || lf.Path != "w" {
			t.Errorf("Find(%q) = %v, %v; want leaf w", p, lf, ok)
		}
	}
	if lay.NumLeaves() != 1 || lay.Len() != 3 {
		t.Errorf("ties took storage: %v", lay)
	}
}

func TestScalarLeaf(t *testing.T) {
	lay := mustBuild(t, layout.NewBuilder().Add("temperature").Add("w", 2))
	θ := []float32{7, 1, 2}
	v, err := lay.View(θ, "temperature")
	if err != nil || len(v.Shape) != 0 || v.Size() != 1 || v.Data[0] != 7 {
		t.Fatalf("scalar view = %v, %v", v, err)
	}
}

func TestViewAliasesBuffer(t *testing.T) {
	lay := encoderDecoder(t)
	θ := make([]float32, lay.Len())
	for i := range θ {
		θ[i] = float32(i)
	}
	tests := []struct {
		path  string
		shape []int
		first float32
	}{
		{"weight", []int{4, 3}, 0},
		{"decoder.weight", []int{4, 3}, 0},
		{"encoder.weight", []int{2, 2}, 14},
		{"encoder", []int{6}, 12},
		{"relu", []int{0}, 0},
		{"", []int{23}, 0},
	}
	for _, tt := range tests {
		v, err := lay.View(θ, tt.path)
		if err != nil {
			t.Fatalf("View(%q): %v", tt.path, err)
		}
		if !cmp.Equal(v.Shape, tt.shape) {
			t.Errorf("View(%q).Shape = %v, want %v", tt.path, v.Shape, tt.shape)
		}
		if len(v.Data) == 0 {
			continue
		}
		if v.Data[0] != tt.first {
			t.Errorf("View(%q).Data[0] = %v, want %v", tt.path, v.Data[0], tt.first)
		}
		v.Data[0] = -1
		if lo, _, _ := lay.Range(tt.path); θ[lo] != -1 {
			t.Errorf("writing View(%q) did not write θ", tt.path)
		}
		θ[int(tt.first)] = tt.first
		if cap(v.Data) != len(v.Data) {
			t.Errorf("View(%q) has spare capacity %d: an append would clobber the next leaf", tt.path, cap(v.Data))
		}
	}
}

func TestViewErrors(t *testing.T) {
	lay := encoderDecoder(t)
	if _, err := lay.View(make([]float32, 5), "weight"); err == nil || !strings.Contains(err.Error(), "buffer has 5 floats, layout wants 23") {
		t.Errorf("short buffer: %v", err)
	}
	_, err := lay.View(make([]float32, 23), "encoder.wieght")
	if err == nil || !strings.Contains(err.Error(), `View "encoder.wieght": unknown path`) || !strings.Contains(err.Error(), "encoder.weight") {
		t.Errorf("unknown path error should name it and suggest near paths: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustView of an unknown path did not panic")
		}
	}()
	lay.MustView(make([]float32, 23), "nope")
}

func TestRangeAndPathAt(t *testing.T) {
	lay := encoderDecoder(t)
	for _, tt := range []struct {
		path   string
		lo, hi int
	}{{"", 0, 23}, {"weight", 0, 12}, {"decoder.weight", 0, 12}, {"encoder", 12, 18}, {"encoder.weight", 14, 18}, {"relu", 23, 23}} {
		lo, hi, err := lay.Range(tt.path)
		if err != nil || lo != tt.lo || hi != tt.hi {
			t.Errorf("Range(%q) = %d, %d, %v; want %d, %d", tt.path, lo, hi, err, tt.lo, tt.hi)
		}
	}
	if _, _, err := lay.Range("decoder"); err == nil {
		t.Error("Range of a path that only prefixes a tie should be an error")
	}
	for _, tt := range []struct {
		i    int
		path string
		idx  int
	}{{0, "weight", 0}, {11, "weight", 11}, {12, "encoder.bias", 0}, {17, "encoder.weight", 3}, {22, "head", 4}} {
		p, idx, err := lay.PathAt(tt.i)
		if err != nil || p != tt.path || idx != tt.idx {
			t.Errorf("PathAt(%d) = %q, %d, %v; want %q, %d", tt.i, p, idx, err, tt.path, tt.idx)
		}
	}
	for _, i := range []int{-1, 23} {
		if _, _, err := lay.PathAt(i); err == nil {
			t.Errorf("PathAt(%d) should be out of range", i)
		}
	}
}

func TestSub(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("x", 2)
	m := b.Group("model")
	m.Add("0.weight", 3, 2).Add("0.bias", 3).Add("2.weight", 1, 3)
	m.Group("1")
	m.Tie("head", "2.weight")
	b.Tie("outside", "model.0.bias")
	lay := mustBuild(t, b)
	sub, err := lay.Sub("model")
	if err != nil {
		t.Fatal(err)
	}
	want := mustBuild(t, layout.NewBuilder().Add("0.weight", 3, 2).Add("0.bias", 3).Add("2.weight", 1, 3).Tie("head", "2.weight"))
	// Groups are placed in order of first mention: "0" and "2" were made by
	// the dotted Adds, so the empty "1" comes last.
	wantGroups := []layout.Group{{Path: "0", Lo: 0, Hi: 9}, {Path: "2", Lo: 9, Hi: 12}, {Path: "1", Lo: 12, Hi: 12}}
	if err := sub.Compatible(want); err != nil {
		t.Errorf("Sub not compatible with the layout built directly: %v", err)
	}
	if diff := cmp.Diff(wantGroups, sub.Groups()); diff != "" {
		t.Errorf("Sub groups (-want +got):\n%s", diff)
	}
	if lf, ok := sub.Find("head"); !ok || lf.Path != "2.weight" {
		t.Errorf("tie inside the subtree lost: %v %v", lf, ok)
	}
	θ := make([]float32, lay.Len())
	for i := range θ {
		θ[i] = float32(i)
	}
	lo, hi, _ := lay.Range("model")
	a, _ := lay.View(θ, "model.2.weight")
	c, _ := sub.View(θ[lo:hi], "2.weight")
	if &a.Data[0] != &c.Data[0] {
		t.Error("Sub's view of θ[lo:hi] is not the same memory as the full layout's view")
	}
	leaf, err := lay.Sub("model.0.bias")
	if err != nil || leaf.Len() != 3 || leaf.NumLeaves() != 1 || leaf.Leaf(0).Path != "bias" {
		t.Errorf("Sub of a leaf: %v, %v", leaf, err)
	}
	if _, err := lay.Sub("nope"); err == nil {
		t.Error("Sub of an unknown path should fail")
	}
}

func TestEqualAndCompatible(t *testing.T) {
	a := encoderDecoder(t)
	b := encoderDecoder(t)
	if !a.Equal(b) || a.Compatible(b) != nil {
		t.Fatal("two builds of one description differ")
	}
	thawed := mustBuild(t, layout.NewBuilder().Add("weight", 4, 3).Add("encoder.bias", 2).Add("encoder.weight", 2, 2).Add("head", 5))
	if a.Equal(thawed) {
		t.Error("Equal ignores frozen flags and ties")
	}
	if err := a.Compatible(thawed); err != nil {
		t.Errorf("Compatible should ignore frozen flags, ties and empty groups: %v", err)
	}
	reshaped := mustBuild(t, layout.NewBuilder().Add("weight", 3, 4).Add("encoder.bias", 2).Add("encoder.weight", 2, 2).Add("head", 5))
	if err := a.Compatible(reshaped); err == nil || !strings.Contains(err.Error(), "shape [4 3], other has [3 4]") {
		t.Errorf("Compatible with a reshaped leaf: %v", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	lay := encoderDecoder(t)
	js, err := json.Marshal(lay)
	if err != nil {
		t.Fatal(err)
	}
	var back layout.Layout
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(lay) {
		t.Errorf("JSON round trip differs:\n%s\n%v", js, &back)
	}
	bad := []struct{ js, want string }{ // want: a fragment of the error, if checked
		{`{"len":3,"leaves":[{"path":"a","offset":1,"shape":[3]}]}`, ""},                                                                                                                   // gap
		{`{"len":4,"leaves":[{"path":"a","offset":0,"shape":[3]}]}`, `"len" is 4, want 3 (the floats the leaves hold)`},                                                                    // wrong len
		{`{"len":2,"leaves":[{"path":"g.a","offset":0,"shape":[1]},{"path":"b","offset":1,"shape":[1]}]}`, ""},                                                                             // missing group
		{`{"len":3,"leaves":[{"path":"g.a","offset":0,"shape":[1]},{"path":"b","offset":1,"shape":[1]},{"path":"g.c","offset":2,"shape":[1]}],"groups":[{"path":"g","lo":0,"hi":3}]}`, ""}, // not contiguous
		{`{"len":2,"leaves":[{"path":"a","offset":0,"shape":[2]}],"groups":[{"path":"g","lo":1,"hi":1}]}`, "which splits a leaf, want a range that starts and ends on leaf boundaries"},    // splits a leaf
		{`{"len":1,"leaves":[{"path":"a","offset":0,"shape":[0]}]}`, ""},                                                                                                                   // zero dim
		{`[1,2]`, ""},
	}
	for _, tt := range bad {
		_, err := layout.ParseJSON([]byte(tt.js))
		if err == nil {
			t.Errorf("ParseJSON(%s) accepted an invalid layout", tt.js)
		} else if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseJSON(%s): error %q does not mention %q", tt.js, err, tt.want)
		}
	}
}

// TestRandomLayouts checks the invariants of every drawn layout: leaves tile
// the buffer, each group's range holds exactly its descendants, PathAt
// inverts the offsets, and the JSON and Sub views agree with the whole.
func TestRandomLayouts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := proptest.LayoutSpecs().Draw(t, "layout")
		lay := spec.Layout
		next := 0
		for _, lf := range lay.Leaves() {
			if lf.Offset != next {
				t.Fatalf("leaf %s at %d, want %d", lf.Path, lf.Offset, next)
			}
			for k := 0; k < lf.Size(); k++ {
				p, idx, err := lay.PathAt(lf.Offset + k)
				if err != nil || p != lf.Path || idx != k {
					t.Fatalf("PathAt(%d) = %q %d %v, want %q %d", lf.Offset+k, p, idx, err, lf.Path, k)
				}
			}
			next = lf.End()
		}
		if next != lay.Len() {
			t.Fatalf("leaves end at %d, Len is %d", next, lay.Len())
		}
		for _, g := range lay.Groups() {
			lo, hi, err := lay.Range(g.Path)
			if err != nil || lo != g.Lo || hi != g.Hi {
				t.Fatalf("Range(%q) = %d %d %v, group says %d %d", g.Path, lo, hi, err, g.Lo, g.Hi)
			}
			for _, lf := range lay.Leaves() {
				inside := lf.Offset >= lo && lf.End() <= hi
				if below := strings.HasPrefix(lf.Path, g.Path+"."); inside != below {
					t.Fatalf("group %s [%d,%d): leaf %s inside=%v descendant=%v", g.Path, lo, hi, lf.Path, inside, below)
				}
			}
			sub, err := lay.Sub(g.Path)
			if err != nil {
				t.Fatalf("Sub(%q): %v", g.Path, err)
			}
			if sub.Len() != hi-lo {
				t.Fatalf("Sub(%q).Len = %d, want %d", g.Path, sub.Len(), hi-lo)
			}
		}
		js, _ := json.Marshal(lay)
		back, err := layout.ParseJSON(js)
		if err != nil || !back.Equal(lay) {
			t.Fatalf("JSON round trip: %v\n%s", err, js)
		}
		θ := proptest.AnyFloats(lay.Len()).Draw(t, "θ")
		proptest.CheckSaveLoad(t, lay, θ)
	})
}
