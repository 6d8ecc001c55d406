package layout

import (
	"fmt"
	"reflect"
	"slices"
	"unsafe"
)

// The binding of a struct type to a layout: what Restructure and Binder
// walk to repoint or fill a struct's fields.

// binding maps the float fields of one struct type, in walk order, to their
// ranges of a layout's buffer. dyn holds the slice lengths and pointer
// nil-ness the mapping was made for; a fast walk checks them before using it.
type binding struct {
	plan  *typePlan
	spans []span
	dyn   []int
}

type span struct{ lo, hi int }

type cursor struct{ e, d int }

type walkMode uint8

const (
	modeCheck    walkMode = iota // compare dyn only
	modeCheckLen                 // and check each field's length
	modeView                     // repoint each field into θ
	modeCopy                     // copy θ into each field
)

// bind returns the binding of p's type to l, checked against p's current
// shape, compiling a new one if the cached one does not fit.
func (l *Layout) bind(θ []float32, p any) (*binding, unsafe.Pointer, error) {
	if l == nil {
		return nil, nil, fmt.Errorf("nil layout")
	}
	if len(θ) != l.n {
		return nil, nil, fmt.Errorf("buffer has %d floats, layout wants %d", len(θ), l.n)
	}
	t := reflect.TypeOf(p)
	if c, ok := l.bindings.Load(t); ok {
		b := c.(*binding)
		base := reflect.ValueOf(p).UnsafePointer()
		cur := cursor{}
		if base != nil && b.walk(b.plan, base, &cur, modeCheck, nil) && cur.e == len(b.spans) && cur.d == len(b.dyn) {
			return b, base, nil
		}
	}
	b, base, err := l.compile(p)
	if err != nil {
		return nil, nil, err
	}
	l.bindings.Store(t, b)
	return b, base, nil
}

// compile walks p with paths and looks every field up in l.
func (l *Layout) compile(p any) (*binding, unsafe.Pointer, error) {
	var w walkState
	plan, base, err := w.walk(p)
	if err != nil {
		return nil, nil, err
	}
	b := &binding{plan: plan, spans: make([]span, len(w.refs)), dyn: w.dyn}
	covered := make([]bool, len(l.leaves))
	for i, r := range w.refs {
		li, ok := l.leafOf[r.path]
		if !ok {
			e := l.unknown(r.path)
			e.Got = fmt.Sprintf("a field of %T that the layout has no leaf for", p)
			return nil, nil, e
		}
		lf := &l.leaves[li]
		if r.shape != nil && !slices.Equal(r.shape, lf.Shape) {
			return nil, nil, &PathError{Path: r.path, Err: ErrShape,
				Got: fmt.Sprintf("the field's tag says %v", r.shape), Want: fmt.Sprintf("%v (the layout's leaf %q)", lf.Shape, lf.Path)}
		}
		covered[li] = true
		b.spans[i] = span{lf.Offset, lf.End()}
	}
	for i, c := range covered {
		if !c {
			return nil, nil, &PathError{Path: l.leaves[i].Path, Got: fmt.Sprintf("no field of %T holds the leaf", p),
				Want: "a field for every leaf (does the struct have the shape the layout was made from?)"}
		}
	}
	return b, base, nil
}

// walk visits the fields of the value of plan p at base in the same order as
// walkState.collect. It returns false as soon as the value's dynamic shape
// departs from b.dyn (or, in modeCheckLen, a field's length from its span).
// The write modes run only after a check walk has passed.
func (b *binding) walk(p *typePlan, base unsafe.Pointer, c *cursor, mode walkMode, θ []float32) bool {
	for i := range p.fields {
		f := &p.fields[i]
		at := unsafe.Add(base, f.offset)
		switch f.kind {
		case kindFloats:
			if c.e >= len(b.spans) {
				return false
			}
			s := b.spans[c.e]
			c.e++
			slot := (*[]float32)(at)
			switch mode {
			case modeCheckLen:
				if len(*slot) != s.hi-s.lo {
					return false
				}
			case modeView:
				*slot = θ[s.lo:s.hi:s.hi]
			case modeCopy:
				copy(*slot, θ[s.lo:s.hi])
			}
		case kindStruct:
			if !b.walk(f.elem, at, c, mode, θ) {
				return false
			}
		case kindPtr:
			if !b.walkPtr(f.elem, *(*unsafe.Pointer)(at), c, mode, θ) {
				return false
			}
		case kindSlice, kindArray:
			data, n := f.elems(at)
			if f.kind == kindSlice {
				if c.d >= len(b.dyn) || b.dyn[c.d] != n {
					return false
				}
				c.d++
			}
			for j := 0; j < n; j++ {
				ep := unsafe.Add(data, uintptr(j)*f.elemSize)
				var ok bool
				if f.elemPtr {
					ok = b.walkPtr(f.elem, *(*unsafe.Pointer)(ep), c, mode, θ)
				} else {
					ok = b.walk(f.elem, ep, c, mode, θ)
				}
				if !ok {
					return false
				}
			}
		}
	}
	return true
}

func (b *binding) walkPtr(p *typePlan, ptr unsafe.Pointer, c *cursor, mode walkMode, θ []float32) bool {
	if c.d >= len(b.dyn) {
		return false
	}
	want := b.dyn[c.d]
	c.d++
	if ptr == nil {
		return want == 0
	}
	return want == 1 && b.walk(p, ptr, c, mode, θ)
}
