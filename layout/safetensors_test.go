package layout

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flatkit/flatkit/internal/wanterr"
)

// ---------------------------------------------------------------- helpers

// stBuild builds a layout from a description function.
func stBuild(t testing.TB, describe func(b *Builder)) *Layout {
	t.Helper()
	b := NewBuilder()
	describe(b)
	lay, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return lay
}

// stValues returns n floats full of awkward bit patterns: NaN payloads
// (quiet and signalling), ±0, ±Inf, subnormals and ordinary numbers.
func stValues(n int) []float32 {
	pats := []uint32{0x7fc00001, 0xffa00123, 0x80000000, 0x00000000, 0x7f800000, 0xff800000, 0x00000001, 0x807fffff, 0x3f800000}
	θ := make([]float32, n)
	for i := range θ {
		if i < len(pats) {
			θ[i] = math.Float32frombits(pats[i])
		} else {
			θ[i] = float32(i)*0.25 - 3
		}
	}
	return θ
}

// stBits is θ as raw bits, so that comparisons are bitwise (NaN == NaN).
func stBits(θ []float32) []uint32 {
	b := make([]uint32, len(θ))
	for i, v := range θ {
		b[i] = math.Float32bits(v)
	}
	return b
}

// stFile assembles a safetensors file from a header and a data section.
func stFile(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

// stPad pads a header with spaces to a multiple of 8, as the reference does.
func stPad(h string) string {
	for len(h)%8 != 0 {
		h += " "
	}
	return h
}

// stF32 is the little-endian bytes of vs.
func stF32(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// onlyReader hides Len, Seek and friends so that the data size is unknown.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// stLayoutDiff describes how two layouts differ, or "" if they are Equal.
func stLayoutDiff(got, want *Layout) string {
	if got.Equal(want) {
		return ""
	}
	return fmt.Sprintf("got  %v\ngroups %v\nwant %v\ngroups %v", got, got.Groups(), want, want.Groups())
}

// stLayouts are hand-built layouts covering the features Save must carry.
func stLayouts(t testing.TB) map[string]*Layout {
	return map[string]*Layout{
		"empty": stBuild(t, func(b *Builder) {}),
		"scalar": stBuild(t, func(b *Builder) {
			b.Add("s")
		}),
		"flat": stBuild(t, func(b *Builder) {
			b.Add("weight", 2, 3).Add("bias", 3).Add("t")
		}),
		"nested": stBuild(t, func(b *Builder) {
			enc := b.Group("encoder")
			enc.Add("layer.w", 2, 2).Add("layer.b", 2)
			enc.Group("relu") // empty group between leaves
			enc.Add("norm")   // scalar
			b.Group("decoder").Add("w", 2, 2).Add("b", 1, 1, 1)
			b.Tie("decoder.tied", "encoder.layer.w")
			b.Tie("head", "decoder.tied") // a tie of a tie
			b.Freeze("encoder.layer").Freeze("decoder.b")
			b.Add("gain")
		}),
		"chain": stBuild(t, func(b *Builder) {
			for i := range 12 {
				if i%3 == 1 {
					b.Group(fmt.Sprint(i)) // activation: no parameters
					continue
				}
				b.Add(fmt.Sprintf("%d.weight", i), 2, 1)
				b.Add(fmt.Sprintf("%d.bias", i), 2)
			}
		}),
		"only empty groups": stBuild(t, func(b *Builder) {
			b.Group("a")
			b.Group("b.c")
		}),
		"ties without groups": stBuild(t, func(b *Builder) {
			b.Add("emb", 3, 2).Add("x", 1)
			b.Tie("out", "emb").Tie("out2", "emb").Tie("y", "x")
		}),
		"frozen without groups": stBuild(t, func(b *Builder) {
			b.Add("a", 1).Add("b", 2).Freeze("b")
		}),
		"odd names": stBuild(t, func(b *Builder) {
			b.Add(`q"uote`, 1).Add("ünï<&>", 2).Add("sp ace.x", 1)
		}),
	}
}

// ---------------------------------------------------------------- Save, Load

func TestSaveLoadRoundTrip(t *testing.T) {
	for name, lay := range stLayouts(t) {
		t.Run(name, func(t *testing.T) {
			θ := stValues(lay.Len())
			var buf bytes.Buffer
			if err := Save(&buf, lay, θ); err != nil {
				t.Fatalf("Save: %v", err)
			}
			file := buf.Bytes()
			if n := binary.LittleEndian.Uint64(file); n%8 != 0 {
				t.Errorf("header length %d is not a multiple of 8", n)
			}
			for _, r := range []io.Reader{bytes.NewReader(file), onlyReader{bytes.NewReader(file)}} {
				got, glay, err := Load(r)
				if err != nil {
					t.Fatalf("Load(%T): %v", r, err)
				}
				if d := stLayoutDiff(glay, lay); d != "" {
					t.Errorf("Load(%T) layout differs:\n%s", r, d)
				}
				if d := cmp.Diff(stBits(θ), stBits(got)); d != "" {
					t.Errorf("Load(%T) values differ (-want +got):\n%s", r, d)
				}
			}
		})
	}
}

// TestSaveLoadByteOrder runs the big-endian code paths (convert on write,
// swap on read) on this machine: they must give the same bytes and values.
func TestSaveLoadByteOrder(t *testing.T) {
	lay := stLayouts(t)["nested"]
	θ := stValues(lay.Len())
	var native, portable bytes.Buffer
	if err := Save(&native, lay, θ); err != nil {
		t.Fatal(err)
	}
	defer func(le bool) { stNativeLE = le }(stNativeLE)
	stNativeLE = false
	if err := Save(&portable, lay, θ); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(native.Bytes(), portable.Bytes()) {
		t.Errorf("Save differs between the native and the portable path")
	}
	for _, r := range []io.Reader{bytes.NewReader(portable.Bytes()), onlyReader{bytes.NewReader(portable.Bytes())}} {
		got, _, err := Load(r)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(stBits(θ), stBits(got)); d != "" {
			t.Errorf("portable Load (-want +got):\n%s", d)
		}
		into := make([]float32, lay.Len())
		if _, err := LoadInto(bytes.NewReader(portable.Bytes()), lay, into); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(stBits(θ), stBits(into)); d != "" {
			t.Errorf("portable LoadInto (-want +got):\n%s", d)
		}
	}
}

func TestSaveHeaderFormat(t *testing.T) {
	lay := stLayouts(t)["nested"]
	var buf bytes.Buffer
	if err := Save(&buf, lay, stValues(lay.Len())); err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(buf.Bytes())
	raw := buf.Bytes()[8 : 8+n]
	if !bytes.HasPrefix(raw, []byte("{")) || strings.TrimRight(string(raw), " ") != strings.TrimSpace(string(raw)) {
		t.Errorf("header %q: want a JSON object padded with trailing spaces", raw)
	}
	var hdr map[string]any
	if err := json.Unmarshal(raw, &hdr); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"__metadata__": map[string]any{
			"flatkit.frozen": `["encoder.layer.w","encoder.layer.b","decoder.b"]`,
			"flatkit.groups": `[{"path":"encoder","lo":0,"hi":7},{"path":"encoder.layer","lo":0,"hi":6},{"path":"encoder.relu","lo":6,"hi":6},{"path":"decoder","lo":7,"hi":12}]`,
			"flatkit.ties":   `{"decoder.tied":"encoder.layer.w","head":"encoder.layer.w"}`,
		},
		"encoder.layer.w": map[string]any{"dtype": "F32", "shape": []any{2.0, 2.0}, "data_offsets": []any{0.0, 16.0}},
		"encoder.layer.b": map[string]any{"dtype": "F32", "shape": []any{2.0}, "data_offsets": []any{16.0, 24.0}},
		"encoder.norm":    map[string]any{"dtype": "F32", "shape": []any{}, "data_offsets": []any{24.0, 28.0}},
		"decoder.w":       map[string]any{"dtype": "F32", "shape": []any{2.0, 2.0}, "data_offsets": []any{28.0, 44.0}},
		"decoder.b":       map[string]any{"dtype": "F32", "shape": []any{1.0, 1.0, 1.0}, "data_offsets": []any{44.0, 48.0}},
		"gain":            map[string]any{"dtype": "F32", "shape": []any{}, "data_offsets": []any{48.0, 52.0}},
	}
	if d := cmp.Diff(want, hdr); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	if got := buf.Len() - 8 - int(n); got != 4*lay.Len() {
		t.Errorf("data section is %d bytes, want %d", got, 4*lay.Len())
	}
	// The metadata-free layout writes no metadata at all.
	buf.Reset()
	if err := Save(&buf, stLayouts(t)["flat"], make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("__metadata__")) {
		t.Errorf("layout without groups, ties or frozen leaves wrote metadata: %q", buf.Bytes())
	}
}

func TestSaveErrors(t *testing.T) {
	lay := stLayouts(t)["flat"]
	tests := []struct {
		name string
		lay  *Layout
		θ    []float32
		want []string
	}{
		{"short θ", lay, make([]float32, 9), []string{"layout: Save: ", "9", "10"}},
		{"long θ", lay, make([]float32, 11), []string{"layout: Save: ", "11", "10"}},
		{"nil layout", nil, nil, []string{"layout: Save: ", "nil layout"}},
		{"reserved name", stBuild(t, func(b *Builder) { b.Add("__metadata__", 1) }), make([]float32, 1), []string{"layout: Save: ", `"__metadata__"`, "reserved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Save(&buf, tt.lay, tt.θ)
			stWantErr(t, err, tt.want)
		})
	}
	// A failing writer is reported.
	err := Save(stFailWriter{}, lay, make([]float32, 10))
	stWantErr(t, err, []string{"layout: Save: ", "disk full"})
}

type stFailWriter struct{}

func (stFailWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

// stWantErr fails t unless err is an error whose text contains every
// string of want.
func stWantErr(t *testing.T, err error, want []string) {
	t.Helper()
	wanterr.Mentions(t, err, want...)
}

// TestLoadReferenceFile reads a file as the reference writer makes it:
// tensors sorted by name ("10.weight" before "2.weight"), data in that order,
// header padded with spaces, foreign metadata.
func TestLoadReferenceFile(t *testing.T) {
	h := stPad(`{"__metadata__":{"format":"pt"},` +
		`"10.bias":{"dtype":"F32","shape":[],"data_offsets":[0,4]},` +
		`"10.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[4,12]},` +
		`"2.bias":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},` +
		`"2.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[20,44]}}`)
	file := stFile(h, stF32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
	if (8+len(h))%8 != 0 {
		t.Fatal("bad test: header not padded")
	}
	θ, lay, err := Load(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{
		"10.bias":   {1},
		"10.weight": {2, 3},
		"2.bias":    {4, 5},
		"2.weight":  {6, 7, 8, 9, 10, 11},
	}
	for p, w := range want {
		v, err := lay.View(θ, p)
		if err != nil {
			t.Fatalf("View %q: %v", p, err)
		}
		if d := cmp.Diff(w, v.Data); d != "" {
			t.Errorf("%q (-want +got):\n%s", p, d)
		}
	}
	if lo, hi, err := lay.Range("2"); err != nil || lo != 3 || hi != 11 {
		t.Errorf(`Range("2") = %d, %d, %v; want 3, 11`, lo, hi, err)
	}
	if lf, _ := lay.Find("10.weight"); !slices.Equal(lf.Shape, []int{1, 2}) {
		t.Errorf("10.weight shape %v, want [1 2]", lf.Shape)
	}
	if lf, _ := lay.Find("10.bias"); len(lf.Shape) != 0 || lf.Size() != 1 {
		t.Errorf("10.bias is %v, want a scalar", lf)
	}
}

// TestLoadPermutes reads a metadata-free file whose data order is not the
// tree order the names imply, so the values must be permuted.
func TestLoadPermutes(t *testing.T) {
	h := `{"a.y":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},` +
		`"a.x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},` +
		`"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`
	file := stFile(h, stF32(1, 2, 3, 4, 5))
	for _, r := range []io.Reader{bytes.NewReader(file), onlyReader{bytes.NewReader(file)}} {
		θ, lay, err := Load(r)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, lf := range lay.Leaves() {
			paths = append(paths, lf.Path)
		}
		if d := cmp.Diff([]string{"a.x", "a.y", "b"}, paths); d != "" {
			t.Errorf("leaf order (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]float32{1, 4, 5, 2, 3}, θ); d != "" {
			t.Errorf("θ (-want +got):\n%s", d)
		}
	}
}
