package layout

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// User structs: Of, Destructure, Restructure and RestructureInPlace, and
// the walk that finds a struct's []float32 fields. The bindings that
// Restructure caches per type are in bind.go, the type plans in plan.go.

// Of returns the layout that Destructure would build for the struct p points
// to, without copying or changing anything.
func Of(p any) (*Layout, error) {
	var w walkState
	plan, _, err := w.walk(p)
	if err != nil {
		return nil, wrap("Of", err)
	}
	lay, _, err := w.layout()
	if err == nil {
		err = scalarsOnly(plan, lay)
	}
	if err != nil {
		return nil, wrap("Of", err)
	}
	return lay, nil
}

// Destructure copies the []float32 fields of the struct p points to into one
// new buffer θ and repoints each field at its range of θ, so that p and θ
// share memory from then on. It returns θ and its layout. Fields that share a
// backing array become one leaf with several paths (tied).
//
// Scalar fields (float32, float64) are hyperparameters and stay out of θ.
// A struct whose only float fields are scalars, such as
// struct{ Beta, Gamma float64 }, is an error naming them: θ would be empty.
// To fit a scalar, make it a []float32 of one element, tagged
// `flat:"shape=1"`.
func Destructure(p any) ([]float32, *Layout, error) {
	var w walkState
	plan, _, err := w.walk(p)
	if err != nil {
		return nil, nil, wrap("Destructure", err)
	}
	lay, owner, err := w.layout()
	if err == nil {
		err = scalarsOnly(plan, lay)
	}
	if err != nil {
		return nil, nil, wrap("Destructure", err)
	}
	θ := make([]float32, lay.n)
	for i, r := range w.refs {
		lf, _ := lay.Find(r.path)
		if owner[i] == i {
			copy(θ[lf.Offset:lf.End()], *r.slot)
		}
	}
	for _, r := range w.refs {
		lf, _ := lay.Find(r.path)
		end := lf.End()
		*r.slot = θ[lf.Offset:end:end]
	}
	return θ, lay, nil
}

// Restructure points every []float32 field of the struct p points to at its
// range of θ, without copying: afterwards writing through a field writes θ.
// The struct must have the shape lay describes (the same slice-of-struct
// lengths and non-nil pointers as when lay was made). In steady state it
// writes one slice header per leaf and allocates nothing: reflection runs
// once per struct type and layout.
func Restructure(θ []float32, lay *Layout, p any) error {
	b, base, err := lay.bind(θ, p)
	if err != nil {
		return wrap("Restructure", err)
	}
	c := cursor{}
	b.walk(b.plan, base, &c, modeView, θ)
	return nil
}

// RestructureInPlace copies θ into the existing []float32 arrays of the
// struct p points to, leaving every field's backing array where it was. Each
// field must already have its leaf's length. Nothing is written unless every
// field matches.
func RestructureInPlace(θ []float32, lay *Layout, p any) error {
	const op = "RestructureInPlace"
	b, base, err := lay.bind(θ, p)
	if err != nil {
		return wrap(op, err)
	}
	c := cursor{}
	if !b.walk(b.plan, base, &c, modeCheckLen, θ) || c.e != len(b.spans) {
		var w walkState
		if _, _, err := w.walk(p); err != nil {
			return wrap(op, err)
		}
		for i, r := range w.refs {
			if s := b.spans[i]; len(*r.slot) != s.hi-s.lo {
				return &PathError{Op: op, Path: r.path, Err: ErrShape,
					Got: fmt.Sprintf("the field has %d floats", len(*r.slot)), Want: fmt.Sprintf("%d (the layout's leaf)", s.hi-s.lo)}
			}
		}
	}
	c = cursor{}
	b.walk(b.plan, base, &c, modeCopy, θ)
	return nil
}

// scalarsOnly returns an error if lay is empty while the struct of plan has
// scalar float fields: the user meant them as parameters.
func scalarsOnly(plan *typePlan, lay *Layout) error {
	if lay.n > 0 || len(plan.scalars) == 0 {
		return nil
	}
	return fmt.Errorf("%s has no []float32 fields, so θ would be empty; its scalar fields %s are hyperparameters, left alone: to fit them, make them []float32 with `flat:\"shape=1\"`, or tag them `flat:\"-\"`",
		plan.t, strings.Join(plan.scalars, ", "))
}

// fieldRef is one []float32 field of a struct value, found by a walk.
type fieldRef struct {
	path   string
	slot   *[]float32
	shape  []int // from the tag, or nil
	frozen bool
}

// item is a group entered, with its path, or a float field met, with its
// index in refs.
type item struct {
	group string
	ref   int
}

// walkState collects the float fields of a value in walk order, with the
// dynamic facts that a binding must re-check: slice lengths, nil pointers.
type walkState struct {
	refs    []fieldRef
	dyn     []int
	order   []item // groups and leaves interleaved in walk order
	onStack map[unsafe.Pointer]bool
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// collect walks the value of plan p at base. Every pointer followed and every
// slice entered appends to dyn, which bounds a later fast walk of a cyclic
// value, so only this slow walk needs cycle detection.
func (w *walkState) collect(p *typePlan, base unsafe.Pointer, path string, frozen bool) error {
	for i := range p.fields {
		f := &p.fields[i]
		fp := join(path, f.name)
		at := unsafe.Add(base, f.offset)
		fz := frozen || f.frozen
		switch f.kind {
		case kindFloats:
			w.order = append(w.order, item{ref: len(w.refs)})
			w.refs = append(w.refs, fieldRef{path: fp, slot: (*[]float32)(at), shape: f.shape, frozen: fz})
		case kindStruct:
			w.order = append(w.order, item{group: fp})
			if err := w.collect(f.elem, at, fp, fz); err != nil {
				return err
			}
		case kindPtr:
			if err := w.collectPtr(f.elem, *(*unsafe.Pointer)(at), fp, fz); err != nil {
				return err
			}
		case kindSlice, kindArray:
			data, n := f.elems(at)
			if f.kind == kindSlice {
				w.dyn = append(w.dyn, n)
			}
			w.order = append(w.order, item{group: fp})
			for j := 0; j < n; j++ {
				ep := unsafe.Add(data, uintptr(j)*f.elemSize)
				ip := join(fp, strconv.Itoa(j))
				var err error
				if f.elemPtr {
					err = w.collectPtr(f.elem, *(*unsafe.Pointer)(ep), ip, fz)
				} else {
					w.order = append(w.order, item{group: ip})
					err = w.collect(f.elem, ep, ip, fz)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *walkState) collectPtr(p *typePlan, ptr unsafe.Pointer, path string, frozen bool) error {
	if ptr == nil {
		w.dyn = append(w.dyn, 0)
		return nil
	}
	w.dyn = append(w.dyn, 1)
	if w.onStack[ptr] {
		return fmt.Errorf("field %s points back to a struct that contains it; a cycle has no finite layout", path)
	}
	w.onStack[ptr] = true
	w.order = append(w.order, item{group: path})
	err := w.collect(p, ptr, path, frozen)
	delete(w.onStack, ptr)
	return err
}

// structOf checks that p is a non-nil pointer to a struct and returns its
// plan and address.
func structOf(p any) (*typePlan, unsafe.Pointer, error) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Type().Elem().Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("want a pointer to a struct, got %T", p)
	}
	if v.IsNil() {
		return nil, nil, fmt.Errorf("got a nil %T, want a pointer to a struct", p)
	}
	plan, err := planFor(v.Type().Elem())
	if err != nil {
		return nil, nil, err
	}
	return plan, v.UnsafePointer(), nil
}

func (w *walkState) walk(p any) (*typePlan, unsafe.Pointer, error) {
	plan, base, err := structOf(p)
	if err != nil {
		return nil, nil, err
	}
	w.onStack = map[unsafe.Pointer]bool{base: true}
	if err := w.collect(plan, base, "", false); err != nil {
		return nil, nil, err
	}
	return plan, base, nil
}

// layout builds the layout of the collected fields. Fields whose slices share
// one backing array become one leaf with aliases; partial overlaps are errors.
// It returns, for each ref, the index of the ref that owns its storage.
func (w *walkState) layout() (*Layout, []int, error) {
	b := NewBuilder()
	owner := make([]int, len(w.refs))
	type span struct {
		lo, hi uintptr
		ref    int
	}
	var spans []span
	first := map[unsafe.Pointer]int{}
	for _, it := range w.order {
		if it.group != "" {
			b.Group(it.group)
			continue
		}
		i, r := it.ref, w.refs[it.ref]
		s := *r.slot
		shape := r.shape
		switch {
		case shape == nil && len(s) == 0:
			return nil, nil, fmt.Errorf("field %s is an empty []float32: give it a length, a `flat:\"shape=…\"` tag, or tag it `flat:\"-\"`", r.path)
		case shape == nil:
			shape = []int{len(s)}
		case s != nil && len(s) != product(shape):
			return nil, nil, fmt.Errorf("field %s has %d floats, want %d (its tag says shape %v)", r.path, len(s), product(shape), shape)
		}
		owner[i] = i
		if len(s) > 0 {
			ptr := unsafe.Pointer(unsafe.SliceData(s))
			if j, ok := first[ptr]; ok && len(*w.refs[j].slot) == len(s) {
				if !slices.Equal(shapeOf(w.refs[j]), shape) {
					return nil, nil, fmt.Errorf("fields %s and %s share storage but have shapes %v and %v, want one shape", w.refs[j].path, r.path, shapeOf(w.refs[j]), shape)
				}
				owner[i] = j
				b.Tie(r.path, w.refs[j].path)
				if r.frozen {
					b.Freeze(r.path)
				}
				continue
			}
			first[ptr] = i
			lo := uintptr(ptr)
			spans = append(spans, span{lo, lo + uintptr(len(s))*4, i})
		}
		b.Add(r.path, shape...)
		if r.frozen {
			b.Freeze(r.path)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return nil, nil, fmt.Errorf("fields %s and %s overlap in memory without being the same slice; tie them by assigning one slice to both, or copy one", w.refs[spans[i-1].ref].path, w.refs[spans[i].ref].path)
		}
	}
	lay, err := b.build()
	if err != nil {
		return nil, nil, err
	}
	return lay, owner, nil
}

func shapeOf(r fieldRef) []int {
	if r.shape != nil {
		return r.shape
	}
	return []int{len(*r.slot)}
}

func product(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
