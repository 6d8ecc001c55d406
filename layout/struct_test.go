package layout_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/wanterr"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/proptest"
)

type block struct {
	W    []float32 `flat:"shape=2,2"`
	B    []float32
	Name string // a hyperparameter
}

type net struct {
	In     []float32
	Blocks []block
	Head   *block
	Spare  *block // nil: no leaves, and it must stay nil
	Tied   []float32
	Skip   []float32 `flat:"-"`
	Sizes  []int     `flat:"-"`
	Act    func(float32) float32
	Meta   map[string]any
	Any    any
	Frozen []float32 `flat:"frozen"`
	Empty  []block
	hidden []float32 // unexported: left alone
}

func newNet() *net {
	shared := []float32{7, 8}
	return &net{
		In:     []float32{1, 2, 3},
		Blocks: []block{{B: []float32{5}, Name: "first"}, {W: []float32{1, 2, 3, 4}, B: shared}},
		Head:   &block{W: []float32{9, 9, 9, 9}, B: []float32{9}},
		Tied:   shared,
		Skip:   []float32{42},
		Sizes:  []int{3, 4},
		Frozen: []float32{0.5},
		hidden: []float32{-1},
	}
}

// destructuredNet is a newNet destructured: its fields view θ, laid out by
// lay.
func destructuredNet(t *testing.T) (*net, []float32, *layout.Layout) {
	t.Helper()
	n := newNet()
	θ, lay, err := layout.Destructure(n)
	if err != nil {
		t.Fatal(err)
	}
	return n, θ, lay
}

func TestDestructure(t *testing.T) {
	n := newNet()
	skip, hidden := n.Skip, n.hidden
	θ, lay, err := layout.Destructure(n)
	if err != nil {
		t.Fatal(err)
	}
	wantθ := []float32{1, 2, 3, 0, 0, 0, 0, 5, 1, 2, 3, 4, 7, 8, 9, 9, 9, 9, 9, 0.5}
	if diff := cmp.Diff(wantθ, θ); diff != "" {
		t.Errorf("θ (-want +got):\n%s", diff)
	}
	var paths []string
	for _, lf := range lay.Leaves() {
		paths = append(paths, lf.String())
	}
	want := []string{
		"In [3] θ[0:3]",
		"Blocks.0.W [2×2] θ[3:7]",
		"Blocks.0.B [1] θ[7:8]",
		"Blocks.1.W [2×2] θ[8:12]",
		"Blocks.1.B [2] θ[12:14] =Tied",
		"Head.W [2×2] θ[14:18]",
		"Head.B [1] θ[18:19]",
		"Frozen [1] θ[19:20] frozen",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("leaves (-want +got):\n%s", diff)
	}
	if lo, hi, err := lay.Range("Empty"); err != nil || lo != 20 || hi != 20 {
		t.Errorf("empty slice of blocks: Range = %d %d %v, want an empty group at 20", lo, hi, err)
	}
	if &n.Tied[0] != &n.Blocks[1].B[0] || &n.Tied[0] != &θ[12] {
		t.Error("tied fields do not share θ[12:14]")
	}
	if &n.Skip[0] != &skip[0] || &n.hidden[0] != &hidden[0] || n.Spare != nil || n.Blocks[0].Name != "first" {
		t.Error("hyperparameters or skipped fields were touched")
	}
}

func TestRestructureRepointsWithoutCopy(t *testing.T) {
	n, θ, lay := destructuredNet(t)
	θ2 := make([]float32, len(θ))
	if err := layout.Restructure(θ2, lay, n); err != nil {
		t.Fatal(err)
	}
	n.Head.B[0] = 3
	n.Tied[1] = 4
	if θ2[18] != 3 || θ2[13] != 4 || n.Blocks[1].B[1] != 4 {
		t.Errorf("writes through the struct did not reach θ2: %v", θ2)
	}
	if θ[18] != 9 {
		t.Error("Restructure wrote into the old buffer")
	}
	// RestructureInPlace copies into the arrays the fields now view (θ2's).
	θ3 := make([]float32, len(θ))
	for i := range θ3 {
		θ3[i] = float32(i)
	}
	if err := layout.RestructureInPlace(θ3, lay, n); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(θ3, θ2); diff != "" {
		t.Errorf("after RestructureInPlace θ2 should equal θ3 (-θ3 +θ2):\n%s", diff)
	}
	n.In[0] = 100
	if θ3[0] == 100 {
		t.Error("RestructureInPlace made the fields view θ3")
	}
}

func TestRestructureErrors(t *testing.T) {
	n, θ, lay := destructuredNet(t)
	tests := []struct {
		name   string
		θ      []float32
		mutate func(*net)
		want   string
	}{
		{"short buffer", θ[:5], nil, "buffer has 5 floats, layout wants 20"},
		{"fewer blocks", θ, func(n *net) { n.Blocks = n.Blocks[:1] }, `"Blocks.1.W": no field of *layout_test.net holds the leaf`},
		{"more blocks", θ, func(n *net) { n.Blocks = append(n.Blocks, block{}) }, "Blocks.2.W"},
		{"pointer now set", θ, func(n *net) { n.Spare = &block{} }, "Spare.W"},
		{"pointer now nil", θ, func(n *net) { n.Head = nil }, `"Head.W": no field of *layout_test.net holds the leaf`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newNet()
			if tt.mutate != nil {
				tt.mutate(m)
			}
			before := fmt.Sprint(m.In, m.Blocks, m.Tied)
			err := layout.Restructure(tt.θ, lay, m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Restructure error = %v, want one containing %q", err, tt.want)
			}
			if after := fmt.Sprint(m.In, m.Blocks, m.Tied); after != before {
				t.Errorf("a failed Restructure changed the struct: %s → %s", before, after)
			}
		})
	}
	// RestructureInPlace needs fields of the right length, and writes nothing otherwise.
	m := newNet()
	m.Blocks[0].W = make([]float32, 4)
	m.Head.W = []float32{1}
	in := m.In
	err := layout.RestructureInPlace(θ, lay, m)
	if err == nil || !strings.Contains(err.Error(), `RestructureInPlace "Head.W": wrong shape: the field has 1 floats, want 4`) {
		t.Errorf("RestructureInPlace with a short field: %v", err)
	}
	if in[0] != 1 {
		t.Error("a failed RestructureInPlace wrote into other fields")
	}
	for _, p := range []any{nil, *n, &θ, (*net)(nil)} {
		if err := layout.Restructure(θ, lay, p); err == nil {
			t.Errorf("Restructure(%T) should want a non-nil pointer to a struct", p)
		}
	}
	// A struct whose tag disagrees with the layout's shape.
	type other struct {
		In []float32 `flat:"shape=1,3"`
	}
	oθ, olay, _ := layout.Destructure(&other{In: []float32{1, 2, 3}})
	type reshaped struct {
		In []float32 `flat:"shape=3,1"`
	}
	if err := layout.Restructure(oθ, olay, &reshaped{}); err == nil || !strings.Contains(err.Error(), "the field's tag says [3 1], want [1 3]") {
		t.Errorf("shape tag mismatch: %v", err)
	}
}

func TestUnsupportedFields(t *testing.T) {
	type arr struct{ A [3]float32 }
	type f64 struct{ A []float64 }
	type ints struct{ A []int }
	type nested struct{ A [][]float32 }
	type named struct{ A []myFloat }
	type badTag struct {
		A []float32 `flat:"shape=2,x"`
	}
	type tagOnHyper struct {
		N int `flat:"frozen"`
	}
	type emptyField struct{ A []float32 }
	type wrongLen struct {
		A []float32 `flat:"shape=2,2"`
	}
	type overlap struct{ A, B []float32 }
	buf := []float32{1, 2, 3}
	type cyc struct {
		W    []float32
		Next *cyc
	}
	c := &cyc{W: []float32{1}}
	c.Next = c
	tests := []struct {
		p    any
		want []string
	}{
		{&arr{}, []string{"A", "[3]float32", "use []float32", `flat:"shape=3"`, `flat:"-"`}},
		{&f64{}, []string{"A", "[]float64", `flat:"-"`}},
		{&ints{}, []string{"A", "[]int"}},
		{&nested{}, []string{"A", "[][]float32"}},
		{&named{}, []string{"A", "use []float32"}},
		{&badTag{}, []string{"A", `"x" is not a positive integer`}},
		{&tagOnHyper{}, []string{"N", "holds no parameters"}},
		{&emptyField{}, []string{"field A is an empty []float32"}},
		{&wrongLen{A: []float32{1}}, []string{"field A has 1 floats, want 4", "shape [2 2]"}},
		{&overlap{A: buf[:2], B: buf[1:]}, []string{"fields A and B overlap"}},
		{c, []string{"Next", "cycle"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.p), func(t *testing.T) {
			_, _, err := layout.Destructure(tt.p)
			if err == nil {
				t.Fatal("Destructure accepted it")
			}
			wanterr.Mentions(t, err, tt.want...)
		})
	}
}

type myFloat float32

func TestRoundTripRandomStructs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		proptest.CheckRoundTrip(t, proptest.Structs().Draw(t, "struct"))
	})
}

// hundred is a struct with 100 leaves in 10 blocks.
type hundred struct {
	Blocks [10]struct {
		A, B, C, D, E, F, G, H, I, J []float32
	}
}

func newHundred() *hundred {
	h := &hundred{}
	for i := range h.Blocks {
		b := &h.Blocks[i]
		for j, f := range []*[]float32{&b.A, &b.B, &b.C, &b.D, &b.E, &b.F, &b.G, &b.H, &b.I, &b.J} {
			*f = make([]float32, 1+j)
		}
	}
	return h
}

type dense struct {
	Weight []float32 `flat:"shape=256,256"`
	Bias   []float32 `flat:"shape=256"`
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	h := newHundred()
	θ, lay, err := layout.Destructure(h)
	if err != nil {
		t.Fatal(err)
	}
	if lay.NumLeaves() != 100 {
		t.Fatalf("%d leaves, want 100", lay.NumLeaves())
	}
	θ2 := make([]float32, len(θ))
	for name, f := range map[string]func(){
		"Restructure":        func() { _ = layout.Restructure(θ2, lay, h) },
		"RestructureInPlace": func() { _ = layout.RestructureInPlace(θ, lay, h) },
		"View":               func() { _, _ = lay.View(θ, "Blocks.7.J") },
		"View group":         func() { _, _ = lay.View(θ, "Blocks.7") },
		"View whole":         func() { _, _ = lay.View(θ, "") },
		"Range":              func() { _, _, _ = lay.Range("Blocks.3") },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, a)
		}
	}
}

func BenchmarkRestructure(b *testing.B) {
	b.Run("leaves=100", func(b *testing.B) { benchRestructure(b, newHundred()) })
	b.Run("dense=256x256", func(b *testing.B) { benchRestructure(b, &dense{}) })
}

// benchRestructure destructures v (a pointer to a struct) and times
// Restructure alternating between two buffers of its layout.
func benchRestructure(b *testing.B, v any) {
	θ, lay, _ := layout.Destructure(v)
	θ2 := make([]float32, len(θ))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			_ = layout.Restructure(θ2, lay, v)
		} else {
			_ = layout.Restructure(θ, lay, v)
		}
	}
}

func BenchmarkRestructureInPlace(b *testing.B) {
	d := &dense{}
	θ, lay, _ := layout.Destructure(d)
	θ2 := make([]float32, len(θ))
	b.SetBytes(int64(4 * len(θ)))
	b.ReportAllocs()
	for b.Loop() {
		_ = layout.RestructureInPlace(θ2, lay, d)
	}
}

func BenchmarkDestructure(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = layout.Destructure(newHundred())
	}
}

func BenchmarkView(b *testing.B) {
	_, lay, _ := layout.Destructure(newHundred())
	θ := make([]float32, lay.Len())
	b.ReportAllocs()
	for b.Loop() {
		_, _ = lay.View(θ, "Blocks.7.J")
	}
}

// A struct whose would-be parameters are scalars gave an empty θ without a
// word; now Destructure and Of name the fields and the fix.
func TestDestructureScalarsOnly(t *testing.T) {
	type sir struct {
		Beta, Gamma float64
		Name        string
	}
	s := &sir{Beta: 0.5, Gamma: 0.1}
	_, _, err := layout.Destructure(s)
	for _, want := range []string{"Destructure", "has no []float32 fields", "scalar fields Beta, Gamma", "[]float32 with `flat:\"shape=1\"`"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Destructure: error %v; want it to say %q", err, want)
		}
	}
	if _, err := layout.Of(s); err == nil || !strings.Contains(err.Error(), "scalar fields Beta, Gamma") {
		t.Errorf("Of: error %v; want the scalar fields named", err)
	}
	// Beside parameters, scalars are hyperparameters, as before.
	type mixed struct {
		Rate float64
		W    []float32 `flat:"shape=2"`
	}
	θ, _, err := layout.Destructure(&mixed{Rate: 0.1})
	if err != nil || len(θ) != 2 {
		t.Errorf("θ = %v, error %v; want 2 parameters and no error", θ, err)
	}
	// The fix: one-element []float32 fields.
	type fixed struct {
		Beta  []float32 `flat:"shape=1"`
		Gamma []float32 `flat:"shape=1"`
	}
	θ, _, err = layout.Destructure(&fixed{Beta: []float32{0.5}, Gamma: []float32{0.1}})
	if err != nil || len(θ) != 2 || θ[0] != 0.5 || θ[1] != 0.1 {
		t.Errorf("θ = %v, error %v; want [0.5 0.1]", θ, err)
	}
}
