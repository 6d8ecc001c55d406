package layout

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// A typePlan says where the float32 leaves of a struct type are: which fields
// hold []float32, and which lead to nested structs. It is built once per type
// by reflection and cached; walking a value with it needs only unsafe
// offsets, so Restructure allocates nothing.
type typePlan struct {
	t       reflect.Type
	fields  []planField
	live    bool     // the type holds float leaves somewhere below it
	scalars []string // the names of its float32 and float64 fields, hyperparameters
}

type fieldKind uint8

const (
	kindNone   fieldKind = iota // a hyperparameter: left alone
	kindFloats                  // []float32
	kindStruct                  // struct value
	kindPtr                     // *struct
	kindSlice                   // []struct or []*struct
	kindArray                   // [N]struct or [N]*struct
)

type planField struct {
	kind     fieldKind
	name     string
	offset   uintptr
	shape    []int // from a shape= tag; nil means "from the slice's length"
	frozen   bool
	elem     *typePlan // the struct type below a struct, pointer, slice or array field
	elemPtr  bool      // slice or array elements are pointers to structs
	elemSize uintptr
	arrayLen int
}

// sliceHeader mirrors the runtime layout of a Go slice, so that slices of a
// struct type known only at run time can be walked without reflect.Value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// elems returns where the elements of the slice or array field at at
// start, and how many there are: the array itself, or the slice's backing
// array. Bind's walk and the layout's collect both step through them.
func (f *planField) elems(at unsafe.Pointer) (data unsafe.Pointer, n int) {
	if f.kind == kindSlice {
		h := (*sliceHeader)(at)
		return h.data, h.len
	}
	return at, f.arrayLen
}

var (
	plans   sync.Map // reflect.Type → *typePlan, complete plans only
	buildMu sync.Mutex
)

// planFor returns the plan of struct type t, building and caching it (and
// those of the struct types it reaches) on first use.
func planFor(t reflect.Type) (*typePlan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan), nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan), nil
	}
	building := map[reflect.Type]*typePlan{}
	p, err := buildPlan(t, building)
	if err != nil {
		return nil, err
	}
	// Liveness is a fixpoint over possibly recursive types: a type is live if
	// it has a float field or a field leading to a live type.
	for changed := true; changed; {
		changed = false
		for _, bp := range building {
			if bp.live {
				continue
			}
			for _, f := range bp.fields {
				if f.kind == kindFloats || f.elem.live {
					bp.live, changed = true, true
					break
				}
			}
		}
	}
	for _, bp := range building {
		kept := bp.fields[:0]
		for _, f := range bp.fields {
			if f.kind == kindFloats || f.elem.live {
				kept = append(kept, f)
			}
		}
		bp.fields = kept
	}
	for bt, bp := range building {
		plans.Store(bt, bp)
	}
	return p, nil
}

func buildPlan(t reflect.Type, building map[reflect.Type]*typePlan) (*typePlan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan), nil
	}
	if p, ok := building[t]; ok {
		return p, nil
	}
	p := &typePlan{t: t}
	building[t] = p
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, hasTag := sf.Tag.Lookup("flat")
		if tag == "-" {
			continue
		}
		opts, err := parseTag(tag)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", t, sf.Name, err)
		}
		f := planField{name: sf.Name, offset: sf.Offset, shape: opts.shape, frozen: opts.frozen}
		ft := sf.Type
		bad := func(why string) error {
			return fmt.Errorf("field %s.%s has type %s: %s, or tag it `flat:\"-\"` to leave it alone", t, sf.Name, ft, why)
		}
		switch {
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			p.scalars = append(p.scalars, sf.Name) // a hyperparameter, unless the struct has no parameters
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Float32:
			if ft.Elem() != reflect.TypeFor[float32]() {
				return nil, bad("use []float32")
			}
			f.kind = kindFloats
		case ft.Kind() == reflect.Array && isNumeric(ft.Elem().Kind()):
			if ft.Elem().Kind() != reflect.Float32 {
				break // a fixed array of ints or float64s is a hyperparameter
			}
			return nil, bad(fmt.Sprintf("use []float32 (with `flat:\"shape=%d\"`) so it can view the buffer", ft.Len()))
		case ft.Kind() == reflect.Slice && isNumeric(ft.Elem().Kind()):
			return nil, bad("parameters are []float32")
		case (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) &&
			(ft.Elem().Kind() == reflect.Slice || ft.Elem().Kind() == reflect.Array) && isNumeric(elemBase(ft.Elem()).Kind()):
			return nil, bad("nested numeric slices cannot view one buffer; use a slice of structs with []float32 fields")
		case ft.Kind() == reflect.Struct:
			f.kind = kindStruct
			if f.elem, err = buildPlan(ft, building); err != nil {
				return nil, err
			}
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			f.kind = kindPtr
			if f.elem, err = buildPlan(ft.Elem(), building); err != nil {
				return nil, err
			}
		case ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array:
			et := ft.Elem()
			f.elemSize = et.Size()
			if et.Kind() == reflect.Pointer {
				f.elemPtr = true
				et = et.Elem()
			}
			if et.Kind() != reflect.Struct {
				break // []string and friends are hyperparameters
			}
			f.kind = kindSlice
			if ft.Kind() == reflect.Array {
				f.kind, f.arrayLen = kindArray, ft.Len()
			}
			if f.elem, err = buildPlan(et, building); err != nil {
				return nil, err
			}
		}
		if f.kind != kindNone {
			if f.shape != nil && f.kind != kindFloats {
				return nil, fmt.Errorf("field %s.%s: a shape tag needs a []float32 field, not %s", t, sf.Name, ft)
			}
			p.fields = append(p.fields, f)
		} else if hasTag && tag != "" {
			return nil, fmt.Errorf("field %s.%s has tag `flat:%q` but type %s holds no parameters", t, sf.Name, tag, ft)
		}
	}
	return p, nil
}

func elemBase(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func isNumeric(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	// []byte and []uint8 are left out on purpose: they are data, not numbers to fit.
	return false
}

type tagOpts struct {
	shape  []int
	frozen bool
}

// parseTag reads `flat:"shape=3,4"`, `flat:"frozen"` or both, in any order
// ("shape=3,4,frozen").
func parseTag(tag string) (tagOpts, error) {
	var o tagOpts
	if tag == "" {
		return o, nil
	}
	inShape := false
	for _, tok := range strings.Split(tag, ",") {
		tok = strings.TrimSpace(tok)
		switch {
		case tok == "frozen":
			o.frozen, inShape = true, false
		case strings.HasPrefix(tok, "shape="):
			if o.shape != nil {
				return o, fmt.Errorf("tag %q gives shape twice", tag)
			}
			inShape = true
			o.shape = []int{}
			tok = strings.TrimPrefix(tok, "shape=")
			fallthrough
		case inShape:
			d, err := strconv.Atoi(tok)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("tag %q: dimension %q is not a positive integer", tag, tok)
			}
			o.shape = append(o.shape, d)
		default:
			return o, fmt.Errorf("tag %q: unknown option %q (want shape=…, frozen or -)", tag, tok)
		}
	}
	return o, nil
}
