package layout

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
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

func stWantErr(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
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

// ---------------------------------------------------------------- LoadInto

// stTorchFile is a PyTorch-style state dict of a small net under "model.",
// with an int64 num_batches_tracked and a tensor the layout does not have.
func stTorchFile() []byte {
	h := stPad(`{"__metadata__":{"format":"pt"},` +
		`"model.0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"model.0.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},` +
		`"model.1.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[24,32]},` +
		`"model.1.running_mean":{"dtype":"F32","shape":[2],"data_offsets":[32,40]},` +
		`"model.extra":{"dtype":"F32","shape":[3],"data_offsets":[40,52]}}`)
	var data []byte
	data = append(data, stF32(10, 20)...)
	data = append(data, stF32(1, 2, 3, 4)...)
	data = binary.LittleEndian.AppendUint64(data, 7)
	data = append(data, stF32(-1, -2)...)
	data = append(data, stF32(9, 9, 9)...)
	return stFile(h, data)
}

func stTorchLayout(t testing.TB) *Layout {
	return stBuild(t, func(b *Builder) {
		b.Add("0.weight", 2, 2).Add("0.bias", 2)
		b.Add("1.running_mean", 2)
		b.Add("2.weight", 1, 2)
	})
}

func stStripModel(name string) string { return strings.TrimPrefix(name, "model.") }

func TestLoadIntoRename(t *testing.T) {
	lay := stTorchLayout(t)
	θ := []float32{0, 0, 0, 0, 0, 0, 0, 0, 42, 43}
	rep, err := LoadInto(bytes.NewReader(stTorchFile()), lay, θ, Rename(stStripModel))
	if err != nil {
		t.Fatal(err)
	}
	want := LoadReport{
		Loaded: []string{"0.bias", "0.weight", "1.running_mean"},
		Skipped: []Skipped{
			{"model.1.num_batches_tracked", "not in layout"},
			{"model.extra", "not in layout"},
		},
		Missed: []string{"2.weight"},
	}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]float32{1, 2, 3, 4, 10, 20, -1, -2, 42, 43}, θ); d != "" {
		t.Errorf("θ (-want +got):\n%s", d)
	}

	// Renaming away: the reason says so; Strict then only complains about
	// what is really missing.
	drop := func(name string) string {
		if strings.HasSuffix(name, "num_batches_tracked") || name == "model.extra" {
			return ""
		}
		return stStripModel(name)
	}
	rep, err = LoadInto(bytes.NewReader(stTorchFile()), lay, θ, Rename(drop))
	if err != nil {
		t.Fatal(err)
	}
	wantSkipped := []Skipped{{"model.1.num_batches_tracked", "renamed away"}, {"model.extra", "renamed away"}}
	if d := cmp.Diff(wantSkipped, rep.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	θ0 := slices.Clone(θ)
	_, err = LoadInto(bytes.NewReader(stTorchFile()), lay, θ, Rename(drop), Strict())
	stWantErr(t, err, []string{"layout: LoadInto: ", "strict", "2.weight"})
	if !slices.Equal(θ0, θ) {
		t.Errorf("θ changed on error")
	}
	// Without the rename, nothing matches: not strict, but an error all the
	// same (it used to return nil with an empty Loaded), naming the file's
	// tensors and the layout's leaves, and θ is unchanged.
	rep, err = LoadInto(bytes.NewReader(stTorchFile()), lay, θ)
	stWantErr(t, err, []string{"layout: LoadInto: ", "nothing loaded", "5 tensors", "model.0.bias", "0.bias, 0.weight, 1.running_mean, 2.weight"})
	if !cmp.Equal(rep, LoadReport{}) {
		t.Errorf("report on error: %+v", rep)
	}
	if !slices.Equal(θ0, θ) {
		t.Errorf("θ changed when nothing matched")
	}
}

func TestLoadIntoStrict(t *testing.T) {
	lay := stBuild(t, func(b *Builder) { b.Add("0.weight", 2, 2).Add("0.bias", 2) })
	sub := stBuild(t, func(b *Builder) { b.Add("0.weight", 2, 2).Add("0.bias", 2).Add("1.running_mean", 2) })
	tests := []struct {
		name string
		lay  *Layout
		opts []LoadOption
		want []string // error substrings; nil for success
	}{
		{"file has more", lay, []LoadOption{Rename(stStripModel), Strict()}, []string{"strict", "model.extra", "model.1.num_batches_tracked", "model.1.running_mean"}},
		{"layout has more", stTorchLayout(t), []LoadOption{Rename(func(n string) string {
			if strings.Contains(n, "num_") || strings.Contains(n, "extra") {
				return ""
			}
			return stStripModel(n)
		}), Strict()}, []string{"strict", "1 layout leaves", "2.weight"}},
		{"exact", sub, []LoadOption{Rename(func(n string) string {
			if strings.Contains(n, "num_") || strings.Contains(n, "extra") {
				return ""
			}
			return stStripModel(n)
		}), Strict()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			θ := stValues(tt.lay.Len())
			θ0 := slices.Clone(θ)
			rep, err := LoadInto(bytes.NewReader(stTorchFile()), tt.lay, θ, tt.opts...)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Missed) != 0 || len(rep.Loaded) != 3 {
					t.Errorf("report %+v", rep)
				}
				return
			}
			stWantErr(t, err, append([]string{"layout: LoadInto: "}, tt.want...))
			if !slices.Equal(stBits(θ0), stBits(θ)) {
				t.Errorf("θ changed on error")
			}
		})
	}
}

func TestLoadIntoAliasesAndConversions(t *testing.T) {
	lay := stBuild(t, func(b *Builder) {
		b.Add("emb", 2).Add("a", 3).Add("h", 3).Add("b", 1)
		b.Tie("out", "emb")
	})
	// F64 [0.5, -1], F16 [1, -2, 65504], BF16 [1.5, -inf, NaN], F32 [7] via the alias "out"?
	var data []byte
	for _, v := range []float64{0.5, -1, 1e-8} {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
	}
	for _, h := range []uint16{0x3c00, 0xc000, 0x7bff} { // 1, -2, 65504
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	for _, h := range []uint16{0x3fc0, 0xff80, 0x7fc1} { // 1.5, -Inf, NaN with payload
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	data = append(data, stF32(7, 8)...)
	h := `{"a":{"dtype":"F64","shape":[3],"data_offsets":[0,24]},` +
		`"h":{"dtype":"F16","shape":[3],"data_offsets":[24,30]},` +
		`"b16":{"dtype":"BF16","shape":[3],"data_offsets":[30,36]},` +
		`"out":{"dtype":"F32","shape":[2],"data_offsets":[36,44]}}`
	θ := make([]float32, lay.Len())
	rep, err := LoadInto(bytes.NewReader(stFile(h, data)), lay, θ)
	if err != nil {
		t.Fatal(err)
	}
	want := LoadReport{Loaded: []string{"a", "emb", "h"}, Skipped: []Skipped{{"b16", "not in layout"}}, Missed: []string{"b"}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	wantθ := []float32{7, 8, 0.5, -1, 1e-8, 1, -2, 65504, 0}
	if d := cmp.Diff(wantθ, θ); d != "" {
		t.Errorf("θ (-want +got):\n%s", d)
	}
	// BF16 into a leaf, bitwise.
	h = `{"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`
	if _, err := LoadInto(bytes.NewReader(stFile(h, []byte{0xc1, 0x7f})), lay, θ); err != nil {
		t.Fatal(err)
	}
	if got := math.Float32bits(θ[8]); got != 0x7fc10000 {
		t.Errorf("BF16 NaN loaded as %#x, want 0x7fc10000", got)
	}
}

func TestHalfConversion(t *testing.T) {
	tests := []struct {
		h    uint16
		want uint32
	}{
		{0x0000, 0x00000000},
		{0x8000, 0x80000000},
		{0x3c00, math.Float32bits(1)},
		{0xbc00, math.Float32bits(-1)},
		{0x0001, math.Float32bits(5.9604645e-08)}, // smallest subnormal, 2⁻²⁴
		{0x8001, math.Float32bits(-5.9604645e-08)},
		{0x03ff, math.Float32bits(6.097555e-05)}, // largest subnormal
		{0x0400, math.Float32bits(6.1035156e-05)},
		{0x7bff, math.Float32bits(65504)},
		{0x7c00, 0x7f800000},
		{0xfc00, 0xff800000},
		{0x7e01, 0x7fc02000},
		{0x3555, math.Float32bits(0.33325195)},
	}
	for _, tt := range tests {
		if got := math.Float32bits(stHalf(tt.h)); got != tt.want {
			t.Errorf("stHalf(%#04x) = %#08x, want %#08x", tt.h, got, tt.want)
		}
	}
}

func TestLoadIntoErrors(t *testing.T) {
	lay := stBuild(t, func(b *Builder) {
		b.Add("w", 2, 2).Add("b", 2)
		b.Tie("w2", "w")
	})
	tests := []struct {
		name string
		file []byte
		opts []LoadOption
		want []string
	}{
		{"shape mismatch", stFile(`{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, stF32(1, 2, 3, 4)), nil,
			[]string{`"w"`, "[2 2]", "[4]"}},
		{"scalar vs vector", stFile(`{"b":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, stF32(1)), nil,
			[]string{`"b"`, "[2]", "[]"}},
		{"zero-size matched", stFile(`{"b":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, nil), nil,
			[]string{`"b"`, "[2]", "[0]"}},
		{"int dtype matched", stFile(`{"b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), nil,
			[]string{`"b"`, "I32"}},
		{"filled twice via alias", stFile(`{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"w2":{"dtype":"F32","shape":[2,2],"data_offsets":[16,32]}}`, make([]byte, 32)), nil,
			[]string{`"w"`, `"w2"`, "twice"}},
		{"filled twice via rename", stFile(`{"m.b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, make([]byte, 16)),
			[]LoadOption{Rename(func(n string) string { return strings.TrimPrefix(n, "m.") })},
			[]string{`"b"`, `"m.b"`, "twice"}},
		{"data cut after a matched tensor", stFile(`{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}}`, stF32(1, 2, 3)), nil,
			[]string{"data section needs 24 bytes, file has 12"}},
		{"data cut in a skipped tensor", stFile(`{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{"dtype":"I8","shape":[100],"data_offsets":[8,108]}}`, make([]byte, 50)), nil,
			[]string{"data section needs 108 bytes, file has 50"}},
		{"data cut in a converted tensor", stFile(`{"b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, make([]byte, 12)), nil,
			[]string{"data section needs 16 bytes, file has 12"}},
		{"trailing bytes", stFile(`{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, stF32(1, 2, 3)), nil,
			[]string{"trailing", "8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mk := range []func([]byte) io.Reader{
				func(b []byte) io.Reader { return bytes.NewReader(b) },
				func(b []byte) io.Reader { return onlyReader{bytes.NewReader(b)} },
			} {
				θ := []float32{1, 2, 3, 4, 5, 6}
				rep, err := LoadInto(mk(tt.file), lay, θ, tt.opts...)
				stWantErr(t, err, append([]string{"layout: LoadInto: "}, tt.want...))
				if !slices.Equal(θ, []float32{1, 2, 3, 4, 5, 6}) {
					t.Errorf("θ changed on error: %v", θ)
				}
				if !cmp.Equal(rep, LoadReport{}) {
					t.Errorf("report on error: %+v", rep)
				}
			}
		})
	}
	// Arguments.
	_, err := LoadInto(bytes.NewReader(nil), lay, make([]float32, 5))
	stWantErr(t, err, []string{"layout: LoadInto: ", "5", "6"})
	_, err = LoadInto(bytes.NewReader(nil), nil, nil)
	stWantErr(t, err, []string{"layout: LoadInto: ", "nil layout"})
}

// ---------------------------------------------------------------- bad input

type stBadCase struct {
	name string
	file []byte
	want []string // substrings of the Load error; "" prefix checked separately
	into bool     // also an error for LoadInto (header-level problems)
}

func stBadCases() []stBadCase {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	ent := func(entry string) string { return `{"a":` + entry + `}` }
	hugeLen := binary.LittleEndian.AppendUint64(nil, 100_000_001)
	return []stBadCase{
		{"empty", nil, []string{"has 0 bytes", "at least 8"}, true},
		{"7 bytes", []byte{1, 2, 3, 4, 5, 6, 7}, []string{"has 7 bytes", "at least 8"}, true},
		{"header too long", append(hugeLen, `{}`...), []string{"100000001", "at most 100000000"}, true},
		{"header past EOF", append(binary.LittleEndian.AppendUint64(nil, 1_000_000), `{"a":1}`...), []string{"header needs 1000000 bytes", "has 7"}, true},
		{"not JSON", stFile(`{not json}`, nil), []string{"header"}, true},
		{"truncated JSON", stFile(`{"a":{"dtype":"F32"`, nil), []string{"header"}, true},
		{"array header", stFile(`[1,2]`, nil), []string{"header starts with [1,2]", "want a JSON object"}, true},
		{"string header", stFile(`"x"`, nil), []string{"want a JSON object"}, true},
		{"empty header", stFile(``, nil), []string{"want a JSON object"}, true},
		{"junk after header", stFile(`{} {}`, nil), []string{"after the object"}, true},
		{"invalid UTF-8", stFile("{\"a\xff\":{}}", nil), []string{"UTF-8"}, true},
		{"entry not object", stFile(ent(`5`), nil), []string{`"a"`, "entry is 5", "want an object"}, true},
		{"entry null", stFile(ent(`null`), nil), []string{`"a"`, "want an object"}, true},
		{"missing dtype", stFile(ent(`{"shape":[2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `missing "dtype"`}, true},
		{"missing shape", stFile(ent(`{"dtype":"F32","data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `missing "shape"`}, true},
		{"missing offsets", stFile(ent(`{"dtype":"F32","shape":[2]}`), stF32(1, 2)), []string{`"a"`, `missing "data_offsets"`}, true},
		{"null shape", stFile(ent(`{"dtype":"F32","shape":null,"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is null`}, true},
		{"dtype not string", stFile(ent(`{"dtype":5,"shape":[2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"dtype" is 5`}, true},
		{"shape not array", stFile(ent(`{"dtype":"F32","shape":"2","data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is "2"`}, true},
		{"fractional dim", stFile(ent(`{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is [1.5]`}, true},
		{"offsets strings", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}`), stF32(1, 2)), []string{`"a"`, `"data_offsets"`}, true},
		{"one offset", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[8]}`), stF32(1, 2)), []string{`"a"`, "1 values, want 2"}, true},
		{"negative dim", stFile(ent(`{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "is -2, want >= 0"}, true},
		{"dim overflows int64", stFile(ent(`{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape"`}, true},
		{"dims product overflows", stFile(ent(`{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "more elements"}, true},
		{"bytes overflow", stFile(ent(`{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "more bytes"}, true},
		{"negative offset", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}`), stF32(1, 2)), []string{`"a"`, "negative"}, true},
		{"begin after end", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[8,0]}`), stF32(1, 2)), []string{`"a"`, "[8, 0]", "end before"}, true},
		{"size disagrees with shape", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[0,4]}`), stF32(1)), []string{`"a"`, "hold 4 bytes", "needs 8"}, true},
		{"sub-byte size", stFile(ent(`{"dtype":"F4","shape":[3],"data_offsets":[0,2]}`), []byte{0, 0}), []string{`"a"`, "12 bits"}, true},
		{"unknown dtype", stFile(ent(`{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `unknown dtype "Q7"`}, true},
		{"hole", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, stF32(1, 2, 3)),
			[]string{`"b"`, "start at 8, want 4"}, true},
		{"hole at start", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, stF32(1, 2)), []string{`"a"`, "start at 4, want 0"}, true},
		{"overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, stF32(1, 2, 3)),
			[]string{`"b"`, `overlap tensor "a"`, "ends at 8"}, true},
		{"same range twice", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, stF32(1, 2)),
			[]string{"overlap"}, true},
		{"duplicate name", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, stF32(1, 2)),
			[]string{`duplicate name "a"`}, true},
		{"bad metadata", stFile(`{"__metadata__":{"k":5}}`, nil), []string{"__metadata__", "strings"}, true},
		{"metadata not object", stFile(`{"__metadata__":[]}`, nil), []string{"__metadata__"}, true},
		{"data short", stFile(ok, stF32(1)), []string{"data section needs 8 bytes, file has 4"}, true},
		{"data missing", stFile(ok, nil), []string{"data section needs 8 bytes, file has 0"}, true},
		{"huge declared size", stFile(`{"a":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}`, stF32(1, 2)),
			[]string{"data section needs 4398046511104 bytes, file has 8"}, true},
		{"trailing bytes", stFile(ok, stF32(1, 2, 3)), []string{"trailing", "8"}, true},

		// Problems only for Load: LoadInto skips tensors it does not use.
		{"dtype I64", stFile(`{"n":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, make([]byte, 8)), []string{`"n"`, "dtype I64", "want F32"}, false},
		{"dtype F16", stFile(`{"n":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), []string{`"n"`, "dtype F16"}, false},
		{"zero dim", stFile(`{"z":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]}}`, nil), []string{`"z"`, "[3 0]", "empty tensor"}, false},
		{"empty name", stFile(`{"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)), []string{`tensor ""`, "not a valid layout path"}, false},
		{"empty segment", stFile(`{"a..b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)), []string{`"a..b"`, "not a valid layout path"}, false},
		{"leading dot", stFile(`{".a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)), []string{`".a"`, "not a valid layout path"}, false},
		{"leaf and group", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a.b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, stF32(1, 2)),
			[]string{`"a.b"`, `"a" is a leaf`}, false},
		{"groups metadata not JSON", stFile(`{"__metadata__":{"flatkit.groups":"[{"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.groups"`}, false},
		{"group lacks field", stFile(`{"__metadata__":{"flatkit.groups":"[{\"path\":\"g\",\"lo\":0}]"},"g.a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.groups"`, "lacks"}, false},
		{"group range wrong", stFile(`{"__metadata__":{"flatkit.groups":"[{\"path\":\"g\",\"lo\":0,\"hi\":0}]"},"g.a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{"invalid layout", `"g.a"`, `"g"`}, false},
		{"group missing", stFile(`{"__metadata__":{"flatkit.frozen":"[]"},"g.a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{"invalid layout", `"g.a" has no group "g"`}, false},
		{"tie to nothing", stFile(`{"__metadata__":{"flatkit.ties":"{\"t\":\"zz\"}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.ties"`, `"t"`, `"zz"`}, false},
		{"tie onto a leaf", stFile(`{"__metadata__":{"flatkit.ties":"{\"a\":\"a\"}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"a"`, "already exists"}, false},
		{"tie twice", stFile(`{"__metadata__":{"flatkit.ties":"{\"t\":\"a\",\"t\":\"a\"}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.ties"`, `duplicate name "t"`}, false},
		{"ties not object", stFile(`{"__metadata__":{"flatkit.ties":"[]"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.ties"`, "want a JSON object"}, false},
		{"frozen unknown", stFile(`{"__metadata__":{"flatkit.frozen":"[\"b\"]"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.frozen"`, `"b"`, "not a tensor"}, false},
		{"frozen not array", stFile(`{"__metadata__":{"flatkit.frozen":"{}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, stF32(1)),
			[]string{`"flatkit.frozen"`}, false},
	}
}

func TestLoadBadInput(t *testing.T) {
	for _, tt := range stBadCases() {
		t.Run(tt.name, func(t *testing.T) {
			readers := map[string]io.Reader{
				"bytes.Reader": bytes.NewReader(tt.file),
				"plain reader": onlyReader{bytes.NewReader(tt.file)},
			}
			for rname, r := range readers {
				θ, lay, err := Load(r)
				if err == nil {
					t.Fatalf("%s: Load succeeded: %v, %v", rname, lay, θ)
				}
				if θ != nil || lay != nil {
					t.Errorf("%s: partial result with error", rname)
				}
				stWantErr(t, err, append([]string{"layout: Load: "}, tt.want...))
			}
			// The file variant, where the size comes from Stat.
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, tt.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadFile(path)
			stWantErr(t, err, append([]string{"layout: LoadFile: " + path + ": "}, tt.want...))
		})
	}
}

func TestLoadIntoBadInput(t *testing.T) {
	// No path of this layout occurs in the files: every tensor is skipped.
	lay := stBuild(t, func(b *Builder) { b.Add("zz", 2).Add("yy.x", 1) })
	for _, tt := range stBadCases() {
		t.Run(tt.name, func(t *testing.T) {
			θ := stValues(lay.Len())
			θ0 := slices.Clone(θ)
			rep, err := LoadInto(onlyReader{bytes.NewReader(tt.file)}, lay, θ)
			if !tt.into {
				// Only the skipped tensors are bad, and nothing matched.
				stWantErr(t, err, []string{"layout: LoadInto: ", "nothing loaded"})
				return
			}
			stWantErr(t, err, append([]string{"layout: LoadInto: "}, tt.want...))
			if !slices.Equal(stBits(θ0), stBits(θ)) {
				t.Errorf("θ changed on error")
			}
			if !cmp.Equal(rep, LoadReport{}) {
				t.Errorf("report on error: %+v", rep)
			}
		})
	}
}

// TestLoadAllocationBounded checks that what a header declares does not
// decide what Load allocates: only bytes actually present do.
func TestLoadAllocationBounded(t *testing.T) {
	files := map[string][]byte{
		"4 TB of data declared": stFile(`{"a":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}}`, stF32(1, 2)),
		"1 GB of data declared": stFile(`{"a":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}}`, stF32(1, 2)),
		"99 MB header declared": append(binary.LittleEndian.AppendUint64(nil, 99_000_000), `{"a":1}`...),
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := Load(onlyReader{bytes.NewReader(file)})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
				t.Errorf("Load allocated %d bytes for a %d-byte file (%v)", d, len(file), err)
			}
			lay := stBuild(t, func(b *Builder) { b.Add("a", 2) })
			runtime.ReadMemStats(&before)
			_, err = LoadInto(onlyReader{bytes.NewReader(file)}, lay, make([]float32, 2))
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("LoadInto succeeded")
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
				t.Errorf("LoadInto allocated %d bytes for a %d-byte file (%v)", d, len(file), err)
			}
		})
	}
}

// ---------------------------------------------------------------- files

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

// ---------------------------------------------------------------- properties

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
