package proptest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/layout"
)

// Structs draws pointers to values of random struct types made at run time
// with reflect.StructOf. The types mix []float32 fields, nested structs,
// pointers to structs, some nil, and slices and arrays of structs and of
// pointers. Some []float32 fields have shape tags, some are frozen, some
// are tagged "-". The types also hold hyperparameters that must be left
// alone: ints, strings, float64s, maps, funcs and []string. Some []float32
// fields share one backing array, which Destructure must turn into a tied
// leaf. Every drawn value destructures: a struct with no parameters whose
// float64 hyperparameters Destructure would take for mistaken parameters
// is not drawn.
func Structs() *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		g := &structGen{t: t}
		typ := g.structType(0)
		v := reflect.New(typ)
		g.fill(v.Elem(), 0)
		return v.Interface()
	}).Filter(func(v any) bool {
		_, err := layout.Of(v)
		return err == nil || !strings.Contains(err.Error(), "has no []float32 fields")
	})
}

type structGen struct {
	t      *rapid.T
	shared [][]float32 // untagged slices already made, candidates for ties
	seq    int
}

type fieldSpec int

const (
	fsFloats fieldSpec = iota
	fsShaped
	fsFrozen
	fsTieable
	fsSkipped
	fsStruct
	fsPtr
	fsSlice
	fsArray
	fsPtrSlice
	fsInt
	fsString
	fsFloat64
	fsMap
	fsFunc
	fsStrings
	numFieldSpecs
)

var (
	float32sType = reflect.TypeFor[[]float32]()
	hyperTypes   = map[fieldSpec]reflect.Type{
		fsInt:     reflect.TypeFor[int](),
		fsString:  reflect.TypeFor[string](),
		fsFloat64: reflect.TypeFor[float64](),
		fsMap:     reflect.TypeFor[map[string]int](),
		fsFunc:    reflect.TypeFor[func(float64) float64](),
		fsStrings: reflect.TypeFor[[]string](),
	}
)

func (g *structGen) structType(depth int) reflect.Type {
	n := rapid.IntRange(0, 6).Draw(g.t, "fields")
	var fields []reflect.StructField
	for i := 0; i < n; i++ {
		spec := fieldSpec(rapid.IntRange(0, int(numFieldSpecs)-1).Draw(g.t, "kind"))
		if depth >= 2 && spec >= fsStruct && spec <= fsPtrSlice {
			spec = fsFloats
		}
		f := reflect.StructField{Name: "F" + strconv.Itoa(i) + specLetter[spec], Type: float32sType}
		switch spec {
		case fsShaped:
			shape := rapid.SliceOfN(rapid.IntRange(1, 4), 1, 3).Draw(g.t, "tagShape")
			f.Tag = reflect.StructTag(`flat:"shape=` + joinInts(shape) + `"`)
		case fsFrozen:
			f.Tag = `flat:"frozen"`
		case fsSkipped:
			f.Tag = `flat:"-"`
		case fsStruct:
			f.Type = g.structType(depth + 1)
		case fsPtr:
			f.Type = reflect.PointerTo(g.structType(depth + 1))
		case fsSlice:
			f.Type = reflect.SliceOf(g.structType(depth + 1))
		case fsArray:
			f.Type = reflect.ArrayOf(rapid.IntRange(1, 2).Draw(g.t, "arrayLen"), g.structType(depth+1))
		case fsPtrSlice:
			f.Type = reflect.SliceOf(reflect.PointerTo(g.structType(depth + 1)))
		default:
			if ht, ok := hyperTypes[spec]; ok {
				f.Type = ht
			}
		}
		fields = append(fields, f)
	}
	return reflect.StructOf(fields)
}

// specLetter makes the field's kind visible in its name, so a failing path
// such as "F2s.1.F0t" says what it went through.
var specLetter = map[fieldSpec]string{
	fsFloats: "f", fsShaped: "h", fsFrozen: "z", fsTieable: "t", fsSkipped: "x",
	fsStruct: "s", fsPtr: "p", fsSlice: "l", fsArray: "a", fsPtrSlice: "q",
	fsInt: "i", fsString: "g", fsFloat64: "d", fsMap: "m", fsFunc: "c", fsStrings: "n",
}

func (g *structGen) floats(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		g.seq++
		s[i] = float32(g.seq) / 8
	}
	return s
}

func (g *structGen) fill(v reflect.Value, depth int) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		letter := f.Name[len(f.Name)-1:]
		switch {
		case f.Type == float32sType && strings.HasPrefix(string(f.Tag), `flat:"shape=`):
			n := 1
			for _, d := range parseShapeTag(string(f.Tag)) {
				n *= d
			}
			if rapid.Bool().Draw(g.t, "nilShaped") {
				break // a nil field with a shape tag gets fresh storage
			}
			fv.Set(reflect.ValueOf(g.floats(n)))
		case f.Type == float32sType && letter == specLetter[fsTieable] && len(g.shared) > 0 && rapid.Bool().Draw(g.t, "tie"):
			fv.Set(reflect.ValueOf(rapid.SampledFrom(g.shared).Draw(g.t, "tieTo")))
		case f.Type == float32sType:
			s := g.floats(rapid.IntRange(1, 6).Draw(g.t, "len"))
			if letter == specLetter[fsFloats] || letter == specLetter[fsTieable] {
				g.shared = append(g.shared, s)
			}
			fv.Set(reflect.ValueOf(s))
		case f.Type.Kind() == reflect.Struct:
			g.fill(fv, depth+1)
		case f.Type.Kind() == reflect.Pointer:
			if rapid.IntRange(0, 3).Draw(g.t, "nilPtr") == 0 {
				break
			}
			fv.Set(reflect.New(f.Type.Elem()))
			g.fill(fv.Elem(), depth+1)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() != reflect.String:
			n := rapid.IntRange(0, 3).Draw(g.t, "sliceLen")
			fv.Set(reflect.MakeSlice(f.Type, n, n))
			g.fillElems(fv, depth)
		case f.Type.Kind() == reflect.Array:
			g.fillElems(fv, depth)
		case f.Type.Kind() == reflect.Int:
			fv.SetInt(int64(rapid.IntRange(-3, 3).Draw(g.t, "int")))
		case f.Type.Kind() == reflect.String:
			fv.SetString("hyper")
		case f.Type.Kind() == reflect.Map:
			fv.Set(reflect.ValueOf(map[string]int{"k": 1}))
		case f.Type.Kind() == reflect.Func:
			fv.Set(reflect.ValueOf(func(x float64) float64 { return 2 * x }))
		}
	}
}

func (g *structGen) fillElems(v reflect.Value, depth int) {
	for j := 0; j < v.Len(); j++ {
		e := v.Index(j)
		if e.Kind() == reflect.Pointer {
			if rapid.IntRange(0, 3).Draw(g.t, "nilElem") == 0 {
				continue
			}
			e.Set(reflect.New(e.Type().Elem()))
			e = e.Elem()
		}
		g.fill(e, depth+1)
	}
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseShapeTag(tag string) []int {
	body := strings.TrimSuffix(strings.TrimPrefix(tag, `flat:"shape=`), `"`)
	var shape []int
	for _, p := range strings.Split(body, ",") {
		d, err := strconv.Atoi(p)
		if err != nil {
			panic(fmt.Sprintf("proptest: bad shape tag %q", tag))
		}
		shape = append(shape, d)
	}
	return shape
}
