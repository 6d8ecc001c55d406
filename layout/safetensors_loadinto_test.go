package layout

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
				stWantErr(t, err, append([]string{"layout: LoadInto"}, tt.want...))
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
