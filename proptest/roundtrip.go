package proptest

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/flatkit/flatkit/layout"
)

// field is a []float32 field found by this package's own walk of a struct,
// written with reflect.Value independently of the layout package, so the
// checks below compare two implementations of the path rules.
type field struct {
	path    string
	v       reflect.Value // the settable []float32
	shape   []int         // from the tag, or nil
	frozen  bool
	skipped bool // tagged "-": must be left alone
}

func fieldsOf(v reflect.Value, path string, frozen bool, out *[]field) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		p := sf.Name
		if path != "" {
			p = path + "." + sf.Name
		}
		tag := sf.Tag.Get("flat")
		fz := frozen || strings.Contains(tag, "frozen")
		fv := v.Field(i)
		switch {
		case sf.Type == float32sType:
			f := field{path: p, v: fv, frozen: fz, skipped: tag == "-"}
			if strings.HasPrefix(tag, "shape=") {
				f.shape = parseShapeTag(`flat:"` + strings.TrimSuffix(tag, ",frozen") + `"`)
			}
			*out = append(*out, f)
		case tag == "-":
		case sf.Type.Kind() == reflect.Struct:
			fieldsOf(fv, p, fz, out)
		case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct:
			if !fv.IsNil() {
				fieldsOf(fv.Elem(), p, fz, out)
			}
		case (sf.Type.Kind() == reflect.Slice || sf.Type.Kind() == reflect.Array) && elemIsStruct(sf.Type):
			for j := 0; j < fv.Len(); j++ {
				e := fv.Index(j)
				if e.Kind() == reflect.Pointer {
					if e.IsNil() {
						continue
					}
					e = e.Elem()
				}
				fieldsOf(e, p+"."+strconv.Itoa(j), fz, out)
			}
		}
	}
}

func elemIsStruct(t reflect.Type) bool {
	e := t.Elem()
	if e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}

func dataPtr(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

func floats(v reflect.Value) []float32 { return v.Interface().([]float32) }

// CheckRoundTrip checks flatkit's round trips on the struct p points to, which
// must destructure without error:
//
//   - Destructure copies every []float32 field into θ at the leaf of its path,
//     with the tag's shape, and leaves the field viewing θ;
//   - fields that shared a backing array share one leaf, and only those;
//     frozen tags mark leaves; fields tagged "-" are untouched;
//   - writing through a view of θ is seen by the field;
//   - Restructure onto a second buffer makes every field a view of it;
//   - RestructureInPlace from a third buffer copies its values into those
//     same arrays without moving them;
//   - Save then Load gives the same layout and the same bits, and so do the
//     layout's JSON description and layout.Of.
func CheckRoundTrip(t T, p any) {
	t.Helper()
	var fs []field
	fieldsOf(reflect.ValueOf(p).Elem(), "", false, &fs)
	type orig struct {
		vals []float32
		ptr  unsafe.Pointer
	}
	before := make([]orig, len(fs))
	for i, f := range fs {
		s := floats(f.v)
		before[i] = orig{slices.Clone(s), dataPtr(s)}
	}

	θ, lay, err := layout.Destructure(p)
	if err != nil {
		t.Fatalf("Destructure: %v", err)
	}
	if got := len(θ); got != lay.Len() {
		t.Fatalf("Destructure: len(θ) = %d, layout Len = %d", got, lay.Len())
	}
	leafOf := make([]layout.Leaf, len(fs))
	covered := map[int]bool{}
	for i, f := range fs {
		s := floats(f.v)
		if f.skipped {
			if dataPtr(s) != before[i].ptr || !bitsEqual(s, before[i].vals) {
				t.Errorf("field %s tagged flat:\"-\" was changed", f.path)
			}
			if _, ok := lay.Find(f.path); ok {
				t.Errorf("field %s tagged flat:\"-\" has a leaf", f.path)
			}
			continue
		}
		lf, ok := lay.Find(f.path)
		if !ok {
			t.Fatalf("field %s has no leaf in\n%v", f.path, lay)
		}
		leafOf[i] = lf
		covered[lf.Offset] = true
		wantShape := f.shape
		if wantShape == nil {
			wantShape = []int{len(before[i].vals)}
		}
		if !slices.Equal(lf.Shape, wantShape) {
			t.Errorf("field %s: leaf shape %v, want %v", f.path, lf.Shape, wantShape)
		}
		view := lay.MustView(θ, f.path)
		want := before[i].vals
		if want == nil {
			want = make([]float32, lf.Size()) // a nil shaped field starts at zero
		}
		if !bitsEqual(view.Data, want) {
			t.Errorf("field %s: θ holds %v, the field held %v", f.path, view.Data, want)
		}
		if len(s) != lf.Size() || dataPtr(s) != unsafe.Pointer(&θ[lf.Offset]) {
			t.Errorf("field %s does not view θ[%d:%d] after Destructure", f.path, lf.Offset, lf.End())
		}
	}
	for _, lf := range lay.Leaves() {
		if !covered[lf.Offset] {
			t.Errorf("leaf %s matches no field", lf.Path)
		}
	}
	// Ties: the same backing array before ⇔ the same leaf after.
	for i := range fs {
		for j := i + 1; j < len(fs); j++ {
			if fs[i].skipped || fs[j].skipped {
				continue
			}
			sameBefore := before[i].ptr != nil && before[i].ptr == before[j].ptr
			sameLeaf := leafOf[i].Offset == leafOf[j].Offset
			if sameBefore != sameLeaf {
				t.Errorf("fields %s and %s: shared storage before %v, share a leaf after %v", fs[i].path, fs[j].path, sameBefore, sameLeaf)
			}
		}
	}
	frozen := map[int]bool{}
	for i, f := range fs {
		if !f.skipped && f.frozen {
			frozen[leafOf[i].Offset] = true
		}
	}
	for _, lf := range lay.Leaves() {
		if lf.Frozen != frozen[lf.Offset] {
			t.Errorf("leaf %s: Frozen = %v, the tags say %v", lf.Path, lf.Frozen, frozen[lf.Offset])
		}
	}
	// Views alias the buffer in both directions.
	for i, f := range fs {
		if f.skipped {
			continue
		}
		off := leafOf[i].Offset
		old := θ[off]
		θ[off] = 1234.5
		if got := floats(f.v)[0]; got != 1234.5 {
			t.Errorf("field %s does not see a write to θ[%d]", f.path, off)
		}
		θ[off] = old
	}

	θ2 := make([]float32, len(θ))
	for i := range θ2 {
		θ2[i] = -float32(i) - 0.25
	}
	if err := layout.Restructure(θ2, lay, p); err != nil {
		t.Fatalf("Restructure: %v", err)
	}
	checkViews(t, fs, leafOf, θ2, "Restructure")

	θ3 := make([]float32, len(θ))
	for i := range θ3 {
		θ3[i] = float32(i) + 0.5
	}
	if err := layout.RestructureInPlace(θ3, lay, p); err != nil {
		t.Fatalf("RestructureInPlace: %v", err)
	}
	checkViews(t, fs, leafOf, θ2, "RestructureInPlace") // still θ2's arrays
	if !bitsEqual(θ2, θ3) {
		t.Errorf("RestructureInPlace: the fields' arrays hold %v, want %v", θ2, θ3)
	}

	CheckSaveLoad(t, lay, θ3)
	js, err := json.Marshal(lay)
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	if back, err := layout.ParseJSON(js); err != nil || !back.Equal(lay) {
		t.Errorf("JSON round trip: err %v, equal %v\n%s", err, err == nil && back.Equal(lay), js)
	}
	if again, err := layout.Of(p); err != nil || !again.Equal(lay) {
		t.Errorf("layout.Of after the round trips: err %v; want the layout Destructure made", err)
	}
}

func checkViews(t T, fs []field, leafOf []layout.Leaf, θ []float32, op string) {
	t.Helper()
	for i, f := range fs {
		if f.skipped {
			continue
		}
		lf := leafOf[i]
		s := floats(f.v)
		if len(s) != lf.Size() || cap(s) != lf.Size() || dataPtr(s) != unsafe.Pointer(&θ[lf.Offset]) {
			t.Errorf("%s: field %s (len %d, cap %d) does not view θ[%d:%d]", op, f.path, len(s), cap(s), lf.Offset, lf.End())
		}
	}
}

// CheckSaveLoad checks that Save then Load reproduces lay exactly and θ bit
// for bit.
func CheckSaveLoad(t T, lay *layout.Layout, θ []float32) {
	t.Helper()
	var buf bytes.Buffer
	if err := layout.Save(&buf, lay, θ); err != nil {
		t.Fatalf("Save: %v", err)
	}
	θ2, lay2, err := layout.Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("Load of a file Save wrote: %v", err)
	}
	if !lay2.Equal(lay) {
		t.Errorf("Load: layout differs\n got %v\nwant %v", lay2, lay)
	}
	if !bitsEqual(θ2, θ) {
		t.Errorf("Load: θ differs bitwise\n got %v\nwant %v", θ2, θ)
	}
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
