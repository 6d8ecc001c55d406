package layout

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stSeeds are the seed corpus of both fuzz targets: files Save writes (with
// and without metadata), a reference-style and a PyTorch-style file, their
// truncations, and corrupt headers.
func stSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, lay := range stLayouts(f) {
		var buf bytes.Buffer
		if err := Save(&buf, lay, stValues(lay.Len())); err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, buf.Bytes())
	}
	ref := stFile(stPad(`{"__metadata__":{"format":"pt"},`+
		`"10.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},`+
		`"2.weight":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`), stF32(1, 2, 3))
	perm := stFile(`{"a.y":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},`+
		`"a.x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},`+
		`"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, stF32(1, 2, 3, 4, 5))
	torch := stTorchFile()
	seeds = append(seeds, ref, perm, torch)
	for _, s := range [][]byte{ref, torch, seeds[0]} {
		for _, n := range []int{0, 5, 8, 12, len(s) / 2, len(s) - 1} {
			if n < len(s) {
				seeds = append(seeds, slices.Clone(s[:n]))
			}
		}
	}
	for _, c := range stBadCases() {
		seeds = append(seeds, c.file)
	}
	// Headers with a length field that lies.
	long := slices.Clone(ref)
	binary.LittleEndian.PutUint64(long, 1<<40)
	short := slices.Clone(ref)
	binary.LittleEndian.PutUint64(short, 3)
	seeds = append(seeds, long, short, []byte(strings.Repeat("\xff", 16)))
	return seeds
}

// FuzzLoad: Load never panics; whatever it accepts, Save writes back so that
// Load gives the same bits and an Equal layout.
func FuzzLoad(f *testing.F) {
	for _, s := range stSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		θ, lay, err := Load(bytes.NewReader(file))
		if err != nil {
			if θ != nil || lay != nil {
				t.Fatalf("partial result with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "layout: Load: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if len(θ) != lay.Len() {
			t.Fatalf("Load gave %d floats for a layout of %d", len(θ), lay.Len())
		}
		var buf bytes.Buffer
		if err := Save(&buf, lay, θ); err != nil {
			t.Fatalf("Save of a loaded file: %v", err)
		}
		θ2, lay2, err := Load(onlyReader{bytes.NewReader(buf.Bytes())})
		if err != nil {
			t.Fatalf("Load of a saved file: %v\n%q", err, buf.Bytes())
		}
		if d := stLayoutDiff(lay2, lay); d != "" {
			t.Fatalf("layout changed:\n%s", d)
		}
		if d := cmp.Diff(stBits(θ), stBits(θ2)); d != "" {
			t.Fatalf("values changed (-first +second):\n%s", d)
		}
		// Save is deterministic: saving again gives the same bytes.
		var buf2 bytes.Buffer
		if err := Save(&buf2, lay2, θ2); err != nil || !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Fatalf("second Save differs (%v)", err)
		}
	})
}

// FuzzLoadInto: LoadInto never panics, leaves θ unchanged on error, and on
// success reports every storage leaf as loaded or missed.
func FuzzLoadInto(f *testing.F) {
	for _, s := range stSeeds(f) {
		f.Add(s, uint8(0), false)
		f.Add(s, uint8(1), false)
	}
	f.Add(stTorchFile(), uint8(2), true)
	lay := stBuild(f, func(b *Builder) {
		b.Add("0.weight", 2, 2).Add("0.bias", 2)
		b.Add("1.running_mean", 2)
		b.Add("a", 2).Add("10.weight", 2)
		b.Tie("head.weight", "0.weight")
	})
	f.Fuzz(func(t *testing.T, file []byte, mode uint8, strict bool) {
		var opts []LoadOption
		switch mode % 3 {
		case 1:
			opts = append(opts, Rename(stStripModel))
		case 2:
			opts = append(opts, Rename(func(n string) string {
				if strings.Contains(n, "num_batches") {
					return ""
				}
				return stStripModel(n)
			}))
		}
		if strict {
			opts = append(opts, Strict())
		}
		θ := stValues(lay.Len())
		θ0 := stBits(θ)
		rep, err := LoadInto(bytes.NewReader(file), lay, θ, opts...)
		if err != nil {
			if d := cmp.Diff(θ0, stBits(θ)); d != "" {
				t.Fatalf("θ changed on error %v (-before +after):\n%s", err, d)
			}
			if !strings.HasPrefix(err.Error(), "layout: LoadInto") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		all := append(slices.Clone(rep.Loaded), rep.Missed...)
		slices.Sort(all)
		var want []string
		for _, lf := range lay.Leaves() {
			want = append(want, lf.Path)
		}
		slices.Sort(want)
		if d := cmp.Diff(want, all); d != "" {
			t.Fatalf("Loaded ∪ Missed is not the leaves (-want +got):\n%s", d)
		}
		if !slices.IsSorted(rep.Loaded) || !slices.IsSorted(rep.Missed) ||
			!slices.IsSortedFunc(rep.Skipped, func(a, b Skipped) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("report not sorted: %+v", rep)
		}
		if strict && len(rep.Missed) > 0 {
			t.Fatalf("strict load missed %v", rep.Missed)
		}
		// Missed leaves keep their values.
		for _, p := range rep.Missed {
			lf, _ := lay.Find(p)
			if !slices.Equal(θ0[lf.Offset:lf.End()], stBits(θ[lf.Offset:lf.End()])) {
				t.Fatalf("missed leaf %q changed", p)
			}
		}
	})
}

// FuzzParseJSON: ParseJSON never panics; whatever it accepts, MarshalJSON
// writes back so that ParseJSON gives an Equal layout.
func FuzzParseJSON(f *testing.F) {
	for _, lay := range stLayouts(f) {
		b, err := lay.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, n := range []int{0, 1, len(b) / 2, len(b) - 1} {
			f.Add(slices.Clone(b[:n]))
		}
	}
	for _, s := range []string{
		`{"len":0,"leaves":[]}`,
		`{"len":4,"leaves":[{"path":"a","offset":0,"shape":[2,2]}]}`,
		`{"len":2,"leaves":[{"path":"g.a","offset":0,"shape":[1],"aliases":["t"]},{"path":"g.b","offset":1,"shape":[],"frozen":true}],"groups":[{"path":"g","lo":0,"hi":2}]}`,
		`{"len":-1,"leaves":[{"path":"a","offset":-5,"shape":[-1]}]}`,
		`{"len":1,"leaves":[{"path":"a","offset":0,"shape":[4294967296,4294967296,4294967296]}]}`,
		`{"len":1,"leaves":[{"path":"","offset":0,"shape":[1]},{"path":"a..b","offset":0,"shape":[1]}]}`,
		`{"len":1,"leaves":[{"path":"a","offset":0,"shape":[1]}],"groups":[{"path":"a","lo":0,"hi":1}]}`,
		`null`, `[]`, `{"leaves":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lay, err := ParseJSON(data)
		if err != nil {
			if lay != nil {
				t.Fatalf("a layout with the error %v", err)
			}
			return
		}
		b, err := lay.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of an accepted layout: %v", err)
		}
		back, err := ParseJSON(b)
		if err != nil {
			t.Fatalf("ParseJSON of MarshalJSON's %s: %v", b, err)
		}
		if !back.Equal(lay) {
			t.Fatalf("round trip changed the layout:\n%s\n%s", data, b)
		}
		var sum int
		for _, lf := range lay.Leaves() {
			sum += lf.Size()
		}
		if sum != lay.Len() {
			t.Fatalf("leaves hold %d floats, Len is %d", sum, lay.Len())
		}
	})
}
