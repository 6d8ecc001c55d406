package layout

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
		{"null shape", stFile(ent(`{"dtype":"F32","shape":null,"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is null, want an array of integers`}, true},
		{"dtype not string", stFile(ent(`{"dtype":5,"shape":[2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"dtype" is 5, want a string such as "F32"`}, true},
		{"shape not array", stFile(ent(`{"dtype":"F32","shape":"2","data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is "2", want an array of integers`}, true},
		{"fractional dim", stFile(ent(`{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape" is [1.5]`}, true},
		{"offsets strings", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}`), stF32(1, 2)), []string{`"a"`, `"data_offsets"`, "want an array [begin, end] of integers"}, true},
		{"one offset", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[8]}`), stF32(1, 2)), []string{`"a"`, "1 values, want 2"}, true},
		{"negative dim", stFile(ent(`{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "is -2, want >= 0"}, true},
		{"dim overflows int64", stFile(ent(`{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `"shape"`}, true},
		{"dims product overflows", stFile(ent(`{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "more elements"}, true},
		{"bytes overflow", stFile(ent(`{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, "more bytes"}, true},
		{"negative offset", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}`), stF32(1, 2)), []string{`"a"`, "negative, want >= 0"}, true},
		{"begin after end", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[8,0]}`), stF32(1, 2)), []string{`"a"`, "[8, 0]", "end before", "want begin <= end"}, true},
		{"size disagrees with shape", stFile(ent(`{"dtype":"F32","shape":[2],"data_offsets":[0,4]}`), stF32(1)), []string{`"a"`, "hold 4 bytes", "needs 8"}, true},
		{"sub-byte size", stFile(ent(`{"dtype":"F4","shape":[3],"data_offsets":[0,2]}`), []byte{0, 0}), []string{`"a"`, "12 bits"}, true},
		{"unknown dtype", stFile(ent(`{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}`), stF32(1, 2)), []string{`"a"`, `unknown dtype "Q7", want one of BF16, BOOL,`, "F32"}, true},
		{"hole", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, stF32(1, 2, 3)),
			[]string{`"b"`, "start at 8, want 4"}, true},
		{"hole at start", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, stF32(1, 2)), []string{`"a"`, "start at 4, want 0"}, true},
		{"overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, stF32(1, 2, 3)),
			[]string{`"b"`, `overlap tensor "a"`, "ends at 8, want a start at 8"}, true},
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
